// libfabric datapath: the AM layer over one OFI endpoint (rdm: every peer in its address vector) or one
// connected endpoint per peer (msg), all completing into one CQ read in batches (fi_cq_read). The control
// path (fi_getinfo, fabric, domain, endpoints, addresses, memory registration) is ofi/connect.hpp.
//
// A message is a 64-byte frame with up to kPayloadMax bytes of payload behind it:
//  - a small AM is the frame alone: fi_inject when it fits inject_size and --ofi-completion is inject (the
//    call returns complete, no completion entry), else fi_sendmsg from a tx slot with the completion flag
//    the user chose, so flood, overlap and availability wait for exactly that (describe() says what);
//  - a store of up to kPayloadMax bytes is one message, the frame and its payload (like verbs' medium AM);
//  - a larger store goes by fi_write into the peer's registered segment, then the frame, when the
//    provider has FI_RMA and orders a send after a write (FI_ORDER_SAW); otherwise as data messages of
//    kPayloadMax bytes each (seq kChunk, never delivered) followed by the frame. Both rely on messages of
//    one sender arriving in order (FI_ORDER_SAS, asked in the hints).
//  - a get is fi_read (FI_RMA only); its completion is delivered locally as the peer's reply.
// A store may take more operations than the send queue has room for: it posts what fits and returns
// false, and the AM layer's retry of the same store goes on from there.
//
// Receives are pre-posted: FI_MULTI_RECV buffers where the provider has them (each message lands packed
// behind the last; a buffer is posted again once the provider releases it), else a ring of
// one-message slots per endpoint, each posted again as soon as its frame was handed up.
//
// Local completion (LocalCompletion): operations (try_send, try_store) are numbered from 1. An injected
// one is complete when fi_inject returns; the others own tx slots, each complete when its CQ entry comes.
// tx_completed() is the number up to which every operation is complete (the oldest slot still out, less
// one). Gets take a slot but are no operation.
//
// Errors: a failed call throws PeerError naming the call and fi_strerror's text; a CQ error entry is read
// with fi_cq_readerr and named by operation, peer and the provider's own text (fi_cq_strerror).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/call_guard.hpp"
#include "common/frame.hpp"
#include "common/transport.hpp"
#include "ofi/errors.hpp"
#include "ofi/options.hpp"

namespace logpb::ofi {

inline constexpr std::uint32_t kPayloadMax = 4096;    // payload bytes in one message
inline constexpr std::uint32_t kChunk = 0xfffffffeu;  // seq of a data message of a store: copied, never delivered
inline constexpr int kCqBatch = 16;                   // completions taken per fi_cq_read

enum class BulkPath { rma, messages };

// The fi_sendmsg/fi_writemsg flag of a completion mode (FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE,
// FI_DELIVERY_COMPLETE); also the tx op_flags asked of fi_getinfo.
std::uint64_t completion_flag(Completion c);

struct Counters {
  std::uint64_t injects = 0, sends = 0, writes = 0, reads = 0, chunks = 0, eagain = 0, recvs = 0, reposts = 0,
                medium_stores = 0, bulk_stores = 0, gets = 0, staged = 0, short_or_bad = 0, bad_src = 0, bad_bulk = 0,
                stashed = 0, tracked = 0, reposts_deferred = 0;
};

// One peer as the datapath reaches it.
struct PeerLink {
  fid_ep* ep = nullptr;             // rdm: the one endpoint; msg: this peer's connection (null: not a peer)
  fi_addr_t addr = FI_ADDR_UNSPEC;  // rdm: its address vector entry
  std::uint64_t segment_addr = 0;   // the target address of its segment's byte 0 (FI_MR_VIRT_ADDR: a pointer)
  std::uint64_t segment_key = 0;
  std::uint32_t segment_bytes = 0;
};

// What the control path hands the datapath.
struct Setup {
  int rank = 0, size = 0;
  EpType ep = EpType::rdm;
  fid_cq* cq = nullptr;
  fid_eq* eq = nullptr;  // msg: connection events (a peer's FI_SHUTDOWN)
  std::size_t inject_size = 0;
  std::size_t tx_size = 256, rx_size = 256;  // the provider's queue sizes
  bool multi_recv = false, mr_local = false, rma = false, order_saw = false;
  Completion completion = Completion::inject;
  std::byte* segment = nullptr;
  std::uint32_t segment_bytes = 0;
  void* segment_desc = nullptr;
  // Registers a buffer of ours (tx slots, receive buffers, staging) when the provider wants local
  // registration (FI_MR_LOCAL); returns its descriptor (null when not needed).
  std::function<void*(void*, std::size_t, std::uint64_t)> register_local;
  std::function<bool()> peer_alive;
  bool yield_when_idle = false;
};

class Transport {
 public:
  explicit Transport(Setup s);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // The peers' endpoints: rdm, one endpoint and each rank's AV address (posts the receives once);
  // msg, one connected endpoint per peer (posts that endpoint's ring before it connects).
  void attach_rdm(fid_ep* ep, const std::vector<fi_addr_t>& addrs);
  void attach_msg(int rank, fid_ep* ep);
  void set_remote_segment(int rank, std::uint64_t addr, std::uint64_t key, std::uint32_t bytes);
  // The job's liveness, once connected. It also starts the guard on calls into the provider
  // (common/call_guard.hpp), so a provider that never returns after a peer died still ends the run.
  void set_peer_alive(std::function<bool()> f, const std::string& provider);

