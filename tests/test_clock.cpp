#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

TEST_CASE("the TSC's resolution is its typical step, not the smallest one") {
  // A TSC a hypervisor advances in 26-cycle steps, one step in ten split in two (1 + 25): the figure a
  // median can move by is 26 cycles; 1 cycle is an artefact of the split.
  std::vector<std::uint64_t> reads{1000};
  for (int i = 0; i < 40; ++i) {
    if (i % 10 == 9) {
      reads.push_back(reads.back() + 1);
      reads.push_back(reads.back() + 25);
    } else {
      reads.push_back(reads.back() + 26);
    }
  }
  reads.push_back(reads.back());          // a read within the same step: no step at all
  reads.push_back(reads.back() + 50000);  // an interruption
  const TscSteps s = tsc_steps(reads);
  CHECK(s.typical == 26);
  CHECK(s.smallest == 1);
  CHECK(std::isnan(tsc_steps({}).typical));
  CHECK(std::isnan(tsc_steps({5, 5, 5}).typical));
  CHECK(std::isnan(tsc_steps({7, 3}).smallest));  // backwards (another core's TSC) is not a step
}

TEST_CASE("on this machine the resolution is no finer than a TSC read") {
  const Clock c;
  CHECK(c.smallest_step_ns() > 0);
  CHECK(c.resolution_ns() >= c.smallest_step_ns());
  // Two reads cannot be closer than one read takes, so the typical step is at least the cost of a read:
  // equal to it on a TSC that counts every cycle (Intel), above it on one that steps (AMD VMs: ~10 ns).
  // The cost is the least mean over batches of back-to-back reads, so an interrupted batch does not count.
  double read_cycles = INFINITY;
  for (int b = 0; b < 20; ++b) {
    constexpr int kReads = 1000;
    const std::uint64_t t0 = __rdtsc();
    std::uint64_t t = t0;
    for (int i = 0; i < kReads; ++i) t = __rdtsc();
    read_cycles = std::min(read_cycles, static_cast<double>(t - t0) / kReads);
  }
  INFO("read cost " << c.ns(read_cycles) << " ns, resolution " << c.resolution_ns() << " ns, smallest step "
                    << c.smallest_step_ns() << " ns");
  CHECK(c.resolution_ns() >= 0.8 * c.ns(read_cycles));
}

TEST_CASE("an interruption probe stops early only once its intervals settle what it is read for") {
  const ProbePrecision p;  // 30 ms at least, 20 interruptions, 1 point or clear of 15%, interval within 25%
  // A quiet core: a 1 kHz tick taking 5% of it, 5 ms chunks alike.
  std::vector<double> tick_chunks(6, 0.05), tick(29, 1000.0);
  CHECK(probe_precise_enough(tick_chunks, tick, 30, p));
  CHECK_FALSE(probe_precise_enough(tick_chunks, tick, 25, p));  // before min_ms
  std::vector<double> few(10, 1000.0);
  CHECK_FALSE(probe_precise_enough(tick_chunks, few, 30, p));  // under min_count
  // A busy core: chunks from 20% to 100% taken, far above the limit, settles the check however wide.
  std::vector<double> busy{0.2, 1.0, 0.6, 0.9, 0.3, 0.8};
  CHECK(probe_precise_enough(busy, tick, 30, p));
  // Chunks straddling the limit, neither narrow nor clear of it: not settled.
  std::vector<double> straddle{0.0, 0.3, 0.05, 0.25, 0.1, 0.2};
  CHECK_FALSE(probe_precise_enough(straddle, tick, 30, p));
  // Intervals of 300 and 1000 us alike often: the median's interval is wider than 25% of it.
  std::vector<double> spread;
  for (int i = 0; i < 29; ++i) spread.push_back(i % 2 ? 1000.0 : 300.0);
  CHECK_FALSE(probe_precise_enough(tick_chunks, spread, 30, p));
  CHECK_FALSE(probe_precise_enough({0.05}, tick, 30, p));  // one chunk: no interval at all
  // After the run nothing reads the median interval: the stolen share alone settles it.
  const ProbePrecision after{.interval_read = false};
  CHECK(probe_precise_enough(tick_chunks, spread, 30, after));
  CHECK_FALSE(probe_precise_enough(straddle, spread, 30, after));
}

TEST_CASE("an interruption probe records how long it watched and its own intervals") {
  const Clock c;
  const Interruptions fixed = measure_interruptions(c, 50);
  CHECK(fixed.max_window_ms == 50);
  CHECK_FALSE(fixed.stopped_early);
  CHECK(fixed.window_ms == Approx(50).epsilon(0.01));
  CHECK(std::isfinite(fixed.stolen_fraction_ci95));  // 5 ms chunks: NaN only if one gap took 40 ms
  // With a rule, never past the window and never before min_ms.
  const ProbePrecision p{.min_ms = 10};
  const Interruptions early = measure_interruptions(c, 40, 2000, &p);
  CHECK(early.window_ms <= 40 * 1.01);
  CHECK(early.window_ms >= 10);
  CHECK((early.stopped_early || early.window_ms == Approx(40).epsilon(0.01)));
}
