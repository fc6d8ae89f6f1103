// Verbs datapath: small AMs as SEND (inline when the device allows), receives pre-posted and refilled in
// batches, selective signaling, busy-polled CQs. One QP per peer rank on one context (context.hpp): a
// send goes to the QP of f.dst; one poll of the shared receive CQ serves every peer, and what arrives
// is known to come from the QP's peer (the receive's wr_id names it): a frame whose src says otherwise is
// refused (bad_src).
//
// Stores have two protocols, switched by size (describe() records the switch):
//  - medium (payload up to one packet of the path MTU less the 64-byte frame): ONE SEND carrying the frame
//    and its payload, inline when both fit the QP's inline data, so a small message with data costs one
//    NI operation like a small AM (the size axis must not hold a switch of the tool's making below
//    the MTU). The receiver checks bulk_off/bulk_len against its segment before copying the
//    payload there from the receive slot, then delivers the frame.
//  - bulk (anything larger): the AM header is RDMA-written into a slot of the header ring the peer keeps
//    for us, then the data is RDMA-written WITH IMM into the peer's segment (one chained post); the
//    immediate names the handler and the slot, and since an RC QP places writes in order, the header is
//    there when the immediate's completion is. Zero-copy at the receiver.
// Bulk get: RDMA READ, completed locally.
//
// Local completion (Bell et al. 4.2, Doerfler & Brightwell 2): a send operation (one try_send or
// try_store, whatever its WR count) is complete when the CQE of its last WR, or of any later WR on the
// same QP, is polled: an RC send queue completes in order, so a signaled CQE covers every WR before it.
// Operations are numbered across all peers; tx_completed() is the number up to which every one is
// complete, i.e. the smallest over the QPs of (their oldest incomplete operation - 1). A QP whose last
// WRs went unsignaled would hold that number back for good, so while someone asks (tx_completed) and
// operations are incomplete, each such QP gets one signaled 8-byte RDMA WRITE (to a scratch slot of its
// peer) that reports its tail (counted: flushes). A pair has one QP and never needs one.
//
// Work requests are built once per QP (the small-AM SEND, the medium SEND, every receive slot's receive)
// and only patched on the datapath (after eRPC's transport_impl and perftest's loops: a send writes the
// frame's address or its tx slot, the WR number and the signal flag, nothing else); receives are
// re-posted by chaining their pre-built WRs.
//
// Fault hook (tests only): LOGPB_VERBS_FAULT="qp-error-after=N[,rank=R]", read once at start, moves
// rank R's (default 0) QP to IBV_QPS_ERR right after its N-th send operation is posted, so the tests see
// what a QP that fails mid-run does to a job (tests/verbs/verbs_e2e.py qp_error). Recorded in describe().
#pragma once

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/frame.hpp"
#include "verbs/context.hpp"
#include "verbs/options.hpp"

namespace logpb::verbs {

struct Counters {
  std::uint64_t sends = 0, signaled = 0, sq_full = 0, recvs = 0, stores = 0, store_bytes = 0, medium_stores = 0,
                medium_bytes = 0, gets = 0, get_bytes = 0, reposts = 0, cq_events = 0, sleeps = 0, sleep_timeouts = 0,
                bad_imm = 0, bad_medium = 0, bad_src = 0, flushes = 0;
};

class Transport {
 public:
  // `ctx` has every peer's QP connected (Context::connect) with `peers[r]` rank r's address (this rank's
  // entry unused). Posts every receive; the caller then says "ready" (verbs/connect.hpp does all this).
  Transport(std::unique_ptr<Context> ctx, std::vector<Address> peers, const TransportOptions& opt,
            std::function<bool()> peer_alive);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  bool try_send(const am::Frame& f) {
    Conn& c = conn(f.dst);
    if (!sq_room(c, 1)) return false;
    ibv_send_wr& wr = c.send_wr;
    if (send_inline_) {
      c.send_sge.addr = reinterpret_cast<std::uint64_t>(&f);
    } else {
      std::byte* slot = tx_slot(c);
      std::memcpy(slot, &f, sizeof f);
      c.send_sge.addr = reinterpret_cast<std::uint64_t>(slot);
    }
    wr.send_flags = send_inline_ ? IBV_SEND_INLINE : 0;
    number(c, wr, true);
    post(c, wr, 1);
    return true;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
    Conn& c = conn(f.dst);
    if (n <= c.medium_max) return try_medium(c, f, src, n);
    return try_bulk(c, f, src, n, remote_off);
  }
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  template <class Sink>
  int poll(Sink&& sink) {
    int delivered = 0;
    if (gets_posted_ != gets_delivered_) [[unlikely]] {
      reap_sends();
      delivered += deliver_gets(sink);
    }
    if (stash_n_ > 0) [[unlikely]] {  // completions idle_wait took while closing its race
      const int n = stash_n_;
      stash_n_ = 0;
      return delivered + handle_recvs(stash_, n, sink);
    }
    ibv_wc wc[32];
    const int n = ibv_poll_cq(recv_cq_, cq_batch_, wc);
    if (n <= 0) {
      if (n < 0) throw PeerError("ibv_poll_cq(recv) failed: the device or its context is gone");
      // While waiting, look at the send CQ now and then: a send that failed (the peer is unreachable,
      // retries exhausted) reports only there, and it must end the run at once, not after a timeout.
      if ((++empty_polls_ & 1023) == 0) reap_sends();
      return delivered;
    }
    return delivered + handle_recvs(wc, n, sink);
  }