  bool try_send(const am::Frame& f) {
    PeerLink& p = peer(f.dst);
    if (inject_frames_) {
      alignas(64) am::Frame out;
      std::memcpy(&out, &f, sizeof out);
      out.seq = tx_seq_;
      guard_.enter("fi_inject");
      const ssize_t r = fi_inject(p.ep, &out, sizeof out, p.addr);
      guard_.leave();
      if (r != 0) return retry_or_fail(r, "fi_inject", f.dst);
      ++tx_seq_;
      ++counters_.injects;
      ++ops_posted_;
      return true;
    }
    return send_message(p, f, nullptr, 0, false, true);
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  template <class Sink>
  int poll(Sink&& sink) {
    int n = 0;
    if (deferred_) [[unlikely]]
      n += drain_deferred(sink);
    if (!repost_.empty()) [[unlikely]]
      retry_reposts();
    fi_cq_data_entry e[kCqBatch];
    guard_.enter("fi_cq_read");
    const ssize_t r = fi_cq_read(cq_, e, kCqBatch);
    guard_.leave();
    if (r > 0) {
      for (ssize_t i = 0; i < r; ++i) n += handle(e[i], sink);
    } else if (r != -FI_EAGAIN) [[unlikely]] {
      cq_failed(r);
    }
    return n;
  }

  // LocalCompletion (common/transport.hpp).
  std::uint64_t tx_posted() const { return ops_posted_; }
  void track_next() { ++counters_.tracked; }  // every slot's operation reports completion anyway
  std::uint64_t tx_completed() {
    drive();
    return slot_head_ == slot_tail_ ? ops_posted_ : slots_[slot_head_ & slot_mask_].op - 1;
  }

  // IdleWait: yields only when the job has more ranks than cores.
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }

  bool peer_alive() const;
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  const Counters& counters() const { return counters_; }
  BulkPath bulk_path() const { return bulk_; }
  // What the control path found (provider, fabric, domain, attributes), the head of describe().
  void set_provider_json(nlohmann::json j) { provider_json_ = std::move(j); }

 private:
  // Every operation's context starts with the provider's fi_context2 (FI_CONTEXT/FI_CONTEXT2 modes), so
  // a CQ entry's op_context leads back to it.
  enum class CtxKind : std::uint8_t { tx, rx_multi, rx_slot };
  struct Ctx {
    fi_context2 fc;
    CtxKind kind;
  };
  enum class TxKind : std::uint8_t { send, write, read };
  struct Slot {
    Ctx ctx;
    TxKind kind = TxKind::send;
    bool done = true;
    std::uint16_t peer = 0;
    std::uint64_t op = 0;  // operations before this one are not held back by it: tx_completed <= op - 1
    std::byte* buf = nullptr;
  };
  struct RxBuf {
    Ctx ctx;
    fid_ep* ep = nullptr;  // where it is posted
    int peer = -1;         // msg: the one peer of that endpoint (-1: any)  // msg: the endpoint it was posted on
    std::uint32_t index = 0;
    std::byte* buf = nullptr;
    std::size_t bytes = 0;
  };
  // A store the send queue could not take whole: how far it got, so the AM layer's retry goes on.
  struct Partial {
    bool active = false;
    std::uint16_t dst = 0;
    const void* src = nullptr;
    std::uint32_t n = 0, remote_off = 0, done = 0;
    bool data_done = false;
  };

