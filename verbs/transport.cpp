#include "verbs/transport.hpp"

#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace logpb::verbs {

Transport::Transport(std::unique_ptr<Context> ctx, std::vector<Address> peers, const TransportOptions& opt,
                     std::function<bool()> peer_alive)
    : ctx_(std::move(ctx)),
      peer_alive_(std::move(peer_alive)),
      send_cq_(ctx_->send_cq()),
      recv_cq_(ctx_->recv_cq()),
      sq_depth_(static_cast<std::uint64_t>(ctx_->options().sq_depth)),
      signal_every_(static_cast<std::uint64_t>(std::clamp(opt.signal_every, 1, ctx_->options().sq_depth / 2))),
      max_inline_(ctx_->max_inline()),
      recv_batch_(ctx_->recv_batch()),
      cq_batch_(std::clamp(opt.cq_batch, 1, 32)),
      segment_bytes_(ctx_->options().segment_bytes),
      own_segment_bytes_(ctx_->options().segment_bytes),
      header_slots_(ctx_->header_slots()),
      slot_bytes_(ctx_->recv_slot_bytes()),
      frame_offset_(ctx_->recv_frame_offset()),
      tx_slot_bytes_(ctx_->tx_slot_bytes()),
      tx_lkey_(ctx_->tx_lkey()),
      segment_lkey_(ctx_->segment_lkey()),
      get_wr_(sq_depth_),
      get_rank_(sq_depth_),
      get_frames_(sq_depth_) {
  const Context& cx = *ctx_;
  if (peers.size() != static_cast<std::size_t>(cx.size()))
    throw std::logic_error("verbs::Transport: one address per rank expected");
  if (cx.size() > (1 << 16)) throw UsageError("verbs: more than 65536 ranks");
  conns_.resize(static_cast<std::size_t>(cx.size()));
  for (int r = 0; r < cx.size(); ++r) {
    if (r == cx.rank()) continue;
    Conn& c = conns_[static_cast<std::size_t>(r)];
    c.qp = cx.qp(r);
    c.ah = cx.ah(r);
    c.rank = static_cast<std::uint32_t>(r);
    c.peer = peers[static_cast<std::size_t>(r)];
    c.ops_at_wr.assign(sq_depth_, 0);
    c.op_number.assign(sq_depth_, 0);
    c.segment_bytes = c.peer.segment_bytes;
    // One packet: the path MTU, no more than the peer's receive slot or our tx slot holds.
    c.medium_max = c.ah ? 0
                        : std::min({cx.path_mtu_bytes(r), c.peer.recv_slot_bytes, cx.tx_slot_bytes()}) -
                              static_cast<std::uint32_t>(sizeof(am::Frame));
    c.tx_buf = cx.tx_buffers(r);
    c.recv_buf = cx.recv_buffers(r);
    c.headers = cx.headers(r);
    c.repost.assign(512, 0);
    build_wrs(c);
    segment_bytes_ = std::min(segment_bytes_, c.peer.segment_bytes);
    peer_ranks_.push_back(c.rank);
  }
  multi_ = peer_ranks_.size() > 1;
  if (const char* f = std::getenv("LOGPB_VERBS_FAULT")) parse_fault(f);
  // Every receive slot of every QP is posted before anything is sent to it (the caller says "ready"
  // after this), so nothing a peer sends finds us empty.
  const int rq = cx.options().rq_depth;
  for (const std::uint32_t r : peer_ranks_) {
    Conn& c = conns_[r];
    for (int i = 0; i < rq; ++i) {
      c.repost[static_cast<std::size_t>(c.repost_n++)] = static_cast<std::uint32_t>(i);
      if (c.repost_n == 512 || i == rq - 1) repost(c);
    }
  }
}

