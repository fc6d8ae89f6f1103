// What the UCX transport's two datapaths share (ucx/uct_transport.hpp: the AM layer over one UCT
// interface; ucx/ucp_transport.hpp: over UCP): the wire format of a message, the inbox that carries frames
// from UCX's receive callbacks to poll(), the numbering of operations for local completion, and errors.
//
// A message is a 64-byte frame (common/frame.hpp), then the payload of a store when it travels with it.
// UCX hands received messages to a callback from inside its progress call (uct_worker_progress,
// ucp_worker_progress); the callback checks the message's shape, copies any payload into the segment
// and queues the frame, and poll() hands the queued frames to the AM layer once progress returned. So a
// handler never runs inside UCX's callback, where it could not send or progress again.
#pragma once

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/call_guard.hpp"
#include "common/errors.hpp"
#include "common/frame.hpp"
#include "common/transport.hpp"

namespace logpb::ucx {

inline constexpr std::uint8_t kAmId = 7;              // the AM id our frames use (UCT ids go to 31)
inline constexpr std::uint32_t kChunk = 0xfffffffeu;  // seq of a store's data message: copied, never delivered
inline constexpr std::uint32_t kPayloadMax = 4096;    // UCP: payload bytes sent with the frame in one AM

// A failure UCX reported inside one of its callbacks (a request or completion in error): kept there and
// thrown once the progress call returned, since an exception must not unwind through UCX's C frames.
struct CallbackError {
  ucs_status_t status = UCS_OK;
  const char* what = "";
  void set(ucs_status_t s, const char* w) {
    if (status == UCS_OK) {
      status = s;
      what = w;
    }
  }
  void rethrow() const;  // fail_datapath, if set
};

// "uct_ep_am_short failed: Destination is unreachable (UCS_ERR_UNREACHABLE = -6)"
std::string call_failed(ucs_status_t s, const char* call);
// On the datapath a failure means the job's communication broke: PeerError (exit 3).
[[noreturn]] void fail_datapath(ucs_status_t s, const char* call);
// In the control path it is a setup failure: std::runtime_error (exit 1), with what to check.
[[noreturn]] void fail_setup(ucs_status_t s, const char* call, const std::string& what_to_check = "");
inline void check_setup(ucs_status_t s, const char* call, const std::string& what_to_check = "") {
  if (s != UCS_OK) [[unlikely]]
    fail_setup(s, call, what_to_check);
}

// UCX's UD transport on a software RoCE device (rdma_rxe) drops every packet it receives by its
// destination-GID check (UCX_UD_VERBS_ETH_DGID_CHECK, on by default): in the Soft-RoCE guest, UCX 1.13.1,
// ud_verbs never connected, for logpbench and for `ucx_perftest -t am_lat -x ud_verbs` alike (both resend
// their first packet until they give up; UCX's debug log shows "resending" and nothing received), and both
// ran with the check off. UCX's source reads the packet's type (IPv4 or IPv6, so where the GID sits in the
// header) from the completion's SL field, a Mellanox convention rdma_rxe apparently does not follow. So
// where the user left the check unset and `ib_dev` (empty: any device) is a software RDMA device (one with
// a sysfs "parent", the netdev it runs on), the check is turned off through UCX's environment before UCX
// reads its configuration. Returns what was done, for meta.ucx (empty: nothing).
std::string soft_roce_ud_workaround(const std::string& ib_dev);

struct RxCounters {
  std::uint64_t messages = 0, chunks = 0, short_or_bad = 0, bad_bulk = 0, rendezvous_refused = 0, queue_grown = 0;
};

// Frames received inside a UCX callback, waiting for poll(). A ring that grows when a progress call
// brings more than it holds (never on the steady path: the AM layer's windows bound what is in flight).
class Inbox {
 public:
  Inbox(std::byte* segment, std::uint32_t segment_bytes);