  PeerLink& peer(std::uint16_t dst) {
    if (dst >= peers_.size() || !peers_[dst].ep) [[unlikely]]
      bad_dst(dst);
    return peers_[dst];
  }
  [[noreturn]] void bad_dst(std::uint16_t dst) const;

  bool slot_free(std::uint64_t k = 1) const { return slot_tail_ - slot_head_ + k <= slot_n_; }
  Slot& take_slot(TxKind kind, std::uint16_t peer) {
    Slot& s = slots_[slot_tail_++ & slot_mask_];
    s.kind = kind;
    s.done = false;
    s.peer = peer;
    s.op = ops_posted_ + 1;
    return s;
  }
  void untake_slot() { --slot_tail_; }
  void complete_slot(Slot& s) {
    s.done = true;
    while (slot_head_ != slot_tail_ && slots_[slot_head_ & slot_mask_].done) ++slot_head_;
  }

  // One message: the frame (seq: the next, or kChunk for a store's data message), then n bytes of payload;
  // ends_op: it is the last message of an operation. fi_inject when the user's completion is inject and
  // it fits, else fi_sendmsg from a tx slot.
  bool send_message(PeerLink& p, const am::Frame& f, const void* payload, std::uint32_t n, bool chunk, bool ends_op);
  // -FI_EAGAIN: the queue is full; drive the provider (it may progress only inside fi_cq_read) and say
  // false, so the AM layer polls and retries. Anything else ends the run.
  bool retry_or_fail(ssize_t r, const char* call, int peer);
  // Reads the CQ outside poll(): transmit completions are taken at once, receives kept in order for the
  // next poll() (the caller may be a handler, which must not run another).
  void drive();

