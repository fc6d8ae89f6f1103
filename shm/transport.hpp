// The shm transport: the ranks of a job on one host, one cache-line slot per small AM in a shared
// mapping, busy polling. The fastest NI this machine can have, and the embedded default.
//
// A mesh of rings: one single-producer/single-consumer slot ring per ordered pair of ranks, so a
// sender never shares a ring and its frames to one peer arrive in order; one registered segment per
// rank, where the others' bulk stores land and from which they get. poll() serves every incoming ring,
// round robin from the one after the last that delivered, at most one frame per call.
//
// The NI is a policy (ShmTransport<Wire>, ShmTransport<EmulatedNI>), chosen once when the transport is
// built: Wire is the rings as they are and its hooks fold away, so the real NI's hot path carries no
// emulation branch; EmulatedNI makes the rings a LogP machine with known parameters (emulation.hpp).
// The emulator's own time stamps are plain rdtsc, not the fenced reads of a timed interval: they need
// no ordering against the loads and stores around them, and on some CPUs a fenced read is slow enough
// (docs/results/lab-notes.md) that every fence would add to the overheads the emulated NI is meant to set
// exactly.
//
// Layout of the mapping: a control page (format, shape, each rank's pid), then per ordered pair
// (src, dst) the slot ring, the emulation's visibility stamps and the receiver's consumed counter, then
// one registered segment per rank.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/frame.hpp"
#include "common/transport.hpp"
#include "shm/emulation.hpp"

namespace logpb {
class Ranks;
}  // namespace logpb

namespace logpb::shm {

// A rank's doorbell (one cache line in the region's control page), used only by an emulated NI that
// sleeps: the rank sets `sleeping` and waits on `seq` (a futex); a sender that publishes a frame to it
// and sees `sleeping` bumps `seq` and wakes it.
struct alignas(64) ShmBell {
  std::atomic<std::uint32_t> seq{0};
  std::atomic<std::uint32_t> sleeping{0};
  void wait(std::uint32_t seen, std::uint64_t cycles, double ns_per_cycle) noexcept;  // at most `cycles`
  void ring() noexcept;
};

struct ShmOptions {
  int ring_slots = 1024;                  // per ordered pair of ranks, a power of two >= 8
  std::uint32_t segment_bytes = 1 << 20;  // per rank
  // More ranks than cores: idle_wait() gives the core away (sched_yield) so every rank progresses.
  // This one is each rank's own; the two above are the region's, set by its creator.
  bool yield_when_idle = false;
};

// The shared mapping of a job of `ranks` ranks: anonymous (created before a fork) or named in /dev/shm.
class ShmRegion {
 public:
  static ShmRegion create_anonymous(int ranks, const ShmOptions& opt);
  static ShmRegion create_named(const std::string& name, int ranks, const ShmOptions& opt);
  static ShmRegion open_named(const std::string& name);
  ShmRegion(ShmRegion&& o) noexcept;
  ShmRegion& operator=(ShmRegion&&) = delete;
  ~ShmRegion();
  void* base() const { return base_; }
  std::size_t bytes() const { return bytes_; }
  void unlink();  // removes the /dev/shm name once every rank has mapped it

  // The shape, as the creator wrote it into the control page.
  int ranks() const;
  std::uint32_t ring_slots() const;
  std::uint32_t segment_bytes() const;
  // The ring carrying frames from rank src to rank dst (src != dst).
  struct Ring {
    am::Frame* slots;
    std::uint64_t* visible;                // emulated: when each slot's frame may be seen
    std::atomic<std::uint64_t>* consumed;  // how far the receiver has read, published every quarter ring
  };
  Ring ring(int src, int dst) const;
  std::byte* segment(int rank) const;
  std::atomic<std::int32_t>& pid(int rank) const;  // 0 until that rank has attached
  ShmBell& bell(int rank) const;

