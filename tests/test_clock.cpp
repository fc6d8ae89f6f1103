#include <catch2/catch.hpp>

#include <cmath>

#include "common/clock.hpp"

using namespace logpb;

TEST_CASE("TSC calibration agrees with what the CPU reports") {
  const Clock c;
  CHECK(c.hz() > 1e8);
  CHECK(c.hz() < 1e10);
  CHECK(c.cpuid().invariant);
  // The reported rate (CPUID or hypervisor leaf) and the measured one describe the same counter.
  if (std::isfinite(c.cpuid_disagreement())) CHECK(c.cpuid_disagreement() < 0.02);
  CHECK(c.timer_cost_cycles() > 0);
  CHECK(c.ns(c.cycles(1000.0)) == Approx(1000).epsilon(1e-3));
}

TEST_CASE("the busy delay is not optimised away and lasts what was asked") {
  const Clock c;
  const BusyDelay d(c);
  // Medians of many runs: robust to a preemption, so this holds on a loaded machine too.
  const double a = d.achieved_ns(10000, 501);
  CHECK(a >= 9900);
  CHECK(a < 12000);
  CHECK(d.achieved_ns(0, 101) < 500);
}
