// The libfabric datapath's cold parts: buffers, posting receives, stores that take several operations,
// gets, error reports and describe().
#include "ofi/transport.hpp"

#include <sched.h>

#include <algorithm>
#include <stdexcept>

#include "common/errors.hpp"

namespace logpb::ofi {

std::string call_failed(long rc, const char* call) {
  const int e = static_cast<int>(rc < 0 ? -rc : rc);
  return std::string(call) + " failed: " + fi_strerror(e) + " (-" + std::to_string(e) + ")";
}

void fail_datapath(long rc, const char* call) {
  throw PeerError(call_failed(rc, call) + " (the job's libfabric communication broke; a rank may be gone)");
}

std::uint64_t completion_flag(Completion c) {
  switch (c) {
    case Completion::transmit:
      return FI_TRANSMIT_COMPLETE;
    case Completion::delivery:
      return FI_DELIVERY_COMPLETE;
    default:
      return FI_INJECT_COMPLETE;
  }
}

void fail_setup(long rc, const char* call, const std::string& what_to_check) {
  std::string m = call_failed(rc, call);
  if (!what_to_check.empty()) m += "; " + what_to_check;
  throw std::runtime_error(m);
}

namespace {

std::uint64_t floor_pow2(std::uint64_t v) {
  std::uint64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

constexpr int kMultiBuffers = 4;              // multi-receive buffers posted at once
constexpr std::size_t kMultiBytes = 1 << 18;  // each: a few hundred frames, or 60 full-size messages
constexpr std::uint32_t kRingPerEp = 64;      // one-message receive slots per endpoint without FI_MULTI_RECV
constexpr std::size_t kStash = 1024;          // receive completions drive() may hold for the next poll
constexpr double kStuckCallS = 2.0;           // a provider call this long with a peer gone ends the run

}  // namespace

Transport::Transport(Setup s)
    : rank_(s.rank),
      size_(s.size),
      ep_type_(s.ep),
      cq_(s.cq),
      eq_(s.eq),
      inject_size_(s.inject_size),
      multi_recv_(s.multi_recv && s.ep == EpType::rdm),
      mr_local_(s.mr_local),
      rma_(s.rma),
      bulk_(s.rma && s.order_saw ? BulkPath::rma : BulkPath::messages),
      completion_(s.completion),
      send_flags_(completion_flag(s.completion) | FI_COMPLETION),
      inject_frames_(s.completion == Completion::inject && s.inject_size >= sizeof(am::Frame)),
      segment_(s.segment),
      segment_bytes_(s.segment_bytes),
      segment_desc_(s.segment_desc),
      register_local_(std::move(s.register_local)),
      peer_alive_(std::move(s.peer_alive)),
      yield_when_idle_(s.yield_when_idle) {
  peers_.resize(static_cast<std::size_t>(size_));
  slot_bytes_ = static_cast<std::uint32_t>((sizeof(am::Frame) + kPayloadMax + 63) / 64 * 64);
  slot_n_ = std::max<std::uint64_t>(2, floor_pow2(std::min<std::size_t>(s.tx_size, 1024)));
  slot_mask_ = slot_n_ - 1;
  tx_region_.resize(slot_n_ * slot_bytes_ / sizeof(Line));
  tx_desc_ = register_local_(tx_region_.data(), tx_region_.size() * sizeof(Line), FI_SEND | FI_READ | FI_WRITE);
  slots_.resize(slot_n_);
  for (std::uint64_t i = 0; i < slot_n_; ++i) {
    slots_[i].ctx.kind = CtxKind::tx;
    slots_[i].buf = reinterpret_cast<std::byte*>(tx_region_.data()) + i * slot_bytes_;
  }
  local_.resize(slot_n_);
  stash_.resize(kStash);

  const int eps = ep_type_ == EpType::rdm ? 1 : size_ - 1;
  if (multi_recv_) {
    multi_bytes_ = std::max<std::size_t>(kMultiBytes, 16 * slot_bytes_);
    rx_region_bytes_ = kMultiBuffers * multi_bytes_;
  } else {
    rx_ring_ = static_cast<std::uint32_t>(std::min<std::size_t>(kRingPerEp, std::max<std::size_t>(s.rx_size, 2)));
    rx_region_bytes_ = static_cast<std::size_t>(eps) * rx_ring_ * slot_bytes_;
  }
  rx_region_.resize(rx_region_bytes_ / sizeof(Line));
  rx_desc_ = register_local_(rx_region_.data(), rx_region_bytes_, FI_RECV);
}

void Transport::attach_rdm(fid_ep* ep, const std::vector<fi_addr_t>& addrs) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    peers_[static_cast<std::size_t>(r)].ep = ep;
    peers_[static_cast<std::size_t>(r)].addr = addrs.at(static_cast<std::size_t>(r));
  }
  const int n = multi_recv_ ? kMultiBuffers : static_cast<int>(rx_ring_);
  const std::size_t bytes = multi_recv_ ? multi_bytes_ : slot_bytes_;
  for (int i = 0; i < n; ++i) {
    auto b = std::make_unique<RxBuf>();
    b->ctx.kind = multi_recv_ ? CtxKind::rx_multi : CtxKind::rx_slot;
    b->ep = ep;
    b->index = static_cast<std::uint32_t>(i);
    b->buf = reinterpret_cast<std::byte*>(rx_region_.data()) + static_cast<std::size_t>(i) * bytes;
    b->bytes = bytes;
    post_recv(*b);
    rx_.push_back(std::move(b));
  }
}