  // Bytes of a region for `ranks` ranks with these options (what create needs in /dev/shm).
  static std::size_t bytes_for(int ranks, const ShmOptions& opt);

 private:
  ShmRegion(void* b, std::size_t n, std::string name) : base_(b), bytes_(n), name_(std::move(name)) {}
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
};

// This rank's view of the other ranks' processes: publishes our pid into the region, reads theirs and
// holds a pidfd for each (readable once that process exits, zombie or not, whoever its parent is).
class ShmPeers {
 public:
  ShmPeers(const ShmRegion& region, int rank);  // publishes our pid
  ShmPeers(const ShmPeers&) = delete;
  ShmPeers& operator=(const ShmPeers&) = delete;
  ~ShmPeers();
  // Waits (polling, up to timeout_s) until every rank has published its pid, then opens the pidfds.
  void wait(double timeout_s);
  // After a barrier of every rank: all pids must be there already.
  void open();
  bool all_alive() const;
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  void open_pidfds();
  const ShmRegion& region_;
  int rank_;
  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;  // -1 for ourselves
};

namespace detail {

struct TxRing {  // toward one peer
  am::Frame* slots = nullptr;
  std::uint64_t* visible = nullptr;
  std::atomic<std::uint64_t>* consumed = nullptr;  // written by the peer
  std::byte* segment = nullptr;                    // the peer's registered segment
  ShmBell* bell = nullptr;                         // the peer's doorbell
  std::uint64_t tail = 0, cached_consumed = 0;
};

struct RxRing {  // from one peer
  const am::Frame* slots = nullptr;
  const std::uint64_t* visible = nullptr;
  std::atomic<std::uint64_t>* consumed = nullptr;  // written by us
  std::uint64_t head = 0;
  std::uint16_t src = 0;  // the rank that writes this ring: the only source its frames may name
  // The frame at the head when its sender has published it (its seq is the head's), else null.
  const am::Frame* ready(std::uint64_t mask) const noexcept {
    const am::Frame* s = &slots[head & mask];
    return std::atomic_ref<const std::uint32_t>(s->seq).load(std::memory_order_acquire) ==
                   static_cast<std::uint32_t>(head + 1)
               ? s
               : nullptr;
  }
};

}  // namespace detail

// The real NI: frames are visible as soon as their slot is written, a send is complete when it
// returns. Every hook is empty or trivial and the compiler removes it.
class Wire {
 public:
  Wire(const Clock&, const Emulation&, std::size_t, int) {}
  static constexpr bool emulated = false;
  std::uint64_t enter() const noexcept { return 0; }
  void depart(std::uint64_t&, std::uint64_t, std::uint64_t, std::uint32_t) noexcept {}
  void leave_send(std::uint64_t, std::uint32_t) const noexcept {}
  std::uint64_t get_arrival(std::uint64_t, std::uint32_t) noexcept { return 0; }
  void leave_get(std::uint64_t) const noexcept {}
  bool local_arrived(std::uint64_t) const noexcept { return true; }
  std::uint64_t completed(std::uint64_t posted) const noexcept { return posted; }
  void track_next() noexcept {}
  static constexpr int batch() noexcept { return 1; }
  bool room() const noexcept { return true; }
  // Round robin: the first ring from `start` on whose head is published.
  int next_arrival(const detail::RxRing* rx, int n, int start, std::uint64_t mask) const noexcept {
    for (int k = 0, i = start; k < n; ++k) {
      if (rx[i].ready(mask)) return i;
      if (++i == n) i = 0;
    }
    return -1;
  }
  nlohmann::json describe() const;
};

// The emulated NI (docs/design.md §8). LogP is per NI, not per pair:
// this rank's departures, to whichever peer, are at least g apart (one next-departure time shared by all
// its outgoing rings), and so are its arrivals, from whichever peer (one last-arrival time shared by all
// its incoming rings). A replier hit by K requesters thus serves them at 1/g in all, as LogP says (the
// contention LoGPC, Moritz & Frank section 3, builds on). Arrivals are taken in the order they became
// visible, as one NI's receive queue would hold them.
class EmulatedNI {
 public:
  // max_in_flight: the most sends that can be posted and not yet complete (every ring's slots); rank picks
  // this NI's own stream of jitter draws from the seed.
  EmulatedNI(const Clock& clock, const Emulation& e, std::size_t max_in_flight, int rank);
  static constexpr bool emulated = true;
  std::uint64_t enter() const noexcept { return __rdtsc(); }
  // A frame leaves: sets its visibility stamp and when send operation `op` completes locally.
  void depart(std::uint64_t& visible, std::uint64_t op, std::uint64_t t_enter, std::uint32_t bulk_len) noexcept {
    const std::uint64_t ready = t_enter + os_ + static_cast<std::uint64_t>(os_per_byte_ * bulk_len);
    // LogGP: a message holds the wire for g + G*n (Bell et al.'s per-message time), and its last byte
    // leaves G*n after its first, so it is visible G*n + L after departure and locally complete G*n after
    // (plus the completion latency cq: an RC NI reports a send once the peer's ACK is back).
    const std::uint64_t wire = static_cast<std::uint64_t>(G_ * bulk_len);
    const std::uint64_t dep = unstalled(std::max(ready, next_departure_));
    std::uint64_t g = g_, L = L_;
    if (jitter_L_ > 0) [[unlikely]] {
      L += draw_exponential(jitter_L_);
      g += draw_exponential(jitter_g_);
    }
    next_departure_ = dep + g + wire;
    const std::size_t slot = op & done_mask_;
    done_at_[slot] = dep + wire + cq_;
    signalled_[slot] = (op + 1) % signal_every_ == 0 || track_pending_;
    track_pending_ = false;
    visible = dep + wire + L;
  }
  // The next send is one the caller will wait for: signalled unless the NI signals only every k-th (rs=k).
  void track_next() noexcept { track_pending_ = signal_tracked_; }
  std::uint64_t completion_stride() const noexcept { return signal_tracked_ ? 1 : signal_every_; }
  // LogP's capacity constraint on this NI's queue: a send stalls while C messages already wait to depart
  // (one-way messages have no AM window to hold them; requests do, and never reach it unless the CPU
  // outruns g).
  bool room() const noexcept { return cap_g_ == 0 || next_departure_ <= __rdtsc() + cap_g_; }
  // The sender spends o_s(n) inside send, counted from its entry.
  void leave_send(std::uint64_t t_enter, std::uint32_t bulk_len) const noexcept {
    wait_until(t_enter + os_ + static_cast<std::uint64_t>(os_per_byte_ * bulk_len));
  }
  // A get completes after o_s, a round trip of 2L and G per byte; it departs like a send.
  std::uint64_t get_arrival(std::uint64_t t_enter, std::uint32_t n) noexcept {
    const std::uint64_t dep = std::max(t_enter + os_, next_departure_);
    next_departure_ = dep + g_;
    return dep + 2 * L_ + static_cast<std::uint64_t>(G_ * n);
  }
  void leave_get(std::uint64_t t_enter) const noexcept { wait_until(t_enter + os_); }
  bool local_arrived(std::uint64_t visible) noexcept {
    const std::uint64_t now = __rdtsc();
    if (now < visible) {
      pending_ = visible;
      return false;
    }
    wait_until(now + or_);
    return true;
  }
  // Sends complete in order; the caller learns of it only through a signalled one (signal=k, rs=k), which
  // reports every send before it as well.
  std::uint64_t completed(std::uint64_t posted) noexcept {
    if (done_ < posted) {
      const std::uint64_t now = __rdtsc();
      while (done_ < posted && done_at_[done_ & done_mask_] <= now) {
        if (signalled_[done_ & done_mask_]) reported_ = done_ + 1;
        ++done_;
      }
    }
    return reported_;
  }
  // The earliest visible head of any ring, once it may arrive: no earlier than its departure + L, and
  // no sooner than g after this NI's previous arrival. o_r is padded from the moment polling began, so
  // the real cost of pulling the line over from the other core is inside it rather than added on top
  // (as o_s is padded from send entry). A request also holds the receiver for the emulated handler time.
  int next_arrival(const detail::RxRing* rx, int n, int, std::uint64_t mask) noexcept {
    // The clock is read only once a frame is there: an empty poll (every send's AM poll first) then costs no
    // rdtsc, which is ~20 ns on some AMD VMs and would ride on every emulated overhead, outside its padding.
    const am::Frame* frame = nullptr;
    const int best = earliest(rx, n, mask, frame);
    if (best < 0) return -1;
    const std::uint64_t t_entry = __rdtsc();
    const std::uint64_t arrive = unstalled(std::max(rx[best].visible[rx[best].head & mask], last_arrival_ + g_));
    if (__rdtsc() < arrive) {
      pending_ = arrive;
      return -1;
    }
    last_arrival_ = arrive;
    wait_until(std::max(t_entry, arrive) + or_ + static_cast<std::uint64_t>(or_per_byte_ * frame->bulk_len) +
               (frame->kind == am::Kind::request ? h_ : 0));
    return best;
  }
  // When the next frame already published to us may arrive (UINT64_MAX: none is).
  std::uint64_t next_due(const detail::RxRing* rx, int n, std::uint64_t mask) const noexcept {
    const am::Frame* frame = nullptr;
    const int best = earliest(rx, n, mask, frame);
    return best < 0 ? UINT64_MAX : unstalled(std::max(rx[best].visible[rx[best].head & mask], last_arrival_ + g_));
  }
  // Frames one poll may hand up.
  int batch() const noexcept { return batch_; }
  // Sleeping (set_waiting): overheads are slept, and an idle rank sleeps until its next arrival is due.
  void set_waiting(bool ranks_share_cores);
  bool sleeping() const noexcept { return sleep_; }
  std::uint64_t max_sleep() const noexcept { return max_sleep_; }
  std::uint64_t spin_margin() const noexcept { return spin_margin_; }
  double ns_per_cycle() const noexcept { return ns_per_cycle_; }
  std::uint64_t take_pending() noexcept {
    const std::uint64_t p = pending_;
    pending_ = UINT64_MAX;
    return p;
  }
  void wait_until(std::uint64_t deadline) const noexcept {
    if (sleep_) [[unlikely]]
      sleep_until(deadline);
    else
      tsc::spin_until(deadline);
  }
  nlohmann::json describe() const;
  const Emulation& emulation() const { return emu_; }

