// A network interface with no wire: what the AM layer costs by itself (common/harness_cost.hpp).
//
// try_send stores the frame in a small ring in this process; poll() hands the oldest one back, turned
// into the frame the peer would have answered with, so the endpoint validates and dispatches it as a
// real arrival: a request comes back as the peer's reply, a one-way request or a credit frame as the
// peer's own. Nothing else happens: a send through it costs the AM layer plus one 64-byte store, and a
// receive the AM layer reading the frame where it lies, as the shm transport's poll() hands over a slot.
// Source and destination are swapped on the way back, so whichever rank the endpoint is, the frame comes
// from the rank it sent to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"
#include "common/transport.hpp"

namespace logpb {

class NullTransport {
 public:
  // Room for a batch of sends and the credit frame their receipt may add: a full ring would stall the
  // endpoint's reply or credit send, which waits for room without polling.
  static constexpr std::uint32_t kSlots = 256;

  // While held, poll() finds nothing (an NI whose receive queue is empty), so a timed run of sends holds
  // only the sends: request() and oneway() poll once each.
  void hold(bool on) noexcept { held_ = on; }
  std::uint32_t queued() const noexcept { return tail_ - head_; }

  bool try_send(const am::Frame& f) noexcept {
    if (tail_ - head_ == kSlots) return false;
    am::Frame& s = ring_[tail_ & (kSlots - 1)];
    s = f;
    s.seq = tail_++;
    return true;
  }

  // The slot stays occupied until its frame's handler returns: a reply or credit frame sent from inside
  // it cannot overwrite the frame being dispatched.
  template <class Sink>
  int poll(Sink&& sink) {
    if (held_ || head_ == tail_) return 0;
    am::Frame& f = ring_[head_ & (kSlots - 1)];
    std::swap(f.src, f.dst);
    if (f.kind == am::Kind::request) f.kind = am::Kind::reply;
    sink(static_cast<const void*>(&f), sizeof f);
    ++head_;
    return 1;
  }

  bool peer_alive() const noexcept { return true; }
  std::span<std::byte> segment() noexcept { return {}; }
  nlohmann::json describe() const {
    return {{"name", "null"}, {"ring_slots", kSlots}, {"wire", "none: frames are handed back in this process"}};
  }

 private:
  alignas(64) am::Frame ring_[kSlots];
  std::uint32_t head_ = 0, tail_ = 0;
  bool held_ = false;
};
static_assert(Transport<NullTransport>);

}  // namespace logpb
