// TSC clock: the time base of every measurement.
//
// All methods time with the time-stamp counter. Reads on the timed path are cheap (`now()`), with an
// lfence before rdtsc so the read is not hoisted above the loads/stores being timed; `now_end()` uses
// rdtscp, which waits for earlier instructions to retire, followed by an lfence so later work does not
// start before the read. The frequency is calibrated against CLOCK_MONOTONIC_RAW and cross-checked with
// what CPUID (leaves 0x15/0x16 or the hypervisor leaf 0x40000010) reports.
#pragma once

#include <cstdint>
#include <string>

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
inline void spin_until(std::uint64_t deadline) noexcept {
  while (__rdtsc() < deadline) {
  }
}
}  // namespace tsc

struct CpuidTsc {
  bool invariant = false;      // CPUID 0x80000007 EDX[8]
  double reported_hz = 0;      // from CPUID 0x15, 0x16 or the hypervisor leaf, 0 if none
  std::string reported_by;     // which leaf gave reported_hz
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
  // Relative disagreement between the two calibration windows; large means the TSC or the VM is unstable.
  double calibration_spread() const { return calibration_spread_; }
  const CpuidTsc& cpuid() const { return cpuid_; }
  // Relative difference to the CPUID-reported frequency, or NaN when CPUID reports none.
  double cpuid_disagreement() const;

 private:
  double hz_ = 0, ns_per_cycle_ = 0;
  double timer_cost_cycles_ = 0;
  double calibration_spread_ = 0;
  CpuidTsc cpuid_;
};

// The compute delay Delta of the Culler signature and the work loop of Doerfler & Brightwell: a busy
// spin to a TSC deadline. It occupies the CPU like computation and cannot be optimised away.
class BusyDelay {
 public:
  explicit BusyDelay(const Clock& c) : clock_(&c) {}
  void run(std::uint64_t cycles) const noexcept {
    if (cycles) tsc::spin_until(__rdtsc() + cycles);
  }
  // Measures the achieved length of a requested delay (median of `reps` timed runs), in ns.
  double achieved_ns(double requested_ns, int reps = 2000) const;
  // The mean achieved length over at least `min_total_ms` of delays. Unlike the median it includes the
  // interrupts and VM exits that land in a delay at their natural rate, as they land in a long timed
  // burst: subtracting it from a burst's per-message cost leaves no interrupt share of Delta behind.
  double achieved_mean_ns(double requested_ns, double min_total_ms = 100) const;

 private:
  const Clock* clock_;
};

}  // namespace logpb