 private:
  static int earliest(const detail::RxRing* rx, int n, std::uint64_t mask, const am::Frame*& frame) noexcept {
    int best = -1;
    std::uint64_t best_visible = 0;
    for (int i = 0; i < n; ++i) {
      if (const am::Frame* s = rx[i].ready(mask)) {
        const std::uint64_t v = rx[i].visible[rx[i].head & mask];
        if (best < 0 || v < best_visible) best = i, best_visible = v, frame = s;
      }
    }
    return best;
  }
  void sleep_until(std::uint64_t deadline) const noexcept;
  // A time inside one of the NI's stalls moves to the stall's end.
  std::uint64_t unstalled(std::uint64_t t) const noexcept {
    if (stall_period_ == 0 || t < stall_epoch_) return t;
    const std::uint64_t phase = (t - stall_epoch_) % stall_period_;
    return phase < stall_ ? t + (stall_ - phase) : t;
  }
  // An exponential draw of the given mean, in cycles (inverse transform of a 53-bit uniform in (0, 1]).
  std::uint64_t draw_exponential(double mean) noexcept {
    rng_ += 0x9e3779b97f4a7c15ull;  // splitmix64
    std::uint64_t z = rng_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;
    return static_cast<std::uint64_t>(-mean * std::log(u));
  }
  std::uint64_t os_ = 0, or_ = 0, g_ = 0, L_ = 0, h_ = 0, cap_g_ = 0;
  std::uint64_t cq_ = 0, signal_every_ = 1;
  bool signal_tracked_ = true, track_pending_ = false;
  int batch_ = 1;
  double jitter_L_ = 0, jitter_g_ = 0;
  std::uint64_t rng_ = 0;
  std::uint64_t stall_period_ = 0, stall_ = 0, stall_epoch_ = 0;
  double os_per_byte_ = 0, or_per_byte_ = 0, G_ = 0;
  bool sleep_ = false;
  double ns_per_cycle_ = 0;
  std::uint64_t max_sleep_ = 0, spin_margin_ = 0, pending_ = UINT64_MAX;
  std::uint64_t next_departure_ = 0, last_arrival_ = 0;
  std::vector<std::uint64_t> done_at_;  // when each send operation completes locally, by its number
  std::vector<bool> signalled_;         // whether its completion is reported
  std::uint64_t done_mask_ = 0, done_ = 0, reported_ = 0;
  Emulation emu_;
};

template <class NI>
class ShmTransport {
 public:
  static constexpr bool ni_emulated = NI::emulated;
  // Standalone (threads of one process, or processes that share the region by other means): publishes
  // this rank's pid and waits up to attach_timeout_s for every other rank's.
  ShmTransport(const ShmRegion& region, int rank, const Clock& clock, const Emulation& emu, const ShmOptions& opt = {},
               double attach_timeout_s = 10)
      : ShmTransport(Publish{}, region, rank, clock, emu, opt) {
    peers_.wait(attach_timeout_s);
  }
  // In a job: publishes this rank's pid, waits in a barrier of every rank, then reads theirs.
  ShmTransport(const ShmRegion& region, Ranks& ranks, const Clock& clock, const Emulation& emu, const ShmOptions& opt);
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  bool try_send(const am::Frame& f) {
    TxRing& r = tx(f.dst);
    const std::uint64_t t_enter = ni_.enter();
    if (!has_room(r) || !ni_.room()) return false;
    publish(r, f, t_enter);
    return true;
  }

