#include "common/clock.hpp"

#include <cpuid.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/stats.hpp"

namespace logpb {
namespace {

std::uint64_t mono_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// One calibration window: TSC cycles per ns of CLOCK_MONOTONIC_RAW over about `ms` milliseconds.
// Each end is taken as the TSC read closest to a clock_gettime call (the tightest of a few tries), so a
// preemption between the two reads does not bias the result.
double tsc_per_ns(double ms) {
  auto sample = [](std::uint64_t& t_tsc, std::uint64_t& t_ns) {
    std::uint64_t best = ~0ull;
    for (int i = 0; i < 5; ++i) {
      const std::uint64_t a = tsc::now();
      const std::uint64_t n = mono_raw_ns();
      const std::uint64_t b = tsc::now_end();
      if (b - a < best) {
        best = b - a;
        t_tsc = a + (b - a) / 2;
        t_ns = n;
      }
    }
  };
  std::uint64_t c0 = 0, n0 = 0, c1 = 0, n1 = 0;
  sample(c0, n0);
  const std::uint64_t until = n0 + static_cast<std::uint64_t>(ms * 1e6);
  while (mono_raw_ns() < until) {
  }
  sample(c1, n1);
  return static_cast<double>(c1 - c0) / static_cast<double>(n1 - n0);
}

}  // namespace

CpuidTsc read_cpuid_tsc() {
  CpuidTsc r;
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    r.invariant = (d >> 8) & 1u;
  }
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002u + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    r.brand = brand;
    r.brand.erase(0, r.brand.find_first_not_of(' '));
  }
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 0x15) {
    __cpuid_count(0x15, 0, a, b, c, d);  // TSC/crystal ratio b/a, crystal Hz in c
    if (a && b && c) {
      r.reported_hz = static_cast<double>(c) * b / a;
      r.reported_by = "cpuid 0x15";
    }
  }
  // Hypervisors (KVM, VMware) publish the TSC rate in kHz at 0x40000010 when the leaf range covers it.
  if (r.reported_hz == 0) {
    __cpuid(0x40000000u, a, b, c, d);
    if (a >= 0x40000010u && a < 0x40010000u) {
      __cpuid(0x40000010u, a, b, c, d);
      if (a) {
        r.reported_hz = static_cast<double>(a) * 1e3;
        r.reported_by = "cpuid 0x40000010 (hypervisor)";
      }
    }
  }
  if (r.reported_hz == 0 && max_leaf >= 0x16) {
    __cpuid(0x16, a, b, c, d);  // processor base MHz: equals the TSC rate on most Intel parts
    if (a & 0xffff) {
      r.reported_hz = static_cast<double>(a & 0xffff) * 1e6;
      r.reported_by = "cpuid 0x16 (base frequency)";
    }
  }
  return r;
}

TscSteps tsc_steps(const std::vector<std::uint64_t>& reads) {
  std::vector<double> d;
  d.reserve(reads.size());
  for (std::size_t i = 1; i < reads.size(); ++i)
    if (reads[i] > reads[i - 1]) d.push_back(static_cast<double>(reads[i] - reads[i - 1]));
  TscSteps s;
  if (d.empty()) return s;
  s.smallest = *std::min_element(d.begin(), d.end());
  s.typical = median_of(std::move(d));
  return s;
}

Clock::Clock(const Options& opt) : cpuid_(read_cpuid_tsc()) {
  if (!cpuid_.invariant && !opt.allow_variant_tsc)
    throw std::runtime_error(
        "this CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8): TSC times would drift with "
        "frequency changes and differ between cores. Re-run with --allow-variant-tsc to measure anyway.");
  const double r1 = tsc_per_ns(opt.calibrate_ms / 2);
  const double r2 = tsc_per_ns(opt.calibrate_ms / 2);
  calibration_spread_ = std::fabs(r1 - r2) / std::max(r1, r2);
  hz_ = (r1 + r2) / 2 * 1e9;
  ns_per_cycle_ = 1e9 / hz_;

  std::vector<std::uint64_t> d(2001);
  for (auto& x : d) {
    const std::uint64_t a = tsc::now();
    const std::uint64_t b = tsc::now_end();
    x = b - a;
  }
  timer_cost_cycles_ = median_of(std::vector<double>(d.begin(), d.end()));

  // Consecutive reads, each pair at least one step apart (a TSC that steps is read several times per step).
  std::vector<std::uint64_t> reads;
  reads.reserve(20001);
  reads.push_back(__rdtsc());
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t b;
    while ((b = __rdtsc()) == reads.back()) {
    }
    reads.push_back(b);
  }
  const TscSteps steps = tsc_steps(reads);
  resolution_ns_ = ns(steps.typical);
  smallest_step_ns_ = ns(steps.smallest);
}