void Transport::attach_msg(int rank, fid_ep* ep) {
  peers_.at(static_cast<std::size_t>(rank)).ep = ep;
  // The ring of this peer's endpoint: its share of the receive region, by its place among the peers.
  const std::size_t k = static_cast<std::size_t>(rank < rank_ ? rank : rank - 1);
  for (std::uint32_t i = 0; i < rx_ring_; ++i) {
    auto b = std::make_unique<RxBuf>();
    b->ctx.kind = CtxKind::rx_slot;
    b->ep = ep;
    b->peer = rank;
    b->index = i;
    b->buf = reinterpret_cast<std::byte*>(rx_region_.data()) + (k * rx_ring_ + i) * slot_bytes_;
    b->bytes = slot_bytes_;
    post_recv(*b);
    rx_.push_back(std::move(b));
  }
}

void Transport::set_remote_segment(int rank, std::uint64_t addr, std::uint64_t key, std::uint32_t bytes) {
  PeerLink& p = peers_.at(static_cast<std::size_t>(rank));
  p.segment_addr = addr;
  p.segment_key = key;
  p.segment_bytes = bytes;
}

void Transport::post_recv(RxBuf& b) {
  ++counters_.reposts;
  iovec iov{b.buf, b.bytes};
  void* desc = rx_desc_;
  const fi_msg m{&iov, &desc, 1, FI_ADDR_UNSPEC, &b.ctx, 0};
  guard_.enter("fi_recvmsg");
  const ssize_t r = fi_recvmsg(b.ep, &m, multi_recv_ ? FI_MULTI_RECV : 0);
  guard_.leave();
  if (r == 0) return;
  if (r != -FI_EAGAIN && r != -FI_ENOMEM) fail_datapath(r, multi_recv_ ? "fi_recvmsg (FI_MULTI_RECV)" : "fi_recvmsg");
  ++counters_.reposts_deferred;
  repost_.push_back(&b);
}

void Transport::retry_reposts() {
  std::vector<RxBuf*> again;
  again.swap(repost_);
  for (RxBuf* b : again) post_recv(*b);
}

void Transport::set_peer_alive(std::function<bool()> f, const std::string& provider) {
  peer_alive_ = f;
  guard_.watch({.stuck_s = kStuckCallS,
                .check_s = 0.25,
                .library = "libfabric's " + provider + " provider",
                .peers_alive = std::move(f),
                .fire = {}});
}