  // Bulk store: the bytes are copied straight into rank f.dst's segment, then the frame is published;
  // the copy happens inside the emulated o_s(n), as a CPU-driven NI (the paper's Myrinet) would do it.
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
    TxRing& r = tx(f.dst);
    const std::uint64_t t_enter = ni_.enter();
    if (!has_room(r) || !ni_.room() || remote_off > segment_bytes_ || n > segment_bytes_ - remote_off) return false;
    std::memcpy(r.segment + remote_off, src, n);
    publish(r, f, t_enter);
    return true;
  }

  // Bulk get: a one-sided copy from rank f.src's segment (no peer CPU, like RDMA READ); the frame is
  // delivered here by poll().
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
    const TxRing& r = tx(f.src);
    const std::uint64_t t_enter = ni_.enter();
    if (local_count_ == kLocalSlots || remote_off > segment_bytes_ || n > segment_bytes_ - remote_off ||
        local_off > segment_bytes_ || n > segment_bytes_ - local_off)
      return false;
    std::memcpy(my_segment_ + local_off, r.segment + remote_off, n);
    auto& c = local_[(local_head_ + local_count_) % kLocalSlots];
    c.frame = f;
    c.visible = ni_.get_arrival(t_enter, n);
    ++local_count_;
    ni_.leave_get(t_enter);
    return true;
  }
  std::size_t max_bulk() const { return segment_bytes_; }

  // Local completion: a written slot is complete at once (the receiver reads it in place, so the
  // sender's buffer is free when send returns); on an emulated NI, once the NI has sent its last byte
  // (departure + G*n), as a DMA engine would report it. Operations are numbered across all peers.
  std::uint64_t tx_posted() const noexcept { return posted_; }
  void track_next() noexcept { ni_.track_next(); }
  std::uint64_t tx_completed() noexcept { return ni_.completed(posted_); }
  std::uint64_t completion_stride() const noexcept {
    if constexpr (requires { ni_.completion_stride(); }) return ni_.completion_stride();
    return 1;
  }

  // The ring toward one peer carries our requests (window), our replies to its requests (its window,
  // the same), at most two credit frames and the one-way requests; the receiver publishes what it
  // consumed only every quarter ring, so that much more may look occupied. The one-way requests get
  // what is left. Every pair has its own ring, so this holds per peer.
  int max_credits(int window) const noexcept { return static_cast<int>(slots_ - slots_ / 4) - 2 * window - 2; }

  template <class Sink>
  int poll(Sink&& sink) {
    if (local_count_) [[unlikely]]
      if (poll_local(sink)) return 1;
    // An emulated NI may hand up several arrived frames per poll (batch=B), as a CQ polled in batches does;
    // the wire hands up one, and the loop folds away.
    int delivered = 0;
    do {
      const int i = ni_.next_arrival(rx_.data(), n_rx_, next_rx_, mask_);
      if (i < 0) break;
      RxRing& r = rx_[static_cast<std::size_t>(i)];
      const am::Frame* f = &r.slots[r.head & mask_];
      // A rank writes only its own rings, so the ring says who sent a frame, whatever the frame claims: a
      // frame naming another source (a rank forging another's requests or replies) is dropped and counted.
      if (f->src == r.src) [[likely]]
        sink(static_cast<const void*>(f), sizeof(am::Frame));
      else
        ++forged_src_;
      ++r.head;
      if ((r.head & publish_mask_) == 0) r.consumed->store(r.head, std::memory_order_release);
      next_rx_ = i + 1 == n_rx_ ? 0 : i + 1;
    } while (++delivered < ni_.batch());
    return delivered;
  }

  // Oversubscribed (yield_when_idle): give the core to another rank after an empty poll. An emulated NI
  // that sleeps sleeps here until its next arrival is due or a sender rings this rank's doorbell.
  bool idle_wait() noexcept {
    if constexpr (NI::emulated) {
      if (ni_.sleeping()) {
        sleep_for_arrival();
        return true;
      }
    }
    return yield_if_oversubscribed(yield_when_idle_);
  }

  // The spin-wait hint after an empty poll (common/transport.hpp, SpinRelax); an emulated NI keeps its
  // own time and spins without it, so its arrival stamps are seen as soon as they are due.
  void relax() noexcept {
    if constexpr (!NI::emulated) _mm_pause();
  }

  bool peer_alive() const { return peers_.all_alive(); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::span<std::byte> segment() { return {my_segment_, segment_bytes_}; }
  std::span<std::byte> segment_of(int r) { return {r == rank_ ? my_segment_ : tx(r).segment, segment_bytes_}; }
  const std::vector<pid_t>& peer_pids() const { return peers_.pids(); }
  // Frames dropped because they named a source other than the rank whose ring carried them.
  std::uint64_t forged_src() const noexcept { return forged_src_; }
  nlohmann::json describe() const;

 private:
  using TxRing = detail::TxRing;
  using RxRing = detail::RxRing;
  static constexpr std::size_t kLocalSlots = 1024;
  struct LocalCompletion {
    am::Frame frame;
    std::uint64_t visible;
  };

  // Publishes our pid; the caller then waits for the others' (peers_.wait or open).
  struct Publish {};
  ShmTransport(Publish, const ShmRegion& region, int rank, const Clock& clock, const Emulation& emu,
               const ShmOptions& opt);

  TxRing& tx(unsigned dst) {
    if (dst >= static_cast<unsigned>(size_) || dst == static_cast<unsigned>(rank_)) [[unlikely]]
      bad_rank(dst);
    return tx_[dst];
  }
  [[noreturn]] void bad_rank(unsigned dst) const;
  bool has_room(TxRing& r) noexcept {
    if (r.tail - r.cached_consumed >= slots_) {
      r.cached_consumed = r.consumed->load(std::memory_order_acquire);
      if (r.tail - r.cached_consumed >= slots_) return false;
    }
    return true;
  }
  void publish(TxRing& r, const am::Frame& f, std::uint64_t t_enter) noexcept {
    const std::size_t i = r.tail & mask_;
    am::Frame* s = &r.slots[i];
    // Fill everything but seq, then publish by storing seq: x86 keeps stores in order, and the
    // release store keeps the compiler from reordering them.
    std::memcpy(reinterpret_cast<char*>(s) + sizeof(std::uint32_t),
                reinterpret_cast<const char*>(&f) + sizeof(std::uint32_t), sizeof(am::Frame) - sizeof(std::uint32_t));
    ni_.depart(r.visible[i], posted_, t_enter, f.bulk_len);
    std::atomic_ref<std::uint32_t>(s->seq).store(static_cast<std::uint32_t>(r.tail + 1), std::memory_order_release);
    ++r.tail;
    ++posted_;
    if constexpr (NI::emulated) {
      if (ni_.sleeping()) {
        std::atomic_thread_fence(std::memory_order_seq_cst);  // the slot first, then the flag
        if (r.bell->sleeping.load(std::memory_order_relaxed)) r.bell->ring();
      }
    }
    ni_.leave_send(t_enter, f.bulk_len);
  }
  // The body sits under `if constexpr` as well: clang 14 instantiates a constrained member in the explicit
  // instantiation of ShmTransport<Wire> (transport.cpp) although its constraint fails, and Wire has no
  // take_pending (the sanitize and fuzz builds use clang).
  void sleep_for_arrival() noexcept requires NI::emulated {
    if constexpr (NI::emulated) {
      ShmBell& b = *my_bell_;
      b.sleeping.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // against publish(): flag first, then look
      const std::uint32_t seen = b.seq.load(std::memory_order_acquire);
      const std::uint64_t now = __rdtsc();
      std::uint64_t due = std::min(ni_.take_pending(), ni_.next_due(rx_.data(), n_rx_, mask_));
      if (local_count_) due = std::min(due, local_[local_head_].visible);
      // Until shortly before the frame is due (the poll loop spins the rest), or a new frame rings.
      if (due > now + ni_.spin_margin())
        b.wait(seen, std::min(due - now - ni_.spin_margin(), ni_.max_sleep()), ni_.ns_per_cycle());
      b.sleeping.store(0, std::memory_order_relaxed);
    }
  }
  template <class Sink>
  int poll_local(Sink& sink) {
    auto& c = local_[local_head_];
    if (!ni_.local_arrived(c.visible)) return 0;
    const am::Frame f = c.frame;
    local_head_ = (local_head_ + 1) % kLocalSlots;
    --local_count_;
    sink(static_cast<const void*>(&f), sizeof f);
    return 1;
  }

  // Hot fields first.
  std::vector<TxRing> tx_;  // by destination rank (our own entry unused)
  std::vector<RxRing> rx_;  // one per peer, in rank order
  int n_rx_ = 0, next_rx_ = 0;
  std::uint64_t slots_ = 0, mask_ = 0, publish_mask_ = 0;
  std::uint64_t posted_ = 0;
  std::uint64_t forged_src_ = 0;
  int rank_ = 0, size_ = 0;
  bool yield_when_idle_ = false;
  NI ni_;
  ShmBell* my_bell_ = nullptr;
  std::size_t local_head_ = 0, local_count_ = 0;
  LocalCompletion local_[kLocalSlots];

  std::byte* my_segment_ = nullptr;
  std::uint32_t segment_bytes_ = 0;
  ShmPeers peers_;
};

}  // namespace logpb::shm
