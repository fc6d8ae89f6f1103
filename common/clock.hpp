// TSC clock: the time base of every measurement.
//
// All methods time with the time-stamp counter. Reads on the timed path are cheap (`now()`), with an
// lfence before rdtsc so the read is not hoisted above the loads/stores being timed; `now_end()` uses
// rdtscp, which waits for earlier instructions to retire, followed by an lfence so later work does not
// start before the read. The frequency is calibrated against CLOCK_MONOTONIC_RAW and cross-checked with
// what CPUID (leaves 0x15/0x16 or the hypervisor leaf 0x40000010) reports.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <x86intrin.h>

namespace logpb {

namespace tsc {
inline std::uint64_t now() noexcept {
  _mm_lfence();
  return __rdtsc();
}
inline std::uint64_t now_end() noexcept {
  unsigned aux;
  const std::uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}
// Busy wait until the TSC reaches `deadline`. Reads the TSC each turn, so no optimiser can remove it.
// Returns the last TSC read (at or past the deadline).
inline std::uint64_t spin_until(std::uint64_t deadline) noexcept {
  std::uint64_t t;
  while ((t = __rdtsc()) < deadline) {
  }
  return t;
}
}  // namespace tsc

// The steps a TSC is seen to advance by between consecutive reads, in cycles (zero differences left out).
// `typical` is their median: on a TSC that counts every cycle it is the cost of a read, on one a hypervisor
// advances in ~10 ns steps it is that step. `smallest` is kept apart because it is not the resolution: such
// a TSC splits about one step in ten into two (26 cycles seen as 1 + 25), so a figure cannot move by it.
struct TscSteps {
  double typical = NAN, smallest = NAN;  // NaN with no nonzero difference
};
TscSteps tsc_steps(const std::vector<std::uint64_t>& reads);

struct CpuidTsc {
  bool invariant = false;   // CPUID 0x80000007 EDX[8]
  double reported_hz = 0;   // from CPUID 0x15, 0x16 or the hypervisor leaf, 0 if none
  std::string reported_by;  // which leaf gave reported_hz
  std::string brand;
};
CpuidTsc read_cpuid_tsc();

// A calibrated clock. Built once per process, before any timed loop.
class Clock {
 public:
  struct Options {
    double calibrate_ms = 100;  // length of each calibration window against CLOCK_MONOTONIC_RAW
    bool allow_variant_tsc = false;
  };
  explicit Clock(const Options& opt);
  Clock() : Clock(Options{}) {}

  double hz() const { return hz_; }
  double ns(std::uint64_t cycles) const { return static_cast<double>(cycles) * ns_per_cycle_; }
  double ns(double cycles) const { return cycles * ns_per_cycle_; }
  std::uint64_t cycles(double ns) const { return static_cast<std::uint64_t>(ns * hz_ * 1e-9 + 0.5); }

  // Median cost of one back-to-back now()/now_end() pair, in cycles: what a timed interval adds.
  double timer_cost_cycles() const { return timer_cost_cycles_; }
  // The clock's resolution: the typical (median nonzero) step between consecutive TSC reads, in ns (see
  // TscSteps). A median can only move in such steps, so no interval of a timed figure is reported
  // narrower than this: it is the floor of every ci95.
  double resolution_ns() const { return resolution_ns_; }
  // The smallest step seen, in ns: a record of how the TSC advances, not a resolution.
  double smallest_step_ns() const { return smallest_step_ns_; }
  // Relative disagreement between the two calibration windows; large means the TSC or the VM is unstable.
  double calibration_spread() const { return calibration_spread_; }
  const CpuidTsc& cpuid() const { return cpuid_; }
  // Relative difference to the CPUID-reported frequency, or NaN when CPUID reports none.
  double cpuid_disagreement() const;

