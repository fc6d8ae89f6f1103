// Verbs datapath: small AMs as SEND (inline when the device allows), receives pre-posted and refilled in
// batches, selective signaling, busy-polled CQs.
//
// Stores have two protocols, switched by size (describe() records the switch):
//  - medium (payload up to one packet of the path MTU less the 64-byte frame): ONE SEND carrying the frame
//    and its payload, inline when both fit the QP's inline data, so a small message with data costs one
//    NI operation like a small AM (issue 8: the size axis must not hold a switch of the tool's making
//    below the MTU). The receiver checks bulk_off/bulk_len against its segment before copying the
//    payload there from the receive slot, then delivers the frame.
//  - bulk (anything larger): the AM header is RDMA-written into a slot of the peer's header ring, then
//    the data is RDMA-written WITH IMM into the peer's segment (one chained post); the immediate names
//    the handler and the slot, and since an RC QP places writes in order, the header is there when the
//    immediate's completion is. Zero-copy at the receiver.
// Bulk get: RDMA READ, completed locally.
//
// Local completion (Bell et al. 4.2, Doerfler & Brightwell 2): a send operation (one try_send or
// try_store, whatever its WR count) is complete when the CQE of its last WR, or of any later WR, is
// polled: an RC send queue completes in order, so a signaled CQE covers every WR before it.
#pragma once

#include <infiniband/verbs.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/frame.hpp"
#include "verbs/device.hpp"

namespace logpb::verbs {

struct TransportOptions {
  int signal_every = 16;  // one signaled send in this many: fewer completions to reap (o_s)
  int cq_batch = 16;      // completions taken per ibv_poll_cq
};

struct Counters {
  std::uint64_t sends = 0, signaled = 0, sq_full = 0, recvs = 0, stores = 0, store_bytes = 0, medium_stores = 0,
                medium_bytes = 0, gets = 0, get_bytes = 0, reposts = 0, cq_events = 0, sleeps = 0, sleep_timeouts = 0,
                bad_imm = 0, bad_medium = 0;
};

class Transport {
 public:
  Transport(Device& dev, const Address& peer, const TransportOptions& opt, std::function<bool()> peer_alive);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  bool try_send(const am::Frame& f) {
    if (!sq_room(1)) return false;
    ibv_sge sge{};
    ibv_send_wr wr{};
    frame_sge(f, sge, wr);
    wr.opcode = IBV_WR_SEND;
    number(wr, true);
    post(wr);
    return true;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
    if (n <= medium_max_) return try_medium(f, src, n);
    return try_bulk(f, src, n, remote_off);
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
    const int n = ibv_poll_cq(dev_.recv_cq(), cq_batch_, wc);
    if (n <= 0) {
      if (n < 0) throw PeerError("ibv_poll_cq(recv) failed: the device or its context is gone");
      // While waiting, look at the send CQ now and then: a send that failed (the peer is unreachable,
      // retries exhausted) reports only there, and it must end the run at once, not after a timeout.
      if ((++empty_polls_ & 1023) == 0) reap_sends();
      return delivered;
    }
    return delivered + handle_recvs(wc, n, sink);
  }

  // LocalCompletion (common/transport.hpp). Operations are numbered from 1; gets are not operations.
  std::uint64_t tx_posted() const { return ops_posted_; }
  void track_next() { track_ = true; }
  std::uint64_t tx_completed() {
    reap_sends();
    return ops_done_;
  }

  // CreditLimited: one-way requests in flight that the peer's queues hold beside the window.
  int max_credits(int window) const;

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {dev_.segment(), segment_bytes_}; }
  nlohmann::json describe() const;

 protected:
  // Event mode's sleep (EventTransport::idle_wait); see transport.cpp.
  void sleep_for_completion();