void Transport::bad_dst(std::uint16_t dst) const {
  throw std::logic_error("ofi: send to rank " + std::to_string(dst) + ", not a peer of rank " + std::to_string(rank_));
}

bool Transport::retry_or_fail(ssize_t r, const char* call, int peer) {
  if (r == -FI_EAGAIN) {
    ++counters_.eagain;
    drive();
    return false;
  }
  throw PeerError(call_failed(r, call) + " toward rank " + std::to_string(peer) +
                  " (the job's libfabric communication broke; a rank may be gone)");
}

void Transport::drive() {
  if (stash_tail_ - stash_head_ + kCqBatch > stash_.size()) return;  // full: the next poll() reads on
  fi_cq_data_entry e[kCqBatch];
  guard_.enter("fi_cq_read");
  const ssize_t r = fi_cq_read(cq_, e, kCqBatch);
  guard_.leave();
  if (r == -FI_EAGAIN) return;
  if (r < 0) cq_failed(r);
  for (ssize_t i = 0; i < r; ++i) {
    Ctx* c = static_cast<Ctx*>(e[i].op_context);
    if (c->kind == CtxKind::tx) {
      Slot& s = *reinterpret_cast<Slot*>(c);
      if (s.kind == TxKind::read) {
        std::memcpy(&local_[local_tail_++ % local_.size()], s.buf, sizeof(am::Frame));
        deferred_ = true;
      }
      complete_slot(s);
    } else {
      stash_[stash_tail_++ % stash_.size()] = e[i];
      ++counters_.stashed;
      deferred_ = true;
    }
  }
}

bool Transport::send_message(PeerLink& p, const am::Frame& f, const void* payload, std::uint32_t n, bool chunk,
                             bool ends_op) {
  const std::size_t len = sizeof(am::Frame) + n;
  const std::uint32_t seq = chunk ? kChunk : tx_seq_;
  if (inject_frames_ && len <= inject_size_) {
    alignas(64) std::byte buf[sizeof(am::Frame) + kPayloadMax];
    std::memcpy(buf, &f, sizeof f);
    std::memcpy(buf, &seq, sizeof seq);
    if (n) std::memcpy(buf + sizeof f, payload, n);
    guard_.enter("fi_inject");
    const ssize_t r = fi_inject(p.ep, buf, len, p.addr);
    guard_.leave();
    if (r != 0) return retry_or_fail(r, "fi_inject", f.dst);
    ++counters_.injects;
  } else {
    if (!slot_free()) {
      drive();
      if (!slot_free()) return false;
    }
    Slot& s = take_slot(TxKind::send, f.dst);
    std::memcpy(s.buf, &f, sizeof f);
    std::memcpy(s.buf, &seq, sizeof seq);
    if (n) std::memcpy(s.buf + sizeof f, payload, n);
    iovec iov{s.buf, len};
    void* desc = tx_desc_;
    const fi_msg m{&iov, &desc, 1, p.addr, &s.ctx, 0};
    guard_.enter("fi_sendmsg");
    const ssize_t r = fi_sendmsg(p.ep, &m, send_flags_);
    guard_.leave();
    if (r != 0) {
      untake_slot();
      return retry_or_fail(r, "fi_sendmsg", f.dst);
    }
    ++counters_.sends;
  }
  if (!chunk) ++tx_seq_;
  if (ends_op) ++ops_posted_;
  return true;
}

bool Transport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  PeerLink& p = peer(f.dst);
  if (n <= kPayloadMax) {
    if (!send_message(p, f, src, n, false, true)) return false;
    ++counters_.medium_stores;
    return true;
  }
  const bool done =
      bulk_ == BulkPath::rma ? store_rma(p, f, src, n, remote_off) : store_messages(p, f, src, n, remote_off);
  if (done) ++counters_.bulk_stores;
  return done;
}