  // LocalCompletion (common/transport.hpp). Operations are numbered from 1 across all peers; gets are not
  // operations.
  std::uint64_t tx_posted() const { return ops_posted_; }
  void track_next() { track_ = true; }
  std::uint64_t tx_completed() {
    reap_sends();
    if (multi_ && ops_done_ != ops_posted_) [[unlikely]]
      flush_tails();
    return ops_done_;
  }

  // CreditLimited: one-way requests in flight that each peer's receive queue for us holds beside the window.
  int max_credits(int window) const;

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {ctx_->segment(), own_segment_bytes_}; }
  const Context& context() const { return *ctx_; }
  nlohmann::json describe() const;

 protected:
  // Event mode's sleep (EventTransport::idle_wait); see transport.cpp.
  void sleep_for_completion();

 private:
  static constexpr int kWrIdShift = 48;  // a send's wr_id: peer rank << 48 | its WR number on that QP
  static constexpr std::uint64_t kWrMask = (1ull << kWrIdShift) - 1;

  // One peer: its QP, its address, and this side's counts of what went through the QP. Sized once.
  struct Conn {
    ibv_qp* qp = nullptr;
    ibv_ah* ah = nullptr;  // UD
    std::uint32_t rank = 0;
    std::uint64_t posted = 0, completed = 0, signaled = 0;  // WR numbers (signaled: the last one signaled)
    std::uint64_t ops_posted = 0, ops_done = 0;             // this QP's send operations (its own count)
    std::vector<std::uint64_t> ops_at_wr;  // WR number % sq_depth -> this QP's operations complete once it is
    std::vector<std::uint64_t> op_number;  // this QP's k-th operation % sq_depth -> its number across all peers
    std::uint32_t medium_max = 0;          // stores up to this many bytes are medium AMs
    std::uint32_t segment_bytes = 0;       // the peer's segment
    std::uint32_t next_header = 0;
    std::byte* tx_buf = nullptr;         // our send slots for this QP
    std::byte* recv_buf = nullptr;       // our receive buffers for this QP
    const std::byte* headers = nullptr;  // the ring this peer writes its bulk headers into
    std::vector<std::uint32_t> repost;
    int repost_n = 0;
    std::uint64_t recvs = 0;
    Address peer;
    // Built once (build_wrs) and patched per post. conns_ is sized once, so the pointers between them hold.
    ibv_send_wr send_wr{};  // small AM: SEND of the 64-byte frame (inline or from the tx slot)
    ibv_sge send_sge{};
    ibv_send_wr medium_wr{};  // medium AM: SEND of the frame and its payload (one or two SGEs)
    ibv_sge medium_sge[2]{};
    std::vector<ibv_recv_wr> recv_wr;  // one per receive slot, its sge beside it: re-posting only chains them
    std::vector<ibv_sge> recv_sge;
  };

  Conn& conn(std::uint16_t dst) {
    if (dst >= conns_.size() || !conns_[dst].qp) [[unlikely]]
      bad_dst(dst);
    return conns_[dst];
  }
  [[noreturn]] void bad_dst(std::uint16_t dst) const;