// The WRs every post patches, and one receive WR per slot (wr_id: peer rank << 32 | slot).
void Transport::build_wrs(Conn& c) {
  send_inline_ = max_inline_ >= sizeof(am::Frame);
  c.send_sge = {0, static_cast<std::uint32_t>(sizeof(am::Frame)), send_inline_ ? 0 : tx_lkey_};
  c.send_wr = {};
  c.send_wr.opcode = IBV_WR_SEND;
  c.send_wr.sg_list = &c.send_sge;
  c.send_wr.num_sge = 1;
  if (c.ah) {  // UD (small AMs only): every send names the peer
    c.send_wr.wr.ud.ah = c.ah;
    c.send_wr.wr.ud.remote_qpn = c.peer.qpn;
    c.send_wr.wr.ud.remote_qkey = Context::kUdQkey;
  }
  c.medium_wr = {};
  c.medium_wr.opcode = IBV_WR_SEND;
  c.medium_wr.sg_list = c.medium_sge;
  const auto rq = static_cast<std::size_t>(ctx_->options().rq_depth);
  c.recv_sge.assign(rq, ibv_sge{});
  c.recv_wr.assign(rq, ibv_recv_wr{});
  const std::uint64_t tag = static_cast<std::uint64_t>(c.rank) << 32;
  for (std::size_t i = 0; i < rq; ++i) {
    c.recv_sge[i] = {reinterpret_cast<std::uint64_t>(c.recv_buf + i * slot_bytes_), slot_bytes_, ctx_->recv_lkey()};
    c.recv_wr[i].wr_id = tag | i;
    c.recv_wr[i].sg_list = &c.recv_sge[i];
    c.recv_wr[i].num_sge = 1;
  }
}

// Re-posts the consumed slots, in the order consumed, as one chain of their pre-built WRs.
void Transport::repost(Conn& c) {
  ibv_recv_wr* first = &c.recv_wr[c.repost[0]];
  ibv_recv_wr* w = first;
  for (int i = 1; i < c.repost_n; ++i) {
    ibv_recv_wr* next = &c.recv_wr[c.repost[static_cast<std::size_t>(i)]];
    w->next = next;
    w = next;
  }
  w->next = nullptr;
  ibv_recv_wr* bad = nullptr;
  if (int r = ibv_post_recv(c.qp, first, &bad))
    throw PeerError(std::string("ibv_post_recv (QP of rank ") + std::to_string(c.rank) + ") failed: " +
                    std::strerror(r) + " (the QP is in state " + qp_state_of(c) + ": that peer is gone?)");
  ++counters_.reposts;
  c.repost_n = 0;
}

std::string Transport::qp_state_of(const Conn& c) const {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  if (ibv_query_qp(c.qp, &a, IBV_QP_STATE, &ia)) return "unknown (ibv_query_qp failed)";
  switch (a.qp_state) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "state " + std::to_string(static_cast<int>(a.qp_state));
  }
}

// LOGPB_VERBS_FAULT="qp-error-after=N[,rank=R]": refused loudly when malformed (a test that meant a
// fault must not run without one).
void Transport::parse_fault(const std::string& spec) {
  std::uint64_t after = 0;
  int rank = 0;
  std::size_t pos = 0;
  bool have_after = false;
  try {
    while (pos <= spec.size()) {
      const std::size_t end = std::min(spec.find(',', pos), spec.size());
      const std::string item = spec.substr(pos, end - pos);
      const std::size_t eq = item.find('=');
      const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
      std::size_t used = 0;
      if (key == "qp-error-after") {
        after = std::stoull(val, &used);
        have_after = used == val.size() && after > 0;
      } else if (key == "rank") {
        rank = std::stoi(val, &used);
        if (used != val.size() || rank < 0) throw std::invalid_argument(val);
      } else {
        throw std::invalid_argument(key);
      }
      pos = end + 1;
    }
  } catch (const std::logic_error&) {
    have_after = false;
  }
  if (!have_after) throw UsageError("LOGPB_VERBS_FAULT='" + spec + "': expected qp-error-after=N (N > 0)[,rank=R]");
  fault_ = {{"spec", spec}, {"qp_error_after_ops", after}, {"rank", rank}};
  if (rank == ctx_->rank()) fault_after_ = after;
}

// The fault hook: this QP to the error state, as a failing NI or a fatal async event would leave it. Its
// outstanding and later WRs then complete with IBV_WC_WR_FLUSH_ERR (and the peer's to it go unanswered).
void Transport::inject_qp_error(Conn& c) {
  fault_after_ = ~0ull;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  if (int r = ibv_modify_qp(c.qp, &a, IBV_QP_STATE))
    throw std::runtime_error(std::string("fault hook: ibv_modify_qp(IBV_QPS_ERR) failed: ") + std::strerror(r));
  fault_["injected_at_op"] = ops_posted_;
  fault_["qp_of_rank"] = c.rank;
  std::fprintf(stderr,
               "logpbench: fault hook (LOGPB_VERBS_FAULT): rank %d forced its QP %u (to rank %u) to IBV_QPS_ERR "
               "after send operation %llu\n",
               ctx_->rank(), c.qp->qp_num, c.rank, static_cast<unsigned long long>(ops_posted_));
}

