#include "transport.hpp"

#include <poll.h>

#include <algorithm>

namespace logpb::verbs {

Transport::Transport(Device& dev, const Address& peer, const TransportOptions& opt, std::function<bool()> peer_alive)
    : dev_(dev),
      peer_alive_(std::move(peer_alive)),
      peer_(peer),
      sq_depth_(static_cast<std::uint64_t>(dev.options().sq_depth)),
      signal_every_(static_cast<std::uint64_t>(std::clamp(opt.signal_every, 1, dev.options().sq_depth / 2))),
      max_inline_(dev.max_inline()),
      recv_batch_(dev.recv_batch()),
      cq_batch_(std::clamp(opt.cq_batch, 1, 32)),
      segment_bytes_(std::min(dev.options().segment_bytes, peer.segment_bytes)),
      own_segment_bytes_(dev.options().segment_bytes),
      // One packet: the path MTU, no more than the peer's receive slot or our tx slot holds.
      medium_max_(dev.ah() ? 0
                           : std::min({dev.path_mtu_bytes(), peer.recv_slot_bytes, dev.tx_slot_bytes()}) -
                                 static_cast<std::uint32_t>(sizeof(am::Frame))),
      header_slots_(dev.header_slots()),
      ah_(dev.ah()),
      slot_bytes_(dev.recv_slot_bytes()),
      frame_offset_(dev.recv_frame_offset()),
      tx_slot_bytes_(dev.tx_slot_bytes()),
      repost_(512),
      op_of_wr_(sq_depth_),
      get_wr_(sq_depth_),
      get_frames_(sq_depth_) {
  // Every receive slot is posted before the QP goes to RTR, so nothing the peer sends finds us empty.
  const int rq = dev.options().rq_depth;
  for (int i = 0; i < rq; ++i) {
    repost_[repost_n_++] = static_cast<std::uint32_t>(i);
    if (repost_n_ == 512 || i == rq - 1) repost();
  }
}

void Transport::repost() {
  ibv_sge sge[512];
  ibv_recv_wr wr[512];
  for (int i = 0; i < repost_n_; ++i) {
    sge[i] = {reinterpret_cast<std::uint64_t>(dev_.recv_buffers() + repost_[i] * slot_bytes_), slot_bytes_,
              dev_.recv_lkey()};
    wr[i] = {};
    wr[i].wr_id = repost_[i];
    wr[i].sg_list = &sge[i];
    wr[i].num_sge = 1;
    wr[i].next = i + 1 < repost_n_ ? &wr[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (int r = ibv_post_recv(dev_.qp(), wr, &bad))
    throw PeerError(std::string("ibv_post_recv failed: ") + std::strerror(r) + " (the QP is in error: the peer is gone?)");
  ++counters_.reposts;
  repost_n_ = 0;
}

bool Transport::try_bulk(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  if (ah_) throw UsageError("bulk transfers need RDMA WRITE/READ, which a UD QP cannot do: run without --ud");
  if (remote_off > peer_.segment_bytes || n > peer_.segment_bytes - remote_off || n > segment_bytes_) return false;
  if (!sq_room(2)) return false;
  // The data must sit in registered memory: in place when it is already in our segment, else staged.
  // (One staging buffer: a caller with several stores of outside memory in flight must keep them in the
  // segment; the methods store from the segment.)
  const auto* s = static_cast<const std::byte*>(src);
  std::uint64_t addr;
  std::uint32_t lkey;
  if (in_segment(s, n)) {
    addr = reinterpret_cast<std::uint64_t>(s);
    lkey = dev_.segment_lkey();
  } else {
    std::memcpy(dev_.staging(), s, n);
    addr = reinterpret_cast<std::uint64_t>(dev_.staging());
    lkey = dev_.staging_lkey();
  }
  // The peer's ring has as many slots as it has receives; max_credits and the window keep fewer stores
  // than that unread, so a slot is never overwritten before the peer has taken its header.
  const std::uint32_t slot = next_header_++ % peer_.header_slots;

  ibv_sge hs{};
  ibv_send_wr hw{};
  frame_sge(f, hs, hw);
  hw.opcode = IBV_WR_RDMA_WRITE;
  hw.wr.rdma.remote_addr = peer_.headers_addr + slot * 64;
  hw.wr.rdma.rkey = peer_.headers_rkey;
  number(hw, false);

  ibv_sge ds{addr, n, lkey};
  ibv_send_wr dw{};
  dw.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  dw.sg_list = &ds;
  dw.num_sge = 1;
  dw.imm_data = htonl((static_cast<std::uint32_t>(f.handler) << 16) | slot);
  dw.wr.rdma.remote_addr = peer_.segment_addr + remote_off;
  dw.wr.rdma.rkey = peer_.segment_rkey;
  number(dw, true);
  hw.next = &dw;  // one post, one doorbell, for both
  post(hw);
  ++counters_.stores;
  counters_.store_bytes += n;
  return true;
}

bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  if (ah_) throw UsageError("bulk transfers need RDMA WRITE/READ, which a UD QP cannot do: run without --ud");
  if (!peer_.remote_read)
    throw UsageError("the peer registered its segment without remote read: this run may not get from it");
  if (remote_off > peer_.segment_bytes || n > peer_.segment_bytes - remote_off || local_off > segment_bytes_ ||
      n > segment_bytes_ - local_off)
    return false;
  // The ring of undelivered gets is as deep as the send queue.
  if (gets_posted_ - gets_delivered_ + 1 >= sq_depth_ || !sq_room(1)) return false;
  ibv_sge sge{reinterpret_cast<std::uint64_t>(dev_.segment() + local_off), n, dev_.segment_lkey()};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_READ;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = peer_.segment_addr + remote_off;
  wr.wr.rdma.rkey = peer_.segment_rkey;
  number(wr, false, true);  // not a send operation; signaled, since its completion runs the reply
  const std::uint64_t k = gets_posted_ % sq_depth_;
  get_wr_[k] = posted_;
  get_frames_[k] = f;
  post(wr);
  ++gets_posted_;
  ++counters_.gets;
  counters_.get_bytes += n;
  return true;
}

// In the peer's receive queue, beside our one-way requests, there may be: our requests (the window), our
// replies to its requests (its window: the server takes the client's), one credit frame answering its
// own one-way requests, and the receives it has consumed but not yet re-posted (up to a batch: the one
// being handled and those waiting for the chained re-post). One receive short means RNR, retries on
// the wire and a stall in the figures, so the bound is exact, not generous. Bulk stores also hold one of
// the peer's header slots each until it reads the header.
int Transport::max_credits(int window) const {
  const long posted = static_cast<long>(peer_.rq_depth) - static_cast<long>(peer_.recv_batch);
  const long by_receives = posted - 2L * window - 1;
  const long by_headers = static_cast<long>(peer_.header_slots) - 2L * window;
  const long c = std::min(by_receives, by_headers);
  if (c < 2)
    throw UsageError("verbs: the peer's receive queue (--rq-depth " + std::to_string(peer_.rq_depth) +
                     ", re-posted in batches of --recv-batch " + std::to_string(peer_.recv_batch) +
                     ") leaves room for " + std::to_string(std::max(0L, c)) +
                     " one-way requests beside twice --window " + std::to_string(window) +
                     " and a credit frame; at least 2 are needed: raise --rq-depth or lower --window/--recv-batch");
  return static_cast<int>(std::min<long>(c, 1 << 30));
}

// Event mode: sleep on the completion channel until a completion comes (or kSleepMs passes, so the AM
// layer's watchdog keeps running). Called by the AM layer only after a poll found nothing.
//  1. Arm the receive CQ, and the send CQ when a get, a tracked send or a full send queue is waited for.
//  2. A CQ armed just now raises no event for a completion queued before the arm: poll again. What the
//     receive CQ gives is kept for the next poll(); the send CQ's progress is recorded by reap_sends.
//  3. Only then block, and take (and acknowledge) an event; it disarms its CQ.
// A CQ still armed from an earlier sleep needs no re-poll: anything queued since that arm has raised an
// event, and the channel fd is readable.
void Transport::sleep_for_completion() {
  constexpr int kSleepMs = 2;
  bool armed_now = false;
  if (!recv_armed_) {
    if (int r = ibv_req_notify_cq(dev_.recv_cq(), 0)) fail_arm(r, "receive");
    recv_armed_ = armed_now = true;
  }
  const bool want_send = gets_posted_ != gets_delivered_ || tracked_ > ops_done_ || sq_blocked_;
  if (want_send && !send_armed_) {
    if (int r = ibv_req_notify_cq(dev_.send_cq(), 0)) fail_arm(r, "send");
    send_armed_ = armed_now = true;
  }
  if (armed_now) {
    if (stash_n_ == 0) {
      const int n = ibv_poll_cq(dev_.recv_cq(), cq_batch_, stash_);
      if (n < 0) throw PeerError("ibv_poll_cq(recv) failed: the device or its context is gone");
      if (n > 0) {
        stash_n_ = n;
        return;
      }
    } else {
      return;
    }
    if (want_send) {
      const std::uint64_t before = completed_;
      reap_sends();
      if (completed_ != before) return;
    }
  }
  pollfd p{dev_.channel()->fd, POLLIN, 0};
  ++counters_.sleeps;
  const int r = ::poll(&p, 1, kSleepMs);
  if (r <= 0) {
    if (r == 0) ++counters_.sleep_timeouts;
    return;
  }
  // One event per wakeup: a second one (the other CQ) keeps the fd readable, and the next idle_wait
  // takes it without sleeping; reading until EAGAIN would cost every wakeup one more system call.
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(dev_.channel(), &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    ++counters_.cq_events;
    (cq == dev_.recv_cq() ? recv_armed_ : send_armed_) = false;
  }
}

void Transport::fail_arm(int err, const char* which) {
  throw PeerError(std::string("ibv_req_notify_cq(") + which + ") failed: " + std::strerror(err) +
                  " (the device or its context is gone)");
}

void Transport::completion_error(const ibv_wc& wc, const char* what) {
  std::string advice;
  switch (wc.status) {
    case IBV_WC_RETRY_EXC_ERR:
      advice = "the peer stopped answering: it died, or GID index / network path is wrong";
      break;
    case IBV_WC_RNR_RETRY_EXC_ERR: advice = "the peer had no receive posted"; break;
    case IBV_WC_REM_ACCESS_ERR: advice = "remote access refused: rkey or the peer's MR access rights"; break;
    case IBV_WC_LOC_LEN_ERR: advice = "a message longer than the receive buffer"; break;
    case IBV_WC_WR_FLUSH_ERR: advice = "the QP went to the error state: the peer is gone or an earlier request failed"; break;
    default: advice = "see the status";
  }
  throw PeerError(std::string(what) + " completion failed: " + ibv_wc_status_str(wc.status) + " (vendor error " +
                  std::to_string(wc.vendor_err) + "): " + advice);
}

nlohmann::json Transport::describe() const {
  nlohmann::json j = dev_.describe();
  j["signal_every"] = signal_every_;
  j["cq_batch"] = cq_batch_;
  j["send_inline"] = max_inline_ >= sizeof(am::Frame);
  j["medium_max_bytes"] = medium_max_;
  j["store_switch_bytes"] = medium_max_ + 1;  // the first size that takes the bulk protocol
  j["medium_store"] = "one SEND: the 64-byte frame and the payload (inline up to max_inline, else from "
                      "registered memory); the receiver copies the payload into its segment";
  j["medium_inline_max_bytes"] = max_inline_ > sizeof(am::Frame) ? max_inline_ - sizeof(am::Frame) : 0;
  j["bulk_store"] = "RDMA WRITE (header slot) + RDMA WRITE WITH IMM (data), one chained post";
  j["bulk_get"] = "RDMA READ";
  j["local_completion"] = "the send CQE of the operation's last WR, or of any later WR (in-order completion)";
  j["one_way_room"] = {{"peer_rq_depth", peer_.rq_depth},
                       {"peer_recv_batch", peer_.recv_batch},
                       {"peer_header_slots", peer_.header_slots},
                       {"rule", "credits <= min(peer rq_depth - recv_batch - 2 window - 1, header_slots - 2 window)"}};
  const auto& c = counters_;
  j["counters"] = {{"sends", c.sends}, {"signaled", c.signaled}, {"sq_full", c.sq_full}, {"recvs", c.recvs},
                   {"stores", c.stores}, {"store_bytes", c.store_bytes}, {"medium_stores", c.medium_stores},
                   {"medium_bytes", c.medium_bytes}, {"gets", c.gets}, {"get_bytes", c.get_bytes},
                   {"reposts", c.reposts}, {"ops_posted", ops_posted_}, {"ops_completed", ops_done_},
                   {"cq_events", c.cq_events}, {"sleeps", c.sleeps}, {"sleep_timeouts", c.sleep_timeouts},
                   {"bad_imm", c.bad_imm}, {"bad_medium", c.bad_medium}};
  return j;
}

}  // namespace logpb::verbs