  bool sq_room(Conn& c, int wrs) {
    if (c.posted - c.completed + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    reap_sends();
    if (c.posted - c.completed + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    ++counters_.sq_full;
    sq_blocked_ = true;  // event mode then sleeps for a send completion too
    return false;
  }
  // A frame travels inline when the device allows it, else from a registered slot of the QP's tx ring
  // (the slot of the WR about to be posted: sq_room has seen the WR that used it last complete).
  void frame_sge(const Conn& c, const am::Frame& f, ibv_sge& sge, ibv_send_wr& wr) {
    if (max_inline_ >= sizeof(am::Frame)) {
      sge.addr = reinterpret_cast<std::uint64_t>(&f);
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = tx_slot(c);
      std::memcpy(slot, &f, sizeof f);
      sge.addr = reinterpret_cast<std::uint64_t>(slot);
      sge.lkey = tx_lkey_;
    }
    sge.length = sizeof(am::Frame);
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  std::byte* tx_slot(const Conn& c) const { return c.tx_buf + ((c.posted + 1) % sq_depth_) * tx_slot_bytes_; }
  bool in_segment(const std::byte* p, std::uint32_t n) const {
    return p >= ctx_->segment() && n <= own_segment_bytes_ && p <= ctx_->segment() + (own_segment_bytes_ - n);
  }

  // A medium AM: one SEND of the frame and the payload. Inline when both fit; else the frame goes from
  // its tx slot and the payload in place from the segment, or copied behind the frame when it lies
  // outside registered memory.
  bool try_medium(Conn& c, const am::Frame& f, const void* src, std::uint32_t n) {
    if (c.ah) throw UsageError("stores need an RC QP (the payload lands in the peer's segment): run without --ud");
    if (!sq_room(c, 1)) return false;
    const auto* s = static_cast<const std::byte*>(src);
    ibv_send_wr& wr = c.medium_wr;
    ibv_sge* sge = c.medium_sge;
    if (sizeof(am::Frame) + n <= max_inline_) {
      sge[0].addr = reinterpret_cast<std::uint64_t>(&f);
      sge[0].length = sizeof(am::Frame);
      sge[0].lkey = 0;
      sge[1] = {reinterpret_cast<std::uint64_t>(s), n, 0};
      wr.num_sge = 2;
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = tx_slot(c);
      std::memcpy(slot, &f, sizeof f);
      sge[0].addr = reinterpret_cast<std::uint64_t>(slot);
      sge[0].lkey = tx_lkey_;
      wr.send_flags = 0;
      if (in_segment(s, n)) {
        sge[0].length = sizeof(am::Frame);
        sge[1] = {reinterpret_cast<std::uint64_t>(s), n, segment_lkey_};
        wr.num_sge = 2;
      } else {
        std::memcpy(slot + sizeof f, s, n);
        sge[0].length = static_cast<std::uint32_t>(sizeof f + n);
        wr.num_sge = 1;
      }
    }
    number(c, wr, true);
    post(c, wr, 1);
    ++counters_.medium_stores;
    counters_.medium_bytes += n;
    return true;
  }
  bool try_bulk(Conn& c, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);

  // Give a WR its number on its QP and decide whether it is signaled. `ends_op`: the last WR of a send
  // operation, which then counts as posted (and is signaled if track_next() asked for it). Selective
  // signaling otherwise: one CQE every signal_every WRs of a QP tells that all before it are done.
  void number(Conn& c, ibv_send_wr& wr, bool ends_op, bool signal = false) {
    ++c.posted;
    if (ends_op) {
      ++ops_posted_;
      c.op_number[++c.ops_posted % sq_depth_] = ops_posted_;
      if (track_) {
        signal = true;
        track_ = false;
        tracked_ = ops_posted_;
      }
    }
    c.ops_at_wr[c.posted % sq_depth_] = c.ops_posted;
    wr.wr_id = (static_cast<std::uint64_t>(c.rank) << kWrIdShift) | c.posted;
    if (signal || c.posted % signal_every_ == 0) {
      wr.send_flags |= IBV_SEND_SIGNALED;
      c.signaled = c.posted;
      ++counters_.signaled;
    }
  }
  // `wrs`: how many WRs the chain from `first` holds.
  void post(Conn& c, ibv_send_wr& first, int wrs) {
    ibv_send_wr* bad = nullptr;
    if (int r = ibv_post_send(c.qp, &first, &bad)) post_failed(c, r);
    counters_.sends += static_cast<std::uint64_t>(wrs);
    if (ops_posted_ >= fault_after_) [[unlikely]]
      inject_qp_error(c);  // the fault hook (tests only)
  }
  [[noreturn]] void post_failed(const Conn& c, int err) const;
  void build_wrs(Conn& c);
  void parse_fault(const std::string& spec);
  void inject_qp_error(Conn& c);
  std::string qp_state_of(const Conn& c) const;  // "RTS", "ERR", ... as ibv_query_qp reports it now
  // Completions of one QP arrive in its posting order; the newest names how far its WRs and operations
  // are done. Then the operations complete across all peers: up to the oldest incomplete one of any QP.
  void reap_sends() {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(send_cq_, 16, wc);
    if (n <= 0) {
      if (n < 0) throw PeerError("ibv_poll_cq(send) failed: the device or its context is gone");
      return;
    }
    sends_reaped_ += static_cast<std::uint64_t>(n);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) completion_error(wc[i], "send");
      Conn& c = conns_[wc[i].wr_id >> kWrIdShift];
      c.completed = wc[i].wr_id & kWrMask;
      c.ops_done = c.ops_at_wr[c.completed % sq_depth_];
    }
    std::uint64_t done = ops_posted_;
    for (const std::uint32_t r : peer_ranks_) {
      const Conn& c = conns_[r];
      if (c.ops_done != c.ops_posted) done = std::min(done, c.op_number[(c.ops_done + 1) % sq_depth_] - 1);
    }
    ops_done_ = done;
    sq_blocked_ = false;
  }
  void flush_tails();
  // Gets whose READ has completed, in the order posted; their reply frames run here.
  template <class Sink>
  int deliver_gets(Sink& sink) {
    int n = 0;
    while (gets_delivered_ != gets_posted_) {
      const std::uint64_t k = gets_delivered_ % sq_depth_;
      if (get_wr_[k] > conns_[get_rank_[k]].completed) break;
      ++gets_delivered_;
      sink(static_cast<const void*>(&get_frames_[k]), sizeof(am::Frame));
      ++n;
    }
    return n;
  }

  template <class Sink>
  int handle_recvs(const ibv_wc* wc, int n, Sink& sink) {
    int delivered = 0;
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) completion_error(wc[i], "receive");
      Conn& c = conns_[wc[i].wr_id >> 32];  // the receive's wr_id: peer rank << 32 | slot
      const auto slot = static_cast<std::uint32_t>(wc[i].wr_id);
      ++counters_.recvs;
      ++c.recvs;
      if (wc[i].opcode == IBV_WC_RECV) {
        if (deliver_send(c, slot, wc[i].byte_len, sink)) ++delivered;
      } else if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (deliver_store(c, ntohl(wc[i].imm_data), wc[i].byte_len, sink)) ++delivered;
      }
      consumed(c, slot);
    }
    return delivered;
  }
  // A SEND: a small AM (the frame alone) or a medium AM (the frame, then bulk_len bytes of payload).
  template <class Sink>
  bool deliver_send(const Conn& c, std::uint32_t slot, std::uint32_t byte_len, Sink& sink) {
    const std::byte* buf = c.recv_buf + slot * slot_bytes_ + frame_offset_;
    std::memcpy(&rx_frame_, buf, sizeof rx_frame_);
    if (byte_len < sizeof(am::Frame) + frame_offset_) {
      sink(static_cast<const void*>(&rx_frame_), byte_len);  // the AM layer counts it short
      return false;
    }
    if (rx_frame_.src != c.rank) [[unlikely]] {  // only c's QP reaches this receive
      ++counters_.bad_src;
      return false;
    }
    const std::uint32_t payload = byte_len - frame_offset_ - static_cast<std::uint32_t>(sizeof(am::Frame));
    if (payload != rx_frame_.bulk_len) [[unlikely]] {  // data claimed but not carried, or the reverse: refuse
      ++counters_.bad_medium;
      return false;
    }
    // Checked against our own segment before a byte is copied; a frame whose range does not fit is
    // still handed up, uncopied, for the AM layer to count as bad_bulk.
    if (payload != 0 && rx_frame_.bulk_off <= own_segment_bytes_ && payload <= own_segment_bytes_ - rx_frame_.bulk_off)
      std::memcpy(ctx_->segment() + rx_frame_.bulk_off, buf + sizeof(am::Frame), payload);
    sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
    return true;
  }
  template <class Sink>
  bool deliver_store(const Conn& c, std::uint32_t imm, std::uint32_t byte_len, Sink& sink) {
    const std::uint32_t slot = imm & 0xffff, handler = imm >> 16;
    if (slot >= header_slots_) {
      ++counters_.bad_imm;
      return false;
    }
    std::memcpy(&rx_frame_, c.headers + slot * Context::kHeaderBytes, sizeof rx_frame_);
    if (rx_frame_.handler != handler || rx_frame_.bulk_len != byte_len) {  // header and write disagree: refuse both
      ++counters_.bad_imm;
      return false;
    }
    if (rx_frame_.src != c.rank) [[unlikely]] {
      ++counters_.bad_src;
      return false;
    }
    sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
    return true;
  }
  void consumed(Conn& c, std::uint32_t slot) {
    c.repost[static_cast<std::size_t>(c.repost_n++)] = slot;
    if (c.repost_n >= recv_batch_) repost(c);
  }
  void repost(Conn& c);
  [[noreturn]] void fail_arm(int err, const char* which);
  [[noreturn]] void completion_error(const ibv_wc& wc, const char* what);

  std::unique_ptr<Context> ctx_;
  std::function<bool()> peer_alive_;
  ibv_cq *send_cq_, *recv_cq_;
  std::vector<Conn> conns_;                // by rank; this rank's entry has no QP
  std::vector<std::uint32_t> peer_ranks_;  // the ranks with a QP
  bool multi_ = false;                     // more than one QP: a wait may need a flush (flush_tails)
  std::uint64_t sq_depth_;
  std::uint64_t ops_posted_ = 0, ops_done_ = 0, tracked_ = 0;  // send operations across peers (LocalCompletion)
  bool track_ = false, sq_blocked_ = false;
  std::uint64_t signal_every_;
  std::uint32_t max_inline_;
  int recv_batch_, cq_batch_;
  std::uint32_t segment_bytes_, own_segment_bytes_;  // segment_bytes_: the smallest of all segments (max_bulk)
  std::uint32_t header_slots_;
  std::uint32_t slot_bytes_, frame_offset_, tx_slot_bytes_;
  std::uint32_t tx_lkey_, segment_lkey_;
  std::uint64_t empty_polls_ = 0, sends_reaped_ = 0;
  // All sized once (sq_depth): nothing on the datapath allocates.
  std::vector<std::uint64_t> get_wr_;    // the i-th get's WR number on its QP (ring, in posting order)
  std::vector<std::uint32_t> get_rank_;  // and the peer it reads from
  std::vector<am::Frame> get_frames_;    // its reply frame
  std::uint64_t gets_posted_ = 0, gets_delivered_ = 0;
  // Event mode: whether each CQ is armed, and receive completions taken while closing the arm race.
  bool recv_armed_ = false, send_armed_ = false;
  ibv_wc stash_[32];
  int stash_n_ = 0;
  bool send_inline_ = false;  // small AMs go inline (max_inline_ holds a frame)
  // The fault hook (see the top): on the rank it names, the operation after whose post its QP is forced
  // to ERR (once); never on the others.
  std::uint64_t fault_after_ = ~0ull;
  nlohmann::json fault_;  // what LOGPB_VERBS_FAULT asked, for describe(); null when unset
  alignas(64) am::Frame rx_frame_{};
  Counters counters_;
};

// --event: the same datapath, and the AM layer may sleep in idle_wait() inside its waiting loops. A
// separate type so a busy-polling endpoint does not satisfy IdleWait (whose presence makes the AM
// watchdog read the clock after every empty poll).
class EventTransport : public Transport {
 public:
  using Transport::Transport;
  bool idle_wait() {
    sleep_for_completion();
    return true;
  }
};

// A job with more ranks than cores (Job::oversubscribed): the busy datapath, but a wait with nothing
// to do gives the core to the other ranks (and to the kernel's RDMA work, rxe's above all).
class YieldingTransport : public Transport {
 public:
  using Transport::Transport;
  bool idle_wait() {
    sched_yield();
    return true;
  }
};

}  // namespace logpb::verbs
