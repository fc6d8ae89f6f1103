// A compute delay of fixed work (issue 36 item 5): a chain of dependent multiply-adds calibrated on this
// core to last a given time, against BusyDelay's TSC deadline (common/clock.hpp). What the kernel or the host
// takes from the core in the middle of a deadline counts as delay and is never seen; the same work
// stretches instead, as the fixed computation of the papers does (Culler et al. 3.2's Delta, Bell et al.'s
// overlap loop), so its length against its uninterrupted length shows what was taken.
#pragma once

#include <cstdint>

#include "common/clock.hpp"

namespace logpb {

class ComputeDelay {
 public:
  // Calibrates on the calling core: the loop's speed is the fastest of several timed runs (the speed when
  // nothing took the core).
  explicit ComputeDelay(const Clock& c);
  // Iterations that take `cycles` TSC cycles uninterrupted.
  std::uint64_t iterations(std::uint64_t cycles) const noexcept {
    return static_cast<std::uint64_t>(static_cast<double>(cycles) * per_cycle_ + 0.5);
  }
  // Runs `n` iterations; returns the TSC cycles they took.
  std::uint64_t run_measured(std::uint64_t n) const noexcept;
  // The uninterrupted length of the work that `requested_ns` asks for: the fastest of `reps` timed runs.
  double uninterrupted_ns(double requested_ns, int reps = 51) const;
  double iterations_per_cycle() const noexcept { return per_cycle_; }

 private:
  const Clock* clock_;
  double per_cycle_ = 0;
};

}  // namespace logpb