void Transport::bad_dst(std::uint16_t dst) const {
  throw std::logic_error("verbs: a frame for rank " + std::to_string(dst) + ", which is not a peer of rank " +
                         std::to_string(ctx_->rank()) + " in a job of " + std::to_string(ctx_->size()));
}

void Transport::post_failed(const Conn& c, int err) const {
  throw PeerError(std::string("ibv_post_send (QP of rank ") + std::to_string(c.rank) + ") failed: " +
                  std::strerror(err) + " (the QP is in state " + qp_state_of(c) + ", not RTS: that peer is gone?)");
}

// A QP whose newest WRs went unsignaled never reports them; while completions are waited for, one signaled
// 8-byte RDMA WRITE into the scratch slot behind the header ring the peer keeps for us reports them all
// (in-order completion). Once per unsignaled tail: the next call finds it signaled.
void Transport::flush_tails() {
  for (const std::uint32_t r : peer_ranks_) {
    Conn& c = conns_[r];
    if (c.ops_done == c.ops_posted || c.signaled == c.posted) continue;
    if (!sq_room(c, 1)) continue;
    static const std::uint64_t zero = 0;
    ibv_sge sge{};
    ibv_send_wr wr{};
    if (max_inline_ >= sizeof zero) {
      sge.addr = reinterpret_cast<std::uint64_t>(&zero);
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = tx_slot(c);
      std::memset(slot, 0, sizeof zero);
      sge.addr = reinterpret_cast<std::uint64_t>(slot);
      sge.lkey = tx_lkey_;
    }
    sge.length = sizeof zero;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr =
        c.peer.headers_addr + static_cast<std::uint64_t>(c.peer.header_slots) * Context::kHeaderBytes;
    wr.wr.rdma.rkey = c.peer.headers_rkey;
    number(c, wr, false, true);
    post(c, wr, 1);
    ++counters_.flushes;
  }
}

bool Transport::try_bulk(Conn& c, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  if (c.ah) throw UsageError("bulk transfers need RDMA WRITE/READ, which a UD QP cannot do: run without --ud");
  if (remote_off > c.segment_bytes || n > c.segment_bytes - remote_off || n > own_segment_bytes_) return false;
  if (!sq_room(c, 2)) return false;
  // The data must sit in registered memory: in place when it is already in our segment, else staged.
  // (One staging buffer: a caller with several stores of outside memory in flight must keep them in the
  // segment; the methods store from the segment.)
  const auto* s = static_cast<const std::byte*>(src);
  std::uint64_t addr;
  std::uint32_t lkey;
  if (in_segment(s, n)) {
    addr = reinterpret_cast<std::uint64_t>(s);
    lkey = segment_lkey_;
  } else {
    std::memcpy(ctx_->staging(), s, n);
    addr = reinterpret_cast<std::uint64_t>(ctx_->staging());
    lkey = ctx_->staging_lkey();
  }
  // The peer's ring for us has as many slots as its QP for us has receives; max_credits and the window
  // keep fewer of our stores than that unread, so a slot is never overwritten before the peer took it.
  const std::uint32_t slot = c.next_header++ % c.peer.header_slots;

  ibv_sge hs{};
  ibv_send_wr hw{};
  frame_sge(c, f, hs, hw);
  hw.opcode = IBV_WR_RDMA_WRITE;
  hw.wr.rdma.remote_addr = c.peer.headers_addr + slot * Context::kHeaderBytes;
  hw.wr.rdma.rkey = c.peer.headers_rkey;
  number(c, hw, false);

  ibv_sge ds{addr, n, lkey};
  ibv_send_wr dw{};
  dw.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  dw.sg_list = &ds;
  dw.num_sge = 1;
  dw.imm_data = htonl((static_cast<std::uint32_t>(f.handler) << 16) | slot);
  dw.wr.rdma.remote_addr = c.peer.segment_addr + remote_off;
  dw.wr.rdma.rkey = c.peer.segment_rkey;
  number(c, dw, true);
  hw.next = &dw;  // one post, one doorbell, for both
  post(c, hw, 2);
  ++counters_.stores;
  counters_.store_bytes += n;
  return true;
}

bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  Conn& c = conn(f.src);  // a get reads rank f.src's segment
  if (c.ah) throw UsageError("bulk transfers need RDMA WRITE/READ, which a UD QP cannot do: run without --ud");
  if (!c.peer.remote_read)
    throw UsageError("rank " + std::to_string(c.rank) +
                     " registered its segment without remote read: this run may not get from it");
  if (remote_off > c.segment_bytes || n > c.segment_bytes - remote_off || local_off > own_segment_bytes_ ||
      n > own_segment_bytes_ - local_off)
    return false;
  // The ring of undelivered gets (all peers) is as deep as one send queue.
  if (gets_posted_ - gets_delivered_ + 1 >= sq_depth_ || !sq_room(c, 1)) return false;
  ibv_sge sge{reinterpret_cast<std::uint64_t>(ctx_->segment() + local_off), n, segment_lkey_};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_READ;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = c.peer.segment_addr + remote_off;
  wr.wr.rdma.rkey = c.peer.segment_rkey;
  number(c, wr, false, true);  // not a send operation; signaled, since its completion runs the reply
  const std::uint64_t k = gets_posted_ % sq_depth_;
  get_wr_[k] = c.posted;
  get_rank_[k] = c.rank;
  get_frames_[k] = f;
  post(c, wr, 1);
  ++gets_posted_;
  ++counters_.gets;
  counters_.get_bytes += n;
  return true;
}

// In the receive queue a peer keeps for us (its own, for our QP alone: context.hpp), beside our one-way
// requests, there may be: our requests (the window), our replies to its requests (its window), one
// credit frame answering its own one-way requests, and the receives it has consumed but not yet
// re-posted (up to a batch: the one being handled and those waiting for the chained re-post). One
// receive short means RNR, retries on the wire and a stall in the figures, so the bound is exact, not
// generous. Bulk stores also hold one of the header slots it keeps for us each until it reads the
// header. Other peers use other queues and rings, so the bound holds with every peer flooding at once;
// the smallest over the peers is returned (the AM layer gives every peer the same credits).
int Transport::max_credits(int window) const {
  long c = 1L << 30;
  const Address* tightest = nullptr;
  for (const std::uint32_t r : peer_ranks_) {
    const Address& p = conns_[r].peer;
    const long posted = static_cast<long>(p.rq_depth) - static_cast<long>(p.recv_batch);
    const long by_receives = posted - 2L * window - 1;
    const long by_headers = static_cast<long>(p.header_slots) - 2L * window;
    if (!tightest || std::min(by_receives, by_headers) < c) {
      c = std::min(by_receives, by_headers);
      tightest = &p;
    }
  }
  if (c < 2)
    throw UsageError("verbs: the peer's receive queue (--rq-depth " + std::to_string(tightest->rq_depth) +
                     ", re-posted in batches of --recv-batch " + std::to_string(tightest->recv_batch) +
                     ") leaves room for " + std::to_string(std::max(0L, c)) +
                     " one-way requests beside twice --window " + std::to_string(window) +
                     " and a credit frame; at least 2 are needed: raise --rq-depth or lower --window/--recv-batch");
  return static_cast<int>(c);
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
    if (int r = ibv_req_notify_cq(recv_cq_, 0)) fail_arm(r, "receive");
    recv_armed_ = armed_now = true;
  }
  const bool want_send =
      gets_posted_ != gets_delivered_ || tracked_ > ops_done_ || sq_blocked_ || (multi_ && ops_done_ != ops_posted_);
  if (want_send && !send_armed_) {
    if (int r = ibv_req_notify_cq(send_cq_, 0)) fail_arm(r, "send");
    send_armed_ = armed_now = true;
  }
  if (armed_now) {
    if (stash_n_ == 0) {
      const int n = ibv_poll_cq(recv_cq_, cq_batch_, stash_);
      if (n < 0) throw PeerError("ibv_poll_cq(recv) failed: the device or its context is gone");
      if (n > 0) {
        stash_n_ = n;
        return;
      }
    } else {
      return;
    }
    if (want_send) {
      const std::uint64_t before = sends_reaped_;
      reap_sends();
      if (sends_reaped_ != before) return;
    }
  }
  pollfd p{ctx_->channel()->fd, POLLIN, 0};
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
  if (ibv_get_cq_event(ctx_->channel(), &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    ++counters_.cq_events;
    (cq == recv_cq_ ? recv_armed_ : send_armed_) = false;
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
    case IBV_WC_RNR_RETRY_EXC_ERR:
      advice = "the peer had no receive posted";
      break;
    case IBV_WC_REM_ACCESS_ERR:
      advice = "remote access refused: rkey or the peer's MR access rights";
      break;
    case IBV_WC_LOC_LEN_ERR:
      advice = "a message longer than the receive buffer";
      break;
    case IBV_WC_WR_FLUSH_ERR:
      advice = "the QP went to the error state: the peer is gone or an earlier request failed";
      break;
    default:
      advice = "see the status";
  }
  // Which QP: a send's wr_id holds the rank above bit 48, a receive's above bit 32 (both below 2^16).
  const std::uint64_t rank = wc.wr_id >> (std::string_view(what) == "send" ? kWrIdShift : 32);
  std::string qp = "QP " + std::to_string(wc.qp_num);
  if (rank < conns_.size() && conns_[rank].qp) {
    const Conn& c = conns_[rank];
    qp = "QP " + std::to_string(c.qp->qp_num) + " (to rank " + std::to_string(rank) + ", now in state " +
         qp_state_of(c) + ")";
  }
  throw PeerError(std::string(what) + " completion failed on " + qp + ": " + ibv_wc_status_str(wc.status) +
                  " (vendor error " + std::to_string(wc.vendor_err) + "): " + advice);
}