void* Transport::local_desc(const void* src, std::uint32_t n, const void*& from) {
  const auto* s = static_cast<const std::byte*>(src);
  from = src;
  if (s >= segment_ && n <= segment_bytes_ && s <= segment_ + (segment_bytes_ - n)) return segment_desc_;
  if (!mr_local_) return nullptr;
  // FI_MR_LOCAL: the data must sit in registered memory. One staging buffer, as verbs has: the methods
  // store from the segment, and a caller with several stores of outside memory in flight must too.
  if (staging_.empty()) {
    staging_.resize(segment_bytes_ / sizeof(Line) + 1);
    staging_desc_ = register_local_(staging_.data(), staging_.size() * sizeof(Line), FI_WRITE | FI_SEND);
  }
  std::memcpy(staging_.data(), src, n);
  ++counters_.staged;
  from = staging_.data();
  return staging_desc_;
}

bool Transport::store_rma(PeerLink& p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  Partial& q = partial_;
  const bool resume = q.active && q.dst == f.dst && q.src == src && q.n == n && q.remote_off == remote_off;
  if (!resume) {
    if (remote_off > p.segment_bytes || n > p.segment_bytes - remote_off)
      throw UsageError("store of " + std::to_string(n) + " bytes at " + std::to_string(remote_off) + " exceeds rank " +
                       std::to_string(f.dst) + "'s " + std::to_string(p.segment_bytes) + "-byte segment");
    if (!slot_free()) {
      drive();
      if (!slot_free()) return false;
    }
    const void* from = nullptr;
    void* desc = local_desc(src, n, from);
    Slot& s = take_slot(TxKind::write, f.dst);
    iovec iov{const_cast<void*>(from), n};
    const fi_rma_iov rma{p.segment_addr + remote_off, n, p.segment_key};
    const fi_msg_rma m{&iov, &desc, 1, p.addr, &rma, 1, &s.ctx, 0};
    guard_.enter("fi_writemsg");
    const ssize_t r = fi_writemsg(p.ep, &m, send_flags_);
    guard_.leave();
    if (r != 0) {
      untake_slot();
      return retry_or_fail(r, "fi_writemsg", f.dst);
    }
    ++counters_.writes;
  }
  // The frame follows the data; FI_ORDER_SAW makes the peer see the data before it.
  if (!send_message(p, f, nullptr, 0, false, true)) {
    if (!q.active || resume) q = {true, f.dst, src, n, remote_off, n, true};
    return false;
  }
  if (resume) q.active = false;
  return true;
}

bool Transport::store_messages(PeerLink& p, const am::Frame& f, const void* src, std::uint32_t n,
                               std::uint32_t remote_off) {
  Partial& q = partial_;
  const bool resume = q.active && q.dst == f.dst && q.src == src && q.n == n && q.remote_off == remote_off;
  const bool may_split = resume || !q.active;
  const std::uint32_t chunks = (n + kPayloadMax - 1) / kPayloadMax;
  if (!may_split && !slot_free(chunks + 1)) {
    if (chunks + 1 > slot_n_)
      throw UsageError("a store of " + std::to_string(n) + " bytes takes " + std::to_string(chunks + 1) +
                       " messages, more than the send queue's " + std::to_string(slot_n_) + " beside another store");
    drive();
    if (!slot_free(chunks + 1)) return false;
  }
  std::uint32_t done = resume ? q.done : 0;
  const auto* s = static_cast<const std::byte*>(src);
  am::Frame c = f;
  while (done < n) {
    const std::uint32_t len = std::min(kPayloadMax, n - done);
    c.bulk_off = remote_off + done;
    c.bulk_len = len;
    if (!send_message(p, c, s + done, len, true, false)) {
      if (may_split) q = {true, f.dst, src, n, remote_off, done, false};
      return false;
    }
    ++counters_.chunks;
    done += len;
  }
  if (!send_message(p, f, nullptr, 0, false, true)) {
    if (may_split) q = {true, f.dst, src, n, remote_off, n, true};
    return false;
  }
  if (resume) q.active = false;
  return true;
}

bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  if (!rma_) throw UsageError("a get needs fi_read, and this provider has no FI_RMA: run a method without gets");
  PeerLink& p = peer(f.src);  // the completion comes "from" the rank whose segment is read
  if (local_tail_ - local_head_ >= local_.size()) return false;
  if (!slot_free()) {
    drive();
    if (!slot_free()) return false;
  }
  Slot& s = take_slot(TxKind::read, f.src);
  std::memcpy(s.buf, &f, sizeof f);
  iovec iov{segment_ + local_off, n};
  void* desc = segment_desc_;
  const fi_rma_iov rma{p.segment_addr + remote_off, n, p.segment_key};
  const fi_msg_rma m{&iov, &desc, 1, p.addr, &rma, 1, &s.ctx, 0};
  guard_.enter("fi_readmsg");
  const ssize_t r = fi_readmsg(p.ep, &m, FI_COMPLETION);
  guard_.leave();
  if (r != 0) {
    untake_slot();
    return retry_or_fail(r, "fi_readmsg", f.src);
  }
  ++counters_.reads;
  ++counters_.gets;
  return true;
}

void Transport::cq_failed(ssize_t r) {
  if (r != -FI_EAVAIL) fail_datapath(r, "fi_cq_read");
  fi_cq_err_entry err{};
  const ssize_t rr = fi_cq_readerr(cq_, &err, 0);
  if (rr < 0) fail_datapath(rr, "fi_cq_readerr");
  std::string op = "an operation";
  std::string who;
  if (auto* c = static_cast<Ctx*>(err.op_context)) {
    if (c->kind == CtxKind::tx) {
      const Slot& s = *reinterpret_cast<const Slot*>(c);
      op = s.kind == TxKind::send    ? "a send (fi_sendmsg)"
           : s.kind == TxKind::write ? "a store (fi_writemsg)"
                                     : "a get (fi_readmsg)";
      who = " toward rank " + std::to_string(s.peer);
    } else {
      const RxBuf& b = *reinterpret_cast<const RxBuf*>(c);
      op = "a receive";
      if (b.peer >= 0) who = " from rank " + std::to_string(b.peer);
    }
  }
  char text[256] = {};
  const char* prov = fi_cq_strerror(cq_, err.prov_errno, err.err_data, text, sizeof text);
  throw PeerError("ofi: " + op + who + " completed in error: " + fi_strerror(err.err) + " (" + std::to_string(err.err) +
                  "); the provider says: " + (prov ? prov : "nothing") +
                  " (the job's libfabric communication broke; a rank may be gone)");
}

bool Transport::peer_alive() const {
  if (!peer_alive_()) return false;
  if (eq_ == nullptr) return !shutdown_seen_;
  if (shutdown_seen_) return false;
  std::uint32_t event = 0;
  alignas(8) std::byte entry[sizeof(fi_eq_cm_entry) + 64];
  const ssize_t r = fi_eq_read(eq_, &event, entry, sizeof entry, 0);
  if (r == -FI_EAVAIL) {
    fi_eq_err_entry err{};
    fi_eq_readerr(eq_, &err, 0);
    shutdown_seen_ = true;
    shutdown_what_ = std::string("connection error: ") + fi_strerror(err.err);
  } else if (r >= 0 && event == FI_SHUTDOWN) {
    shutdown_seen_ = true;
    shutdown_what_ = "a peer shut its connection down (FI_SHUTDOWN)";
  }
  return !shutdown_seen_;
}

