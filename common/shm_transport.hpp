// The emulator's own time stamps are plain rdtsc, not the fenced reads of a timed interval: they need no
// ordering against the loads and stores around them, and on some CPUs (an AMD VM seen here: ~20 ns per
// read) every fence would add to the overheads the emulated NI is meant to set exactly.
//
// The shm transport: two processes, one cache-line slot per small AM in a shared mapping, busy polling.
// The fastest NI this machine can have, and the embedded default. With an Emulation it becomes a LogP
// machine with known parameters (see emulation.hpp); the invariant TSC is shared by both cores, so the
// sender can stamp each message with the time it may become visible and no third thread is needed.
//
// Layout of the mapping: a control page, then per direction (0: side 0 -> side 1, 1: the reverse) the
// slot ring, the emulation's visibility stamps and the receiver's consumed counter, then one registered
// segment per side (where the other side's bulk stores land).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.hpp"
#include "emulation.hpp"
#include "frame.hpp"

namespace logpb {

struct ShmOptions {
  int ring_slots = 1024;                 // per direction, a power of two >= 8
  std::uint32_t segment_bytes = 1 << 20;  // per side
};

// The shared mapping itself: anonymous (for `local`, created before fork) or named in /dev/shm.
class ShmRegion {
 public:
  static ShmRegion create_anonymous(const ShmOptions& opt);
  static ShmRegion create_named(const std::string& name, const ShmOptions& opt);
  static ShmRegion open_named(const std::string& name);
  ShmRegion(ShmRegion&& o) noexcept;
  ShmRegion& operator=(ShmRegion&&) = delete;
  ~ShmRegion();
  void* base() const { return base_; }
  std::size_t bytes() const { return bytes_; }
  void unlink();  // removes the /dev/shm name once both sides have mapped it

 private:
  ShmRegion(void* b, std::size_t n, std::string name) : base_(b), bytes_(n), name_(std::move(name)) {}
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
};

class ShmTransport {
 public:
  // side 0 or 1. Publishes this process's pid and waits (up to attach_timeout_s) for the peer's.
  ShmTransport(const ShmRegion& region, int side, const Clock& clock, const Emulation& emu,
               double attach_timeout_s = 10);
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;
  ~ShmTransport();

  bool try_send(const am::Frame& f) noexcept {
    const std::uint64_t t_enter = emulated_ ? __rdtsc() : 0;
    if (!ring_has_room()) return false;
    publish(f, t_enter);
    return true;
  }

  // Bulk store: the bytes are copied straight into the peer's segment, then the frame is published; the
  // copy happens inside the emulated o_s(n), as a CPU-driven NI (the paper's Myrinet) would do it.
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) noexcept {
    const std::uint64_t t_enter = emulated_ ? __rdtsc() : 0;
    if (!ring_has_room() || remote_off > segment_bytes_ || n > segment_bytes_ - remote_off) return false;
    std::memcpy(peer_segment_ + remote_off, src, n);
    publish(f, t_enter);
    return true;
  }