  template <class Sink>
  int handle(const fi_cq_data_entry& e, Sink& sink) {
    Ctx* c = static_cast<Ctx*>(e.op_context);
    if (c->kind == CtxKind::tx) {
      Slot& s = *reinterpret_cast<Slot*>(c);
      const bool get = s.kind == TxKind::read;
      complete_slot(s);
      if (!get) return 0;
      std::memcpy(&rx_frame_, s.buf, sizeof rx_frame_);
      sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
      return 1;
    }
    RxBuf& b = *reinterpret_cast<RxBuf*>(c);
    int n = 0;
    if ((e.flags & FI_RECV) && e.len) {
      ++counters_.recvs;
      const std::byte* msg = c->kind == CtxKind::rx_multi ? static_cast<const std::byte*>(e.buf) : b.buf;
      if (accept(msg, e.len, b.peer)) {
        sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
        n = 1;
      }
    }
    if (c->kind == CtxKind::rx_slot || (e.flags & FI_MULTI_RECV)) post_recv(b);
    return n;
  }
  // Validates a message's shape and copies its payload into the segment; the frame lands in rx_frame_.
  // False: not to be delivered (a store's data message, or refused and counted).
  bool accept(const std::byte* msg, std::size_t len, int from) {
    if (len < sizeof(am::Frame)) [[unlikely]] {
      ++counters_.short_or_bad;
      return false;
    }
    std::memcpy(&rx_frame_, msg, sizeof rx_frame_);
    if (from >= 0 && rx_frame_.src != from) [[unlikely]] {  // a msg endpoint is one peer's alone
      ++counters_.bad_src;
      return false;
    }
    const std::size_t payload = len - sizeof(am::Frame);
    if (payload == 0 && rx_frame_.seq != kChunk) return true;  // a bulk store's data came by fi_write or messages
    if (payload != rx_frame_.bulk_len) [[unlikely]] {
      ++counters_.short_or_bad;
      return false;
    }
    if (rx_frame_.bulk_off <= segment_bytes_ && payload <= segment_bytes_ - rx_frame_.bulk_off) [[likely]]
      std::memcpy(segment_ + rx_frame_.bulk_off, msg + sizeof(am::Frame), payload);
    else
      ++counters_.bad_bulk;  // uncopied; the AM layer refuses the frame (bad_bulk)
    return rx_frame_.seq != kChunk;
  }
  // Posts b again; a provider out of receive entries for now (-FI_EAGAIN, or shm's -FI_ENOMEM while its
  // unexpected messages hold them) gets it again at the next poll, after fi_cq_read has progressed.
  void post_recv(RxBuf& b);
  void retry_reposts();
  template <class Sink>
  int drain_deferred(Sink& sink) {
    int n = 0;
    while (local_head_ != local_tail_) {
      std::memcpy(&rx_frame_, &local_[local_head_++ % local_.size()], sizeof rx_frame_);
      sink(static_cast<const void*>(&rx_frame_), sizeof rx_frame_);
      ++n;
    }
    // Receives read by drive(): in order, each through handle() (which also re-posts their buffers).
    while (stash_head_ != stash_tail_) n += handle(stash_[stash_head_++ % stash_.size()], sink);
    deferred_ = false;
    return n;
  }
  [[noreturn]] void cq_failed(ssize_t r);
  bool store_rma(PeerLink& p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool store_messages(PeerLink& p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  void* local_desc(const void* src, std::uint32_t n, const void*& from);

  int rank_, size_;
  EpType ep_type_;
  fid_cq* cq_;
  fid_eq* eq_;
  std::vector<PeerLink> peers_;
  std::size_t inject_size_;
  bool multi_recv_, mr_local_, rma_;
  BulkPath bulk_;
  Completion completion_;
  std::uint64_t send_flags_;  // fi_sendmsg/fi_writemsg flags: the completion the user chose
  bool inject_frames_;        // small AMs by fi_inject
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  void* segment_desc_;
  std::function<void*(void*, std::size_t, std::uint64_t)> register_local_;
  std::function<bool()> peer_alive_;
  bool yield_when_idle_;
  mutable bool shutdown_seen_ = false;
  mutable std::string shutdown_what_;

  // Tx slots: a ring of kSlotBytes-sized message buffers, taken in order, freed as their completions come
  // (in any order) and reclaimed from the head.
  std::uint32_t slot_bytes_ = 0;
  std::vector<Slot> slots_;
  struct alignas(64) Line {
    std::byte b[64];
  };
  std::vector<Line> tx_region_;
  void* tx_desc_ = nullptr;
  std::uint64_t slot_n_ = 0, slot_mask_ = 0, slot_head_ = 0, slot_tail_ = 0;
  std::uint64_t ops_posted_ = 0;
  std::uint32_t tx_seq_ = 0;
  Partial partial_;
  std::vector<Line> staging_;  // a store's data from outside the segment, when FI_MR_LOCAL
  void* staging_desc_ = nullptr;

  // Receive buffers: kMultiBuffers multi-receive buffers, or rx_ring_ slots per endpoint.
  std::vector<std::unique_ptr<RxBuf>> rx_;
  std::vector<Line> rx_region_;
  std::size_t rx_region_bytes_ = 0, multi_bytes_ = 0;
  void* rx_desc_ = nullptr;
  std::uint32_t rx_ring_ = 0;
  std::vector<RxBuf*> repost_;  // buffers the provider could not take yet

  // Completions held for the next poll(): gets' frames and receives read by drive().
  bool deferred_ = false;
  std::vector<am::Frame> local_;
  std::uint64_t local_head_ = 0, local_tail_ = 0;
  std::vector<fi_cq_data_entry> stash_;
  std::uint64_t stash_head_ = 0, stash_tail_ = 0;

  nlohmann::json provider_json_;
  CallGuard guard_;  // brackets every datapath call into the provider
  alignas(64) am::Frame rx_frame_{};
  Counters counters_;
};

}  // namespace logpb::ofi
