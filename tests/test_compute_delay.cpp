// The compute delay of fixed work (common/compute_delay): it lasts what it was calibrated to, and unlike a
// TSC deadline it stretches by what is taken from the core in its middle.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <vector>

#include "common/clock.hpp"
#include "common/compute_delay.hpp"

using logpb::BusyDelay;
using logpb::Clock;
using logpb::ComputeDelay;

namespace {
// A handler that takes the core for 50 us, as an interrupt's work would: run every 500 us, 10% of the core.
volatile sig_atomic_t g_taken = 0;
void take_core(int) {
  const std::uint64_t until = __rdtsc() + static_cast<std::uint64_t>(g_taken);
  while (__rdtsc() < until) {
  }
}
struct TakeCore {
  explicit TakeCore(std::uint64_t cycles) {
    g_taken = static_cast<sig_atomic_t>(cycles);
    struct sigaction sa {};
    sa.sa_handler = take_core;
    sigaction(SIGALRM, &sa, &old);
    const itimerval t{{0, 500}, {0, 500}};
    setitimer(ITIMER_REAL, &t, nullptr);
  }
  ~TakeCore() {
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old, nullptr);
  }
  struct sigaction old {};
};
}  // namespace

TEST_CASE("compute delay: fixed work lasts what it was calibrated to", "[compute_delay]") {
  const Clock clock;
  const ComputeDelay d(clock);
  REQUIRE(d.iterations_per_cycle() > 0);
  for (double ns : {1000.0, 10000.0, 100000.0}) {
    // The fastest of several runs: the work itself, with nothing taken from the core.
    CHECK(d.uninterrupted_ns(ns, 21) == Approx(ns).epsilon(0.10));
  }
}

TEST_CASE("compute delay: what is taken from the core stretches the work, not the deadline",
          "[compute_delay]") {
  const Clock clock;
  const ComputeDelay work(clock);
  const BusyDelay deadline(clock);
  const std::uint64_t cycles = clock.cycles(1e6);  // 1 ms: two of the handler's 50 us inside each
  std::uint64_t w = 0, d = 0;
  {
    const TakeCore taker(clock.cycles(50e3));
    for (int i = 0; i < 40; ++i) {
      w += work.run_measured(work.iterations(cycles));
      d += deadline.run_measured(cycles);
    }
  }
  const double stretch_work = static_cast<double>(w) / (40.0 * static_cast<double>(cycles));
  const double stretch_deadline = static_cast<double>(d) / (40.0 * static_cast<double>(cycles));
  INFO("work " << stretch_work << "x, deadline " << stretch_deadline << "x");
  // The handler takes 50 us of every 500: the work runs about 1/0.9 = 1.11x longer (more on a VM whose own
  // interruptions add theirs); a deadline overruns only by what straddles its end (about 0.3% here).
  CHECK(stretch_work > 1.06);
  CHECK(stretch_deadline < stretch_work - 0.05);
}