 private:
  double hz_ = 0, ns_per_cycle_ = 0;
  double timer_cost_cycles_ = 0;
  double resolution_ns_ = 0, smallest_step_ns_ = 0;
  double calibration_spread_ = 0;
  CpuidTsc cpuid_;
};

// How often and how long this core is taken away from a spinning process (timer ticks, VM exits, other
// tasks), seen as gaps between consecutive TSC reads in a busy loop. A timed burst longer than the usual
// interval between interruptions nearly always contains one, so no median can leave it out: the
// signature keeps its bursts shorter than that where it can (docs/design.md §13; on one VM seen
// here the 1 kHz tick costs ~35 us, 3-7% of the core).
struct Interruptions {
  double window_ms = 0;        // how long the loop watched
  double max_window_ms = 0;    // how long it would have watched (the probe stops early only with a ProbePrecision)
  bool stopped_early = false;  // its intervals below were narrow enough before max_window_ms
  int count = 0;               // gaps above threshold_ns
  double threshold_ns = 0;
  double median_interval_us = NAN;  // between the starts of consecutive interruptions
  double median_interval_ci95_us = NAN;  // distribution-free half-width of that median (NaN under 6 intervals)
  double median_length_us = NAN, max_length_us = NAN;
  double stolen_fraction = 0;  // of the window
  // Student-t half-width of the stolen fraction, from the fractions of the window's chunks (ProbePrecision's
  // chunk_ms; NaN under two chunks)
  double stolen_fraction_ci95 = NAN;
};

// More than this share of a core taken by interruptions, before or after a run, fails the check "the core
// stayed available" (app/main.cpp).
inline constexpr double kCoreTakenLimit = 0.15;

// When a probe has watched long enough: after min_ms and min_count interruptions, once its own 95% intervals
// settle what it is read for. The stolen fraction is read by the check against kCoreTakenLimit: it is settled
// when its half-width is at most stolen_ci95 (a fifteenth of that limit) or its whole interval lies on one side
// of the limit. The median interval sets the signature's burst cap, a quarter of it, which leaves room: at
// 0.4 of the interval one burst in three held an interruption and the median moved (app/main.cpp). Within 25%
// the cap stays under 0.25 x 1.25 = 0.31 of the true interval, below that one in three. Fewer than min_count
// interruptions never suffice: where they are rare, only the whole window tells how rare.
struct ProbePrecision {
  double min_ms = 30;
  double chunk_ms = 5;
  double stolen_ci95 = 0.01;        // the stolen fraction's half-width, as a fraction of the core
  double limit = kCoreTakenLimit;   // ... or its interval clear of this
  double interval_rel_ci95 = 0.25;  // the median interval's half-width over the median
  bool interval_read = true;        // false after a run: nothing reads its median interval then
  int min_count = 20;
};
// Whether a probe may stop: chunk_stolen holds its chunks' stolen fractions, intervals_us the intervals between
// the interruptions it saw (reordered), watched_ms how long it has watched.
bool probe_precise_enough(const std::vector<double>& chunk_stolen, std::vector<double>& intervals_us, double watched_ms,
                          const ProbePrecision& p);
// Watches for window_ms; with `early`, stops sooner once probe_precise_enough holds (checked at each chunk's end).
Interruptions measure_interruptions(const Clock& clock, double window_ms = 200, double threshold_ns = 2000,
                                    const ProbePrecision* early = nullptr);

// The compute delay Delta of the Culler signature and the work loop of Doerfler & Brightwell: a busy
// spin to a TSC deadline. It occupies the CPU like computation and cannot be optimised away.
class BusyDelay {
 public:
  explicit BusyDelay(const Clock& c) : clock_(&c) {}
  void run(std::uint64_t cycles) const noexcept {
    if (cycles) tsc::spin_until(__rdtsc() + cycles);
  }
  // The same delay, returning the cycles it actually took (from its first TSC read to its last), so a
  // timed loop can subtract exactly the Delta it spent rather than a calibration taken elsewhere.
  std::uint64_t run_measured(std::uint64_t cycles) const noexcept {
    if (!cycles) return 0;
    const std::uint64_t t0 = __rdtsc();
    return tsc::spin_until(t0 + cycles) - t0;
  }
  // The same delay, stamped: its first TSC read goes to `start`, its last is returned (start when cycles
  // is 0, which still costs one TSC read). Per-message stamps let a method take medians per message, so
  // the interruptions a VM scatters over a long run (a 35 us tick every millisecond here) stay out.
  std::uint64_t run_stamped(std::uint64_t cycles, std::uint64_t& start) const noexcept {
    start = __rdtsc();
    return cycles ? tsc::spin_until(start + cycles) : start;
  }
  // Measures the achieved length of a requested delay (median of `reps` timed runs), in ns.
  double achieved_ns(double requested_ns, int reps = 2000) const;

 private:
  const Clock* clock_;
};

}  // namespace logpb