  // One received message: `frame` (frame_len bytes: a frame when exactly 64) and n bytes of payload for
  // the segment at the frame's bulk_off. Refused (counted, not queued) when not a frame or when the payload
  // is not the frame's bulk_len; a store's data message (seq kChunk) lands its bytes and is not queued.
  void land(const void* frame, std::size_t frame_len, const void* payload, std::size_t n) {
    ++counters_.messages;
    if (frame_len != sizeof(am::Frame)) [[unlikely]] {
      ++counters_.short_or_bad;
      return;
    }
    am::Frame f;
    std::memcpy(&f, frame, sizeof f);
    if (n != 0 || f.seq == kChunk) {
      if (n != f.bulk_len) [[unlikely]] {
        ++counters_.short_or_bad;
        return;
      }
      if (f.bulk_off <= segment_bytes_ && n <= segment_bytes_ - f.bulk_off) [[likely]]
        std::memcpy(segment_ + f.bulk_off, payload, n);
      else
        ++counters_.bad_bulk;  // uncopied; the AM layer refuses the frame (bad_bulk)
      if (f.seq == kChunk) {
        ++counters_.chunks;
        return;
      }
    }
    push(f);
  }
  // A frame delivered locally (a get's completion), queued behind what arrived before it.
  void push(const am::Frame& f) {
    if (tail_ - head_ == ring_.size()) [[unlikely]]
      grow();
    ring_[tail_++ & (ring_.size() - 1)] = f;
  }
  bool empty() const { return head_ == tail_; }
  template <class Sink>
  int drain(Sink& sink) {
    int n = 0;
    while (head_ != tail_) {
      const am::Frame& f = ring_[head_++ & (ring_.size() - 1)];
      sink(static_cast<const void*>(&f), sizeof f);
      ++n;
    }
    return n;
  }
  void note_rendezvous_refused() { ++counters_.rendezvous_refused; }
  const RxCounters& counters() const { return counters_; }

 private:
  void grow();
  std::vector<am::Frame> ring_;
  std::uint64_t head_ = 0, tail_ = 0;
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  RxCounters counters_;
};

// Local completion (common/transport.hpp, LocalCompletion): operations numbered from 1 in the order
// they start. One that UCX completes in the call (UCS_OK, a NULL request) needs no slot (complete_now);
// one that may stay in flight takes a slot (begin) that holds one part per callback still due, and one
// more until commit(), so a callback that fires inside the call cannot free it early. completed() is the
// number up to which every operation is complete: the oldest slot still held, less one. A slot also owns
// the bytes UCX may still read (UCP's header and payload must live until the send completes).
class Ops {
 public:
  struct Slot {
    std::uint64_t op = 0;
    int parts = 0;
    Ops* owner = nullptr;
    am::Frame frame;               // the frame as sent (UCP: the AM's header)
    std::byte* payload = nullptr;  // this slot's share of the payload buffer
  };
  Ops(std::size_t slots, std::size_t payload_bytes);
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;

  bool room() const { return tail_ - head_ < slots_.size(); }
  void complete_now() { ++posted_; }
  Slot& begin() {  // room() must hold
    Slot& s = slots_[tail_++ & mask_];
    s.op = ++posted_;
    s.parts = 1;
    return s;
  }
  static void add_part(Slot& s) { ++s.parts; }
  static void part_done(Slot& s) {
    if (--s.parts == 0) s.owner->reclaim();
  }
  void commit(Slot& s) { part_done(s); }
  std::uint64_t posted() const { return posted_; }
  std::uint64_t completed() const { return head_ == tail_ ? posted_ : slots_[head_ & mask_].op - 1; }
  std::size_t in_flight() const { return tail_ - head_; }
  std::size_t slots() const { return slots_.size(); }
  // Whose slots these are: a callback that has only a slot finds its transport here.
  void set_context(void* c) { context_ = c; }
  void* context() const { return context_; }

 private:
  void reclaim() {
    while (head_ != tail_ && slots_[head_ & mask_].parts == 0) ++head_;
  }
  std::vector<Slot> slots_;
  std::vector<std::byte> payload_;
  std::uint64_t mask_ = 0, head_ = 0, tail_ = 0, posted_ = 0;
  void* context_ = nullptr;
};

// What the two datapaths share: the AM layer's side of the transport contract (common/transport.hpp:
// poll, local completion, idle, liveness, the segment) over the Inbox and the Ops, and the guard and
// callback errors around the one call into UCX that Derived::progress() makes. Peer has the endpoint `ep`.
template <class Derived, class Peer>
class Datapath {
 public:
  Datapath(const Datapath&) = delete;
  Datapath& operator=(const Datapath&) = delete;

