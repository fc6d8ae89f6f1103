// Verbs datapath: small AMs as SEND (inline when the device allows), receives pre-posted and refilled in
// batches, selective signaling, busy-polled CQs. Bulk store: the AM header is RDMA-written into a slot
// of the peer's header ring, then the data is RDMA-written WITH IMM into the peer's segment; the
// immediate names the handler and the header slot, and since an RC QP places writes in order, the
// header is there when the immediate's completion is. Bulk get: RDMA READ, completed locally.
#pragma once

#include <infiniband/verbs.h>

#include <arpa/inet.h>

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
  int recv_batch = 32;    // receives are re-posted this many at a time, in one chained post
  int cq_batch = 16;      // completions taken per ibv_poll_cq
};

struct Counters {
  std::uint64_t sends = 0, signaled = 0, sq_full = 0, recvs = 0, stores = 0, store_bytes = 0, gets = 0,
                get_bytes = 0, reposts = 0, cq_events = 0, bad_imm = 0;
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
    return post(wr);
  }

  template <class Sink>
  int poll(Sink&& sink) {
    if (gets_pending_) [[unlikely]] reap_sends(sink);
    ibv_wc wc[32];
    const int n = ibv_poll_cq(dev_.recv_cq(), cq_batch_, wc);
    if (n <= 0) {
      if (n < 0) throw PeerError("ibv_poll_cq(recv) failed: the device or its context is gone");
      // While waiting, look at the send CQ now and then: a send that failed (the peer is unreachable,
      // retries exhausted) reports only there, and it must end the run at once, not after a timeout.
      if ((++empty_polls_ & 1023) == 0) reap_sends(sink);
      if (events_) wait_event();
      return 0;
    }
    int delivered = 0;
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) completion_error(wc[i], "receive");
      const auto slot = static_cast<std::uint32_t>(wc[i].wr_id);
      ++counters_.recvs;
      if (wc[i].opcode == IBV_WC_RECV) {
        std::memcpy(&rx_frame_, dev_.recv_buffers() + slot * slot_bytes_ + frame_offset_, sizeof rx_frame_);
        if (wc[i].byte_len >= sizeof(am::Frame) + frame_offset_) {
          sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
          ++delivered;
        } else {
          sink(static_cast<const void*>(&rx_frame_), wc[i].byte_len);  // the AM layer counts it short
        }
      } else if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (deliver_store(ntohl(wc[i].imm_data), sink)) ++delivered;
      }
      consumed(slot);
    }
    return delivered;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {dev_.segment(), segment_bytes_}; }
  nlohmann::json describe() const;

 private:
  static constexpr std::uint64_t kGetTag = 1ull << 63;

  bool sq_room(int wrs) {
    if (posted_ - completed_ + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    reap_sends([](const void*, std::size_t) {});
    if (posted_ - completed_ + static_cast<std::uint64_t>(wrs) < sq_depth_) return true;
    ++counters_.sq_full;
    return false;
  }
  // A frame travels inline when the device allows it, else from a registered slot of the tx ring.
  void frame_sge(const am::Frame& f, ibv_sge& sge, ibv_send_wr& wr) {
    if (max_inline_ >= sizeof(am::Frame)) {
      sge.addr = reinterpret_cast<std::uint64_t>(&f);
      wr.send_flags = IBV_SEND_INLINE;
    } else {
      std::byte* slot = dev_.tx_buffers() + (posted_ % sq_depth_) * 64;
      std::memcpy(slot, &f, sizeof f);
      sge.addr = reinterpret_cast<std::uint64_t>(slot);
      sge.lkey = dev_.tx_lkey();
    }
    sge.length = sizeof(am::Frame);
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  bool post(ibv_send_wr& wr) {
    if (ah_) {  // UD: every send names the peer
      wr.wr.ud.ah = ah_;
      wr.wr.ud.remote_qpn = dev_.peer_qpn();
      wr.wr.ud.remote_qkey = Device::kUdQkey;
    }
    ++posted_;
    wr.wr_id |= posted_;
    // Selective signaling: a completion every signal_every posts tells that all before it are done.
    if (posted_ % signal_every_ == 0 || (wr.wr_id & kGetTag)) {
      wr.send_flags |= IBV_SEND_SIGNALED;
      ++counters_.signaled;
    }
    ibv_send_wr* bad = nullptr;
    if (int r = ibv_post_send(dev_.qp(), &wr, &bad)) {
      --posted_;
      throw PeerError(std::string("ibv_post_send failed: ") + std::strerror(r) + " (the QP left RTS: the peer is gone?)");
    }
    ++counters_.sends;
    return true;
  }
  template <class Sink>
  void reap_sends(Sink&& sink) {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(dev_.send_cq(), 16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) completion_error(wc[i], "send");
      completed_ = std::max(completed_, wc[i].wr_id & ~kGetTag);
      if (wc[i].wr_id & kGetTag) deliver_get(wc[i].wr_id & ~kGetTag, sink);
    }
  }
  template <class Sink>
  void deliver_get(std::uint64_t post_no, Sink& sink) {
    const am::Frame& f = get_frames_[post_no % sq_depth_];
    --gets_pending_;
    sink(static_cast<const void*>(&f), sizeof f);
  }
  template <class Sink>
  bool deliver_store(std::uint32_t imm, Sink& sink) {
    const std::uint32_t slot = imm & 0xffff, handler = imm >> 16;
    if (slot >= Device::kHeaderSlots) {
      ++counters_.bad_imm;
      return false;
    }
    std::memcpy(&rx_frame_, dev_.headers() + slot * 64, sizeof rx_frame_);
    if (rx_frame_.handler != handler) {  // the header and the immediate disagree: refuse both
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
  void wait_event();
  [[noreturn]] void completion_error(const ibv_wc& wc, const char* what);

  Device& dev_;
  std::function<bool()> peer_alive_;
  Address peer_;
  std::uint64_t posted_ = 0, completed_ = 0, sq_depth_;
  std::uint64_t signal_every_;
  std::uint32_t max_inline_;
  int recv_batch_, cq_batch_;
  bool events_;
  std::uint32_t segment_bytes_;
  ibv_ah* ah_;
  std::uint32_t slot_bytes_, frame_offset_;
  std::uint32_t repost_[512];
  int repost_n_ = 0;
  std::uint32_t next_header_ = 0;
  int gets_pending_ = 0;
  std::uint64_t empty_polls_ = 0;
  std::vector<am::Frame> get_frames_;
  alignas(64) am::Frame rx_frame_{};
  Counters counters_;
};

}  // namespace logpb::verbs