nlohmann::json Transport::describe() const {
  nlohmann::json j = ctx_->describe();
  std::uint32_t medium_max = ~0u;
  for (const std::uint32_t r : peer_ranks_) medium_max = std::min(medium_max, conns_[r].medium_max);
  const Address& p = conns_[peer_ranks_.front()].peer;  // the job's ranks run one configuration
  j["rank"] = ctx_->rank();
  j["ranks"] = ctx_->size();
  j["signal_every"] = signal_every_;
  j["cq_batch"] = cq_batch_;
  j["send_inline"] = max_inline_ >= sizeof(am::Frame);
  j["medium_max_bytes"] = medium_max;
  j["store_switch_bytes"] = medium_max + 1;  // the first size that takes the bulk protocol
  j["medium_store"] =
      "one SEND: the 64-byte frame and the payload (inline up to max_inline, else from "
      "registered memory); the receiver copies the payload into its segment";
  j["medium_inline_max_bytes"] = max_inline_ > sizeof(am::Frame) ? max_inline_ - sizeof(am::Frame) : 0;
  j["bulk_store"] = "RDMA WRITE (header slot) + RDMA WRITE WITH IMM (data), one chained post";
  j["bulk_get"] = "RDMA READ";
  j["local_completion"] =
      "the send CQE of the operation's last WR, or of any later WR on its QP (in-order "
      "completion); numbered across peers, complete up to every QP's oldest incomplete one";
  j["one_way_room"] = {{"peer_rq_depth", p.rq_depth},
                       {"peer_recv_batch", p.recv_batch},
                       {"peer_header_slots", p.header_slots},
                       {"rule",
                        "credits <= min over peers of min(peer rq_depth - recv_batch - 2 window - 1, "
                        "header_slots - 2 window): each peer's own receive queue and header ring"}};
  const auto& c = counters_;
  j["counters"] = {{"sends", c.sends},
                   {"signaled", c.signaled},
                   {"sq_full", c.sq_full},
                   {"recvs", c.recvs},
                   {"stores", c.stores},
                   {"store_bytes", c.store_bytes},
                   {"medium_stores", c.medium_stores},
                   {"medium_bytes", c.medium_bytes},
                   {"gets", c.gets},
                   {"get_bytes", c.get_bytes},
                   {"reposts", c.reposts},
                   {"ops_posted", ops_posted_},
                   {"ops_completed", ops_done_},
                   {"cq_events", c.cq_events},
                   {"sleeps", c.sleeps},
                   {"sleep_timeouts", c.sleep_timeouts},
                   {"bad_imm", c.bad_imm},
                   {"bad_medium", c.bad_medium},
                   {"bad_src", c.bad_src},
                   {"flushes", c.flushes}};
  nlohmann::json per = nlohmann::json::array();
  for (const std::uint32_t r : peer_ranks_) {
    const Conn& q = conns_[r];
    per.push_back({{"rank", r},
                   {"qpn", q.qp->qp_num},
                   {"wrs_posted", q.posted},
                   {"wrs_completed", q.completed},
                   {"ops_posted", q.ops_posted},
                   {"ops_completed", q.ops_done},
                   {"recvs", q.recvs}});
  }
  j["per_peer"] = per;
  if (!fault_.is_null()) j["fault"] = fault_;
  return j;
}

}  // namespace logpb::verbs