nlohmann::json Transport::describe() const {
  const Counters& c = counters_;
  nlohmann::json j = provider_json_;
  j["kind"] = "ofi";
  j["rank"] = rank_;
  j["size"] = size_;
  j["frame_bytes"] = sizeof(am::Frame);
  j["payload_in_message_max"] = kPayloadMax;
  j["small_am"] = inject_frames_ ? "fi_inject (within inject_size " + std::to_string(inject_size_) +
                                       "): complete when the call returns, no completion entry"
                                 : "fi_sendmsg from a tx slot with " + std::string(to_string(completion_)) +
                                       " completion, one CQ entry each";
  j["store"] = "up to " + std::to_string(kPayloadMax) +
               " bytes: one message, the frame and its payload (fi_inject when it fits, else fi_sendmsg); larger: " +
               (bulk_ == BulkPath::rma ? std::string("fi_writemsg into the peer's segment, then the frame "
                                                     "(FI_ORDER_SAW: the peer sees the data first)")
                                       : std::string("data messages of ") + std::to_string(kPayloadMax) +
                                             " bytes (copied into the segment by the receiver), then the frame");
  j["bulk"] = bulk_ == BulkPath::rma ? "rma" : "messages";
  j["bulk_why"] = bulk_ == BulkPath::rma ? "the provider has FI_RMA and orders a send after a write (FI_ORDER_SAW)"
                  : !rma_                ? "the provider has no FI_RMA"
                          : "the provider has FI_RMA but does not order a send after a write (no FI_ORDER_SAW): the "
                            "frame could overtake its data";
  j["get"] = rma_ ? "fi_readmsg, its completion delivered locally as the peer's reply" : "none (no FI_RMA)";
  j["receive"] = multi_recv_ ? std::to_string(kMultiBuffers) + " FI_MULTI_RECV buffers of " +
                                   std::to_string(multi_bytes_) + " bytes, each posted again once released"
                             : std::to_string(rx_ring_) + " one-message slots per endpoint (" +
                                   std::to_string(slot_bytes_) + " bytes), each posted again once handed up";
  j["cq_batch"] = kCqBatch;
  j["stuck_call_guard_s"] = guard_.stuck_s();
  j["tx_slots"] = slot_n_;
  j["completion"] = to_string(completion_);
  j["completion_means"] =
      completion_ == Completion::inject
          ? "a send is locally complete once its buffer may be reused: an fi_inject when it returns, another "
            "operation at its FI_INJECT_COMPLETE entry. Bell's flood and Doerfler's wait then see the NI take the "
            "data, not the peer receive it: o_s and g of a flood of small AMs are the cost of fi_inject"
      : completion_ == Completion::transmit
          ? "every send is fi_sendmsg(FI_TRANSMIT_COMPLETE): complete once the provider will not send it again "
            "(on a reliable endpoint, once the peer's provider acknowledged it). The flood's queue, Doerfler's wait "
            "and the overlap then hold the round trip of that acknowledgement"
          : "every send is fi_sendmsg(FI_DELIVERY_COMPLETE): complete once the message is in the peer's receive "
            "buffer. The flood's queue, Doerfler's wait and the overlap then hold the whole transfer to the peer";
  j["local_completion"] = "every operation numbered; tracked by its tx slot's CQ entry (fi_inject: at return)";
  j["source_check"] = ep_type_ == EpType::msg
                          ? "each connection is one peer's: a frame naming another source is refused"
                          : "rdm without FI_SOURCE: the frame's source rank is checked by the AM "
                            "layer only";
  j["segment_bytes"] = segment_bytes_;
  j["counters"] = {{"injects", c.injects},
                   {"sends", c.sends},
                   {"writes", c.writes},
                   {"reads", c.reads},
                   {"store_data_messages", c.chunks},
                   {"eagain", c.eagain},
                   {"recvs", c.recvs},
                   {"reposts", c.reposts},
                   {"medium_stores", c.medium_stores},
                   {"bulk_stores", c.bulk_stores},
                   {"gets", c.gets},
                   {"staged", c.staged},
                   {"short_or_bad", c.short_or_bad},
                   {"bad_src", c.bad_src},
                   {"bad_bulk", c.bad_bulk},
                   {"stashed", c.stashed},
                   {"tracked", c.tracked},
                   {"reposts_deferred", c.reposts_deferred}};
  if (shutdown_seen_) j["connection_event"] = shutdown_what_;
  return j;
}

}  // namespace logpb::ofi