double Clock::cpuid_disagreement() const {
  if (cpuid_.reported_hz <= 0) return std::nan("");
  return std::fabs(hz_ - cpuid_.reported_hz) / cpuid_.reported_hz;
}

namespace {

// The half-width of the median of intervals (sorted here), NaN under six.
double interval_ci95(std::vector<double>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  return median_ci95_of_sorted(intervals);
}

}  // namespace

bool probe_precise_enough(const std::vector<double>& chunk_stolen, std::vector<double>& intervals_us, double watched_ms,
                          const ProbePrecision& p) {
  if (watched_ms < p.min_ms || static_cast<int>(intervals_us.size()) + 1 < p.min_count) return false;
  const Estimate stolen = mean_ci95(chunk_stolen);
  const bool clear_of_limit = stolen.value - stolen.ci95 > p.limit || stolen.value + stolen.ci95 < p.limit;
  if (!(stolen.ci95 <= p.stolen_ci95 || clear_of_limit)) return false;  // NaN (one chunk) settles nothing
  if (!p.interval_read) return true;
  const double ci = interval_ci95(intervals_us);
  const double med = median_of(intervals_us);
  return ci <= p.interval_rel_ci95 * med;
}

Interruptions measure_interruptions(const Clock& clock, double window_ms, double threshold_ns,
                                    const ProbePrecision* early) {
  Interruptions r;
  r.max_window_ms = window_ms;
  r.threshold_ns = threshold_ns;
  const std::uint64_t thr = clock.cycles(threshold_ns);
  // Chunks for the stolen fraction's interval: the default's length where no early stop was asked for.
  const std::uint64_t chunk = clock.cycles((early ? early->chunk_ms : ProbePrecision{}.chunk_ms) * 1e6);
  std::vector<std::uint64_t> at, len;
  at.reserve(4096);
  len.reserve(4096);
  std::vector<double> chunks, iv_us;
  std::uint64_t start = __rdtsc(), end = start + clock.cycles(window_ms * 1e6);
  std::uint64_t prev = start, chunk_start = start, chunk_stolen = 0;
  for (;;) {
    std::uint64_t t = __rdtsc();
    if (t - prev > thr && at.size() < 100000) {
      if (!at.empty()) iv_us.push_back(clock.ns(prev - at.back()) / 1e3);
      at.push_back(prev);
      len.push_back(t - prev);
      chunk_stolen += t - prev;
    }
    prev = t;
    if (t - chunk_start >= chunk) {
      chunks.push_back(static_cast<double>(chunk_stolen) / static_cast<double>(t - chunk_start));
      chunk_stolen = 0;
      if (early && t < end && probe_precise_enough(chunks, iv_us, clock.ns(t - start) / 1e6, *early)) {
        end = t;
        r.stopped_early = true;
        break;
      }
      // The check's own time (a sort of the intervals, microseconds) is not an interruption.
      prev = chunk_start = __rdtsc();
    }
    if (t >= end) break;
  }
  r.window_ms = clock.ns(end - start) / 1e6;
  r.count = static_cast<int>(at.size());
  std::vector<double> iv, ln;
  double stolen = 0;
  for (std::size_t i = 0; i < at.size(); ++i) {
    ln.push_back(clock.ns(len[i]) / 1e3);
    stolen += clock.ns(len[i]);
    if (i) iv.push_back(clock.ns(at[i] - at[i - 1]) / 1e3);
  }
  r.median_interval_us = median_of(iv);
  r.median_interval_ci95_us = interval_ci95(iv);
  r.median_length_us = median_of(ln);
  r.max_length_us = ln.empty() ? std::nan("") : *std::max_element(ln.begin(), ln.end());
  r.stolen_fraction = stolen / (r.window_ms * 1e6);
  r.stolen_fraction_ci95 = mean_ci95(chunks).ci95;
  return r;
}

double BusyDelay::achieved_ns(double requested_ns, int reps) const {
  const std::uint64_t cyc = clock_->cycles(requested_ns);
  std::vector<std::uint64_t> d(static_cast<std::size_t>(std::max(reps, 1)));
  for (auto& x : d) {
    const std::uint64_t a = tsc::now();
    run(cyc);
    const std::uint64_t b = tsc::now_end();
    x = b - a;
  }
  return clock_->ns(median_of(std::vector<double>(d.begin(), d.end())) - clock_->timer_cost_cycles());
}

}  // namespace logpb