 private:
  bool sq_room(int wrs) {
    if (posted_ - completed_ + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    reap_sends();
    if (posted_ - completed_ + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    ++counters_.sq_full;
    sq_blocked_ = true;  // event mode then sleeps for a send completion too
    return false;
  }
  // A frame travels inline when the device allows it, else from a registered slot of the tx ring (the
  // slot of the WR about to be posted: sq_room has seen the WR that used it last complete).
  void frame_sge(const am::Frame& f, ibv_sge& sge, ibv_send_wr& wr) {
    if (max_inline_ >= sizeof(am::Frame)) {
      sge.addr = reinterpret_cast<std::uint64_t>(&f);
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = tx_slot();
      std::memcpy(slot, &f, sizeof f);
      sge.addr = reinterpret_cast<std::uint64_t>(slot);
      sge.lkey = dev_.tx_lkey();
    }
    sge.length = sizeof(am::Frame);
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  std::byte* tx_slot() const { return dev_.tx_buffers() + ((posted_ + 1) % sq_depth_) * tx_slot_bytes_; }
  bool in_segment(const std::byte* p, std::uint32_t n) const {
    return p >= dev_.segment() && n <= own_segment_bytes_ && p <= dev_.segment() + (own_segment_bytes_ - n);
  }

  // A medium AM: one SEND of the frame and the payload. Inline when both fit; else the frame goes from
  // its tx slot and the payload in place from the segment, or copied behind the frame when it lies
  // outside registered memory.
  bool try_medium(const am::Frame& f, const void* src, std::uint32_t n) {
    if (ah_) throw UsageError("stores need an RC QP (the payload lands in the peer's segment): run without --ud");
    if (!sq_room(1)) return false;
    const auto* s = static_cast<const std::byte*>(src);
    ibv_sge sge[2]{};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = sge;
    if (sizeof(am::Frame) + n <= max_inline_) {
      sge[0] = {reinterpret_cast<std::uint64_t>(&f), sizeof(am::Frame), 0};
      sge[1] = {reinterpret_cast<std::uint64_t>(s), n, 0};
      wr.num_sge = 2;
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = tx_slot();
      std::memcpy(slot, &f, sizeof f);
      if (in_segment(s, n)) {
        sge[0] = {reinterpret_cast<std::uint64_t>(slot), sizeof(am::Frame), dev_.tx_lkey()};
        sge[1] = {reinterpret_cast<std::uint64_t>(s), n, dev_.segment_lkey()};
        wr.num_sge = 2;
      } else {
        std::memcpy(slot + sizeof f, s, n);
        sge[0] = {reinterpret_cast<std::uint64_t>(slot), static_cast<std::uint32_t>(sizeof f + n), dev_.tx_lkey()};
        wr.num_sge = 1;
      }
    }
    number(wr, true);
    post(wr);
    ++counters_.medium_stores;
    counters_.medium_bytes += n;
    return true;
  }
  bool try_bulk(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);

  // Give a WR its number and decide whether it is signaled. `ends_op`: the last WR of a send operation,
  // which then counts as posted (and is signaled if track_next() asked for it). Selective signaling
  // otherwise: one CQE every signal_every WRs tells that all before it are done.
  void number(ibv_send_wr& wr, bool ends_op, bool signal = false) {
    ++posted_;
    if (ends_op) {
      ++ops_posted_;
      if (track_) {
        signal = true;
        track_ = false;
        tracked_ = ops_posted_;
      }
    }
    op_of_wr_[posted_ % sq_depth_] = ops_posted_;
    wr.wr_id = posted_;
    if (ah_) {  // UD: every send names the peer
      wr.wr.ud.ah = ah_;
      wr.wr.ud.remote_qpn = dev_.peer_qpn();
      wr.wr.ud.remote_qkey = Device::kUdQkey;
    }
    if (signal || posted_ % signal_every_ == 0) {
      wr.send_flags |= IBV_SEND_SIGNALED;
      ++counters_.signaled;
    }
  }
  void post(ibv_send_wr& first) {
    ibv_send_wr* bad = nullptr;
    if (int r = ibv_post_send(dev_.qp(), &first, &bad))
      throw PeerError(std::string("ibv_post_send failed: ") + std::strerror(r) + " (the QP left RTS: the peer is gone?)");
    for (ibv_send_wr* w = &first; w; w = w->next) ++counters_.sends;
  }
  // Completions arrive in posting order; the newest names how far the WRs and the operations are done.
  void reap_sends() {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(dev_.send_cq(), 16, wc);
    if (n <= 0) {
      if (n < 0) throw PeerError("ibv_poll_cq(send) failed: the device or its context is gone");
      return;
    }
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) completion_error(wc[i], "send");
    completed_ = std::max(completed_, wc[n - 1].wr_id);
    ops_done_ = std::max(ops_done_, op_of_wr_[completed_ % sq_depth_]);
    sq_blocked_ = false;
  }
  // Gets whose READ has completed, in order; their reply frames run here.
  template <class Sink>
  int deliver_gets(Sink& sink) {
    int n = 0;
    while (gets_delivered_ != gets_posted_) {
      const std::uint64_t k = gets_delivered_ % sq_depth_;
      if (get_wr_[k] > completed_) break;
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
      const auto slot = static_cast<std::uint32_t>(wc[i].wr_id);
      ++counters_.recvs;
      if (wc[i].opcode == IBV_WC_RECV) {
        if (deliver_send(slot, wc[i].byte_len, sink)) ++delivered;
      } else if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (deliver_store(ntohl(wc[i].imm_data), wc[i].byte_len, sink)) ++delivered;
      }
      consumed(slot);
    }
    return delivered;
  }
  // A SEND: a small AM (the frame alone) or a medium AM (the frame, then bulk_len bytes of payload).
  template <class Sink>
  bool deliver_send(std::uint32_t slot, std::uint32_t byte_len, Sink& sink) {
    const std::byte* buf = dev_.recv_buffers() + slot * slot_bytes_ + frame_offset_;
    std::memcpy(&rx_frame_, buf, sizeof rx_frame_);
    if (byte_len < sizeof(am::Frame) + frame_offset_) {
      sink(static_cast<const void*>(&rx_frame_), byte_len);  // the AM layer counts it short
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
      std::memcpy(dev_.segment() + rx_frame_.bulk_off, buf + sizeof(am::Frame), payload);
    sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
    return true;
  }
  template <class Sink>
  bool deliver_store(std::uint32_t imm, std::uint32_t byte_len, Sink& sink) {
    const std::uint32_t slot = imm & 0xffff, handler = imm >> 16;
    if (slot >= header_slots_) {
      ++counters_.bad_imm;
      return false;
    }
    std::memcpy(&rx_frame_, dev_.headers() + slot * 64, sizeof rx_frame_);
    if (rx_frame_.handler != handler || rx_frame_.bulk_len != byte_len) {  // header and write disagree: refuse both
      ++counters_.bad_imm;
      return false;
    }
    sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
    return true;
  }
  void consumed(std::uint32_t slot) {
    repost_[repost_n_++] = slot;
    if (repost_n_ >= recv_batch_) repost();
  }
  void repost();
  [[noreturn]] void fail_arm(int err, const char* which);
  [[noreturn]] void completion_error(const ibv_wc& wc, const char* what);

  Device& dev_;
  std::function<bool()> peer_alive_;
  Address peer_;
  std::uint64_t posted_ = 0, completed_ = 0, sq_depth_;  // WRs
  std::uint64_t ops_posted_ = 0, ops_done_ = 0, tracked_ = 0;  // send operations (LocalCompletion)
  bool track_ = false, sq_blocked_ = false;
  std::uint64_t signal_every_;
  std::uint32_t max_inline_;
  int recv_batch_, cq_batch_;
  std::uint32_t segment_bytes_, own_segment_bytes_;
  std::uint32_t medium_max_;  // stores up to this many bytes are medium AMs
  std::uint32_t header_slots_;
  ibv_ah* ah_;
  std::uint32_t slot_bytes_, frame_offset_, tx_slot_bytes_;
  std::uint32_t next_header_ = 0;
  std::vector<std::uint32_t> repost_;
  int repost_n_ = 0;
  std::uint64_t empty_polls_ = 0;
  // All sized once (sq_depth): nothing on the datapath allocates.
  std::vector<std::uint64_t> op_of_wr_;      // WR number -> operations complete once it is
  std::vector<std::uint64_t> get_wr_;        // the i-th get's WR number (ring, in posting order)
  std::vector<am::Frame> get_frames_;        // its reply frame
  std::uint64_t gets_posted_ = 0, gets_delivered_ = 0;
  // Event mode: whether each CQ is armed, and receive completions taken while closing the arm race.
  bool recv_armed_ = false, send_armed_ = false;
  ibv_wc stash_[32];
  int stash_n_ = 0;
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

}  // namespace logpb::verbs
