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
      recv_batch_(std::clamp(opt.recv_batch, 1, std::min(512, dev.options().rq_depth / 2))),
      cq_batch_(std::clamp(opt.cq_batch, 1, 32)),
      events_(dev.options().events),
      segment_bytes_(std::min(dev.options().segment_bytes, peer.segment_bytes)),
      ah_(dev.ah()),
      slot_bytes_(dev.recv_slot_bytes()),
      frame_offset_(dev.recv_frame_offset()),
      get_frames_(static_cast<std::size_t>(dev.options().sq_depth)) {
  // Every receive slot is posted before the QP goes to RTR, so nothing the peer sends finds us empty.
  const int rq = dev.options().rq_depth;
  for (int i = 0; i < rq; ++i) {
    repost_[repost_n_++] = static_cast<std::uint32_t>(i);
    if (repost_n_ == 512 || i == rq - 1) repost();
  }
  if (events_ && ibv_req_notify_cq(dev_.recv_cq(), 0) != 0) throw std::runtime_error("ibv_req_notify_cq failed");
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

bool Transport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  if (ah_) throw UsageError("bulk transfers need RDMA WRITE/READ, which a UD QP cannot do: run without --ud");
  if (remote_off > peer_.segment_bytes || n > peer_.segment_bytes - remote_off || n > segment_bytes_) return false;
  if (!sq_room(2)) return false;
  // The data must sit in registered memory: in place when it is already in our segment, else staged.
  const auto* s = static_cast<const std::byte*>(src);
  std::uint64_t addr;
  std::uint32_t lkey;
  if (s >= dev_.segment() && s + n <= dev_.segment() + segment_bytes_) {
    addr = reinterpret_cast<std::uint64_t>(s);
    lkey = dev_.segment_lkey();
  } else {
    std::memcpy(dev_.staging(), s, n);
    addr = reinterpret_cast<std::uint64_t>(dev_.staging());
    lkey = dev_.staging_lkey();
  }
  const std::uint32_t slot = next_header_++ % Device::kHeaderSlots;

  ibv_sge hs{};
  ibv_send_wr hw{};
  frame_sge(f, hs, hw);
  hw.opcode = IBV_WR_RDMA_WRITE;
  hw.wr.rdma.remote_addr = peer_.headers_addr + slot * 64;
  hw.wr.rdma.rkey = peer_.headers_rkey;
  post(hw);

  ibv_sge ds{addr, n, lkey};
  ibv_send_wr dw{};
  dw.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  dw.sg_list = &ds;
  dw.num_sge = 1;
  dw.imm_data = htonl((static_cast<std::uint32_t>(f.handler) << 16) | slot);
  dw.wr.rdma.remote_addr = peer_.segment_addr + remote_off;
  dw.wr.rdma.rkey = peer_.segment_rkey;
  post(dw);
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
  if (!sq_room(1)) return false;
  get_frames_[(posted_ + 1) % sq_depth_] = f;  // post() numbers this WR posted_ + 1
  ibv_sge sge{reinterpret_cast<std::uint64_t>(dev_.segment() + local_off), n, dev_.segment_lkey()};
  ibv_send_wr wr{};
  wr.wr_id = kGetTag;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = peer_.segment_addr + remote_off;
  wr.wr.rdma.rkey = peer_.segment_rkey;
  ++gets_pending_;
  post(wr);
  ++counters_.gets;
  counters_.get_bytes += n;
  return true;
}

// Event mode: sleep in the completion channel instead of spinning (at most 1 ms, so the AM layer's
// watchdog keeps running).
void Transport::wait_event() {
  pollfd p{dev_.channel()->fd, POLLIN, 0};
  if (::poll(&p, 1, 1) <= 0) return;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(dev_.channel(), &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    ++counters_.cq_events;
    ibv_req_notify_cq(cq, 0);
  }
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
  j["recv_batch"] = recv_batch_;
  j["cq_batch"] = cq_batch_;
  j["send_inline"] = max_inline_ >= sizeof(am::Frame);
  j["bulk_store"] = "RDMA WRITE (header slot) + RDMA WRITE WITH IMM (data)";
  j["bulk_get"] = "RDMA READ";
  const auto& c = counters_;
  j["counters"] = {{"sends", c.sends}, {"signaled", c.signaled}, {"sq_full", c.sq_full}, {"recvs", c.recvs},
                   {"stores", c.stores}, {"store_bytes", c.store_bytes}, {"gets", c.gets}, {"get_bytes", c.get_bytes},
                   {"reposts", c.reposts}, {"cq_events", c.cq_events}, {"bad_imm", c.bad_imm}};
  return j;
}

}  // namespace logpb::verbs
