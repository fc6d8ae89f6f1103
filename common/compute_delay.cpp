#include "common/compute_delay.hpp"

#include <algorithm>
#include <limits>

namespace logpb {

namespace {
// One step of a chain the compiler cannot shorten: each multiply-add needs the one before it.
inline std::uint64_t work(std::uint64_t n) noexcept {
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  return x;
}
}  // namespace

ComputeDelay::ComputeDelay(const Clock& c) : clock_(&c) {
  // 100k iterations (tens of microseconds), the fastest of 31: one run in three on this VM holds no tick.
  constexpr std::uint64_t kN = 100000;
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (int r = 0; r < 31; ++r) best = std::min(best, run_measured(kN));
  per_cycle_ = static_cast<double>(kN) / static_cast<double>(std::max<std::uint64_t>(best, 1));
}

std::uint64_t ComputeDelay::run_measured(std::uint64_t n) const noexcept {
  if (!n) return 0;
  const std::uint64_t t0 = __rdtsc();
  const std::uint64_t x = work(n);
  asm volatile("" : : "r"(x));
  return __rdtsc() - t0;
}

double ComputeDelay::uninterrupted_ns(double requested_ns, int reps) const {
  const std::uint64_t n = iterations(clock_->cycles(requested_ns));
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (int r = 0; r < std::max(reps, 1); ++r) best = std::min(best, run_measured(n));
  return clock_->ns(best);
}

}  // namespace logpb