  // Bulk get: a one-sided copy from the peer's segment (no peer CPU, like RDMA READ); the frame is
  // delivered here by poll(). Emulated: it completes after o_s, a round trip of 2L and G per byte.
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) noexcept {
    const std::uint64_t t_enter = emulated_ ? __rdtsc() : 0;
    if (local_count_ == kLocalSlots || remote_off > segment_bytes_ || n > segment_bytes_ - remote_off ||
        local_off > segment_bytes_ || n > segment_bytes_ - local_off)
      return false;
    std::memcpy(my_segment_ + local_off, peer_segment_ + remote_off, n);
    auto& c = local_[(local_head_ + local_count_) % kLocalSlots];
    c.frame = f;
    c.visible = 0;
    if (emulated_) [[unlikely]] {
      const std::uint64_t ready = t_enter + os_cycles_;
      const std::uint64_t dep = std::max(ready, next_departure_);
      next_departure_ = dep + g_cycles_;
      c.visible = dep + 2 * L_cycles_ + static_cast<std::uint64_t>(G_cycles_ * n);
    }
    ++local_count_;
    if (emulated_) [[unlikely]] tsc::spin_until(t_enter + os_cycles_);
    return true;
  }
  std::size_t max_bulk() const { return segment_bytes_; }

  // Local completion: a written slot is complete at once (the receiver reads it in place, so the sender's
  // buffer is free when send returns); on an emulated NI, once the NI has sent its last byte (departure
  // + G*n), as a DMA engine would report it.
  std::uint64_t tx_posted() const noexcept { return tail_; }
  void track_next() noexcept {}
  std::uint64_t tx_completed() noexcept {
    if (!emulated_) return tail_;
    if (done_ < tail_) {
      const std::uint64_t now = __rdtsc();
      while (done_ < tail_ && tx_done_at_[done_ & mask_] <= now) ++done_;
    }
    return done_;
  }
  // The ring toward the peer carries our requests (window), our replies to its requests (its window, the
  // same), at most two credit frames and the one-way requests; the receiver publishes what it consumed
  // only every quarter ring, so that much more may look occupied. The one-way requests get what is left.
  int max_credits(int window) const noexcept {
    return static_cast<int>(slots_ - slots_ / 4) - 2 * window - 2;
  }

 private:
  static constexpr std::size_t kLocalSlots = 1024;
  struct LocalCompletion {
    am::Frame frame;
    std::uint64_t visible;
  };
  bool ring_has_room() noexcept {
    if (tail_ - cached_consumed_ >= slots_) {
      cached_consumed_ = tx_consumed_->load(std::memory_order_acquire);
      if (tail_ - cached_consumed_ >= slots_) return false;
    }
    return true;
  }
  template <class Sink>
  int poll_local(Sink& sink) {
    auto& c = local_[local_head_];
    if (emulated_) [[unlikely]] {
      const std::uint64_t now = __rdtsc();
      if (now < c.visible) return 0;
      tsc::spin_until(now + or_cycles_);
    }
    const am::Frame f = c.frame;
    local_head_ = (local_head_ + 1) % kLocalSlots;
    --local_count_;
    sink(static_cast<const void*>(&f), sizeof f);
    return 1;
  }
  void publish(const am::Frame& f, std::uint64_t t_enter) noexcept {
    const std::size_t i = tail_ & mask_;
    am::Frame* s = &tx_slots_[i];
    // Fill everything but seq, then publish by storing seq: x86 keeps stores in order, and the
    // release store keeps the compiler from reordering them.
    std::memcpy(reinterpret_cast<char*>(s) + sizeof(std::uint32_t),
                reinterpret_cast<const char*>(&f) + sizeof(std::uint32_t), sizeof(am::Frame) - sizeof(std::uint32_t));
    if (emulated_) [[unlikely]]
      tx_visible_[i] = emulate_departure(t_enter, f.bulk_len, tx_done_at_[i]);
    std::atomic_ref<std::uint32_t>(s->seq).store(static_cast<std::uint32_t>(tail_ + 1), std::memory_order_release);
    ++tail_;
    if (emulated_) [[unlikely]]
      tsc::spin_until(t_enter + os_cycles_ + static_cast<std::uint64_t>(os_per_byte_cycles_ * f.bulk_len));
  }

 public:

  template <class Sink>
  int poll(Sink&& sink) {
    // Emulated o_r is padded from the moment polling began, so the real cost of pulling the line over
    // from the other core is inside it rather than added on top (as o_s is padded from send entry).
    if (local_count_) [[unlikely]]
      if (poll_local(sink)) return 1;
    const std::uint64_t t_entry = emulated_ ? __rdtsc() : 0;
    const std::size_t i = head_ & mask_;
    const am::Frame* s = &rx_slots_[i];
    if (std::atomic_ref<const std::uint32_t>(s->seq).load(std::memory_order_acquire) !=
        static_cast<std::uint32_t>(head_ + 1))
      return 0;
    if (emulated_) [[unlikely]] {
      // Visible no earlier than departure + L, and no sooner than g after the previous arrival here.
      const std::uint64_t arrive = std::max(rx_visible_[i], last_arrival_ + g_cycles_);
      const std::uint64_t now = __rdtsc();
      if (now < arrive) return 0;
      last_arrival_ = arrive;
      tsc::spin_until(std::max(t_entry, arrive) + or_cycles_ +
                      static_cast<std::uint64_t>(or_per_byte_cycles_ * s->bulk_len));
    }
    sink(static_cast<const void*>(s), sizeof(am::Frame));
    ++head_;
    if ((head_ & publish_mask_) == 0) rx_consumed_->store(head_, std::memory_order_release);
    return 1;
  }

  bool peer_alive() const;
  std::span<std::byte> segment() { return {my_segment_, segment_bytes_}; }
  std::span<std::byte> peer_segment() { return {peer_segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  pid_t peer_pid() const { return peer_pid_; }

 private:
  std::uint64_t emulate_departure(std::uint64_t t_enter, std::uint32_t bulk_len, std::uint64_t& sent) noexcept {
    const std::uint64_t ready =
        t_enter + os_cycles_ + static_cast<std::uint64_t>(os_per_byte_cycles_ * bulk_len);
    // LogGP: a message holds the wire for g + G*n (Bell et al.'s per-message time), and its last byte
    // leaves G*n after its first, so it is visible G*n + L after departure and locally complete G*n after.
    const std::uint64_t wire = static_cast<std::uint64_t>(G_cycles_ * bulk_len);
    const std::uint64_t dep = std::max(ready, next_departure_);
    next_departure_ = dep + g_cycles_ + wire;
    sent = dep + wire;
    return dep + wire + L_cycles_;
  }

  // Hot fields first.
  am::Frame* tx_slots_ = nullptr;
  const am::Frame* rx_slots_ = nullptr;
  std::uint64_t* tx_visible_ = nullptr;
  const std::uint64_t* rx_visible_ = nullptr;
  std::atomic<std::uint64_t>* tx_consumed_ = nullptr;  // written by the peer
  std::atomic<std::uint64_t>* rx_consumed_ = nullptr;  // written by us
  std::uint64_t tail_ = 0, head_ = 0, cached_consumed_ = 0, done_ = 0;
  std::vector<std::uint64_t> tx_done_at_;  // emulated: when each slot's send completes locally
  std::uint64_t slots_ = 0, mask_ = 0, publish_mask_ = 0;
  bool emulated_ = false;
  std::uint64_t os_cycles_ = 0, or_cycles_ = 0, g_cycles_ = 0, L_cycles_ = 0;
  double os_per_byte_cycles_ = 0, or_per_byte_cycles_ = 0, G_cycles_ = 0;
  std::uint64_t next_departure_ = 0, last_arrival_ = 0;
  std::size_t local_head_ = 0, local_count_ = 0;
  LocalCompletion local_[kLocalSlots];

  std::byte* my_segment_ = nullptr;
  std::byte* peer_segment_ = nullptr;
  std::uint32_t segment_bytes_ = 0;
  int side_ = 0;
  pid_t peer_pid_ = 0;
  int peer_pidfd_ = -1;
  Emulation emu_;
};

}  // namespace logpb