  template <class Sink>
  int poll(Sink&& sink) {
    if (inbox_.empty()) self().progress();
    return inbox_.drain(sink);
  }
  // LocalCompletion (common/transport.hpp): every operation in flight reports its completion anyway.
  std::uint64_t tx_posted() const { return ops_.posted(); }
  void track_next() { ++tracked_; }
  std::uint64_t tx_completed() {
    if (ops_.in_flight()) self().progress();
    return ops_.completed();
  }
  // IdleWait: yields only when the job has more ranks than cores.
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }
  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  std::size_t max_bulk() const { return segment_bytes_; }

  void set_peers(std::vector<Peer> peers) { peers_ = std::move(peers); }
  void set_describe_head(nlohmann::json j) { head_ = std::move(j); }
  // The job's liveness, once connected. It also starts the guard on calls into UCX
  // (common/call_guard.hpp), so a call that never returns after a peer died still ends the run.
  void set_peer_alive(std::function<bool()> f, const std::string& library) {
    peer_alive_ = f;
    guard_.watch(
        {.stuck_s = kStuckCallS, .check_s = 0.25, .library = library, .peers_alive = std::move(f), .fire = {}});
  }

 protected:
  static constexpr double kStuckCallS = 2.0;  // a call into UCX this long with a peer gone ends the run

  Datapath(int rank, int size, std::byte* segment, std::uint32_t segment_bytes, std::function<bool()> alive,
           bool yield_when_idle, std::size_t op_slots, std::size_t op_payload_bytes)
      : rank_(rank),
        size_(size),
        segment_(segment),
        segment_bytes_(segment_bytes),
        peer_alive_(std::move(alive)),
        yield_when_idle_(yield_when_idle),
        ops_(op_slots, op_payload_bytes),
        inbox_(segment, segment_bytes) {}

  Derived& self() { return static_cast<Derived&>(*this); }
  const Peer& peer(std::uint16_t dst) const {
    if (dst >= peers_.size() || !peers_[dst].ep) [[unlikely]]
      throw PeerError("ucx: no endpoint to rank " + std::to_string(dst) + " (rank " + std::to_string(rank_) + " of " +
                      std::to_string(size_) + ")");
    return peers_[dst];
  }
  // One progress call into UCX (`call`, named for the guard), then any failure its callbacks kept.
  template <class Call>
  void progress_by(const char* name, Call&& call) {
    guard_.enter(name);
    call();
    guard_.leave();
    if (callback_error_.status != UCS_OK) [[unlikely]]
      callback_error_.rethrow();
  }
  // The head of describe(): what the control path recorded, then what both datapaths report alike.
  nlohmann::json describe_common() const {
    const RxCounters& r = inbox_.counters();
    nlohmann::json j = head_;
    j["kind"] = "ucx";
    j["rank"] = rank_;
    j["size"] = size_;
    j["frame_bytes"] = sizeof(am::Frame);
    j["stuck_call_guard_s"] = guard_.stuck_s();
    j["op_slots"] = ops_.slots();
    j["segment_bytes"] = segment_bytes_;
    j["counters"] = {{"tracked", tracked_},
                     {"rx_messages", r.messages},
                     {"rx_chunks", r.chunks},
                     {"rx_short_or_bad", r.short_or_bad},
                     {"rx_bad_bulk", r.bad_bulk},
                     {"rx_rendezvous_refused", r.rendezvous_refused},
                     {"rx_queue_grown", r.queue_grown}};
    return j;
  }

  int rank_, size_;
  std::vector<Peer> peers_;
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  std::function<bool()> peer_alive_;
  bool yield_when_idle_;
  std::uint32_t tx_seq_ = 0;
  std::uint64_t tracked_ = 0;
  Ops ops_;
  Inbox inbox_;
  CallbackError callback_error_;
  nlohmann::json head_;
  CallGuard guard_;
};

std::string hex(const void* p, std::size_t n);
std::vector<std::uint8_t> unhex(const std::string& s, const char* what);  // runtime_error when malformed

}  // namespace logpb::ucx
