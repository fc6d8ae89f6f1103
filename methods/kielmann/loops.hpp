// Fast measurement of parameterized LogP (Kielmann, Bal, Verstoep, section 3):
//  - g(0) by saturation: n small messages in a row and one reply, n = 10, 20, 40, ... until the gap per
//    message changes by less than eps and RTT_1 < eps * RTT_n;
//  - per size m, two round trips only: m bytes out and 0 back (the send time is o_s(m), the whole is
//    RTT(m)); 0 out, a wait Delta > RTT(m), then m bytes received (the receive time is o_r(m));
//    g(m) = RTT(m) - RTT(0) + g(0) and L = (RTT(0) - 2 g(0)) / 2;
//  - sizes 2^k, the range extended while g(2^k) misses the line through the two sizes below it, and
//    intervals halved where o_s, o_r or g miss their extrapolation by more than eps.
// Each round trip is repeated until the relative error is below eps, at most 60 times (15 for
// large messages), as in the paper.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "methods/messages.hpp"

namespace logpb::methods {

struct KielmannConfig {
  double eps = 0.01;
  int k_max_initial = 16;              // initial sizes 2^0 .. 2^k
  int max_small = 60, max_large = 15;  // the paper's caps on round trips per size
  std::uint32_t large_bytes = 32768;
  // Also time a saturation-based g(m) for every size (their Table 2's point: how much slower that is).
  // Off by default: one saturation per size costs minutes where the whole fast method takes seconds.
  bool compare_saturation = false;
  std::uint32_t max_bytes = 0;  // 0: half the segment
};

struct KielmannSize {
  std::uint32_t bytes = 0;
  double o_s = NAN, o_r = NAN, rtt = NAN, g = NAN;
  double o_s_ci = NAN, o_r_ci = NAN, rtt_ci = NAN;
  double delta_ns = NAN;  // the wait before the timed receive of o_r(m)
  int samples = 0;
  double g_saturation = NAN;  // same size, by saturation (only when compared)
  double g_saturation_ci = NAN;
};

struct KielmannResult {
  double g0 = NAN, g0_n = 0, g0_ci = NAN;
  double g0_total_over_n = NAN;  // RTT_n / n at the converged n, as the paper takes it (for the record)
  bool g0_converged = false;
  std::string g0_ci_method, g0_rule;
  int credits = 0;                  // one-way requests the saturation may have in flight (the AM layer's credit limit)
  std::vector<KielmannSize> sizes;  // ascending
  double fast_seconds = 0, saturation_seconds = 0;
  std::vector<std::string> notes;
};

namespace detail {

// Kielmann et al.'s repetition rule, as the one stop rule every method shares (stats.hpp): three samples at
// a time until the estimate's relative 95% half-width is below eps, at least 10 and at most max_n samples
// (the paper's caps: 60 small, 15 large). The estimate is the median with its order-statistic interval,
// not the paper's mean: on a shared machine one interrupt inside a timed receive would otherwise move the
// mean of a few samples by microseconds.
inline StopRule kielmann_rule(double eps, int max_n) {
  StopRule r;
  r.rel_precision = eps;
  r.batch = 3;  // LogP/MPI's increment: three round trips back to back between two looks at the statistics
  r.min_samples = std::min(10, max_n);
  r.max_samples = max_n;
  r.max_seconds = 1e9;  // the sample cap bounds it
  r.estimator = Estimator::median;
  return r;
}
template <class F>
Summary repeat_until(double eps, int max_n, F&& f) {
  return measure_point(kielmann_rule(eps, max_n), std::forward<F>(f), [] { return 0.0; }).summary;
}

// Time per message of n one-way m-byte messages in a row and one reply (Kielmann et al. section 3): the
// messages are not answered, so the time is the sender's injection gap, not a round trip per message.
// Also returns (in *steady) the stream's steady rate from the receiver's credit returns (messages.hpp).
template <class EP>
double saturation_once(EP& ep, ClientState& st, const Clock& clock, std::uint32_t m, int n, double* steady = nullptr) {
  const std::uint64_t losses = ep.loss_events();
  ep.log_credits(steady != nullptr);
  const std::uint64_t t0 = tsc::now();
  for (int i = 0; i < n; ++i) send_oneway(ep, m, static_cast<std::uint64_t>(i));
  const bool ok = final_reply(ep, st);
  const std::uint64_t t1 = tsc::now_end();
  ep.log_credits(false);
  if (!ok || ep.loss_events() != losses) return NAN;
  if (steady) *steady = credit_rate_ns(ep, clock);
  return clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) / n;
}

struct Saturation {
  double g = NAN, ci95 = NAN;
  double g_total = NAN;  // RTT_n / n at the converged n, as the paper takes it
  int n = 0;
  bool converged = false;
  std::vector<double> repeats;  // the converged n timed again: their steady rates, for the value and interval
  std::string ci_method;
  std::string rule;  // which convergence rule held
};
// Streams of the converged n timed again for g's value and interval: seven, the fewest whose median has
// a distribution-free interval (stats.cpp: order statistics, from six samples on).
inline constexpr int kSaturationRepeats = 7;

// g(m) by saturation: n = 10, 20, 40, ... until the gap per message changes by less than eps and
// RTT_1 < eps * RTT_n. On a shared machine RTT_n / n carries every interruption of a long stream and
// may never settle within eps; the streams' steady rates (the receiver's credit returns, which leave
// interruptions out) settling is taken as saturation too, and recorded as the rule that held. A stream
// longer than kMaxStreamSeconds ends the doubling. A saturation that never converges says so; it never
// returns its last value as if it had.
inline constexpr double kMaxStreamSeconds = 0.5;
template <class EP>
Saturation saturate(EP& ep, ClientState& st, const Clock& clock, std::uint32_t m, double eps, double rtt1) {
  Saturation s;
  double prev = NAN, prev_steady = NAN;
  for (int n = 10; n <= (1 << 20); n *= 2) {
    throw_if_interrupted();
    double steady = NAN;
    const double g = saturation_once(ep, st, clock, m, n, &steady);
    if (!std::isfinite(g)) continue;
    const bool long_enough = rtt1 < eps * g * n;
    const bool paper = std::isfinite(prev) && std::fabs(g - prev) < eps * g;
    const bool steady_settled =
        std::isfinite(steady) && std::isfinite(prev_steady) && std::fabs(steady - prev_steady) < eps * steady;
    if (long_enough && (paper || steady_settled)) {
      s.rule = paper ? "RTT_n / n changed by less than eps (the paper's rule)"
                     : "the steady rate (credit returns) changed by less than eps; RTT_n / n did not settle";
      s.n = n;
      s.converged = true;
      s.g_total = g;
      for (int k = 0; k < kSaturationRepeats; ++k) {
        double steady = NAN;
        const double x = saturation_once(ep, st, clock, m, n, &steady);
        s.repeats.push_back(std::isfinite(steady) ? steady : x);
      }
      const Summary sum = summarize(s.repeats);
      s.g = sum.median;
      s.ci95 = sum.ci95_median;
      s.ci_method = "distribution-free interval of the median of " + std::to_string(s.repeats.size()) +
                    " streams (order statistics at ranks n/2 -+ 1.96 sqrt(n)/2)";
      if (!std::isfinite(s.ci95)) {
        s.ci95 = sum.ci95_mean;
        s.ci_method = "Student-t interval of the mean of " + std::to_string(s.repeats.size()) + " streams";
      }
      return s;
    }
    prev = g;
    prev_steady = steady;
    s.n = n;
    if (g * n * 1e-9 > kMaxStreamSeconds) break;
  }
  return s;  // not converged: g stays NaN
}

}  // namespace detail

template <class EP>
KielmannResult kielmann(EP& ep, ClientState& st, const Clock& clock, const KielmannConfig& cfg,
                        const std::function<void(const std::string&)>& progress) {
  KielmannResult r;
  const auto t_start = std::chrono::steady_clock::now();
  const std::uint32_t cap = cfg.max_bytes ? std::min(cfg.max_bytes, max_message(ep)) : max_message(ep);
  std::map<std::uint32_t, KielmannSize> done;

  // o_s(m) is the time inside the send call (section 3): the AM layer's poll before a request is no part of
  // MPI_Send, so the timed round trips send without it (the one-way saturation keeps the layer's default).
  auto measure = [&](std::uint32_t m) -> const KielmannSize& {
    auto it = done.find(m);
    if (it != done.end()) return it->second;
    const PollBeforeSend<EP> no_poll(ep, false);
    progress("kielmann " + std::to_string(m) + " B");
    const int max_n = m >= cfg.large_bytes ? cfg.max_large : cfg.max_small;
    KielmannSize k;
    k.bytes = m;
    std::vector<double> sends;
    for (int i = 0; i < 10; ++i) round_trip(ep, st, clock, m);  // untimed: caches, rings, the slot in use
    const Summary rtt = detail::repeat_until(cfg.eps, max_n, [&] {
      const Timed t = round_trip(ep, st, clock, m);
      if (t.send_ns == t.send_ns) sends.push_back(t.send_ns);
      return t.total_ns;
    });
    const Summary os = summarize(sends);
    // Delta > RTT(m) (section 3), from the median: a round trip that an interruption stretched to
    // milliseconds would otherwise make every o_r sample wait twice that.
    k.delta_ns = 2 * rtt.median + 1000;
    const std::uint64_t wait = clock.cycles(k.delta_ns);
    const Summary orr = detail::repeat_until(cfg.eps, max_n, [&] { return receive_overhead(ep, st, clock, m, wait); });
    k.rtt = rtt.median;
    k.rtt_ci = rtt.ci95_median;
    k.o_s = os.median;
    k.o_s_ci = os.ci95_median;
    k.o_r = orr.median;
    k.o_r_ci = orr.ci95_median;
    k.samples = static_cast<int>(rtt.n);
    return done.emplace(m, k).first->second;
  };

  {
    // The first size is measured right after start-up, with cold caches, branch predictors and (over MPI)
    // a library that has moved no message yet; LogP/MPI runs its g(0) saturation of thousands of messages
    // first. Round trips for 2 ms (at most 2000) before anything is timed.
    const PollBeforeSend<EP> no_poll(ep, false);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    for (int i = 0; i < 2000 && (i < 10 || std::chrono::steady_clock::now() < until); ++i) round_trip(ep, st, clock, 0);
  }
  const KielmannSize& zero = measure(0);
  progress("kielmann g(0) by saturation");
  const detail::Saturation sat0 = detail::saturate(ep, st, clock, 0, cfg.eps, zero.rtt);
  r.g0 = sat0.g;
  r.g0_ci = sat0.ci95;
  r.g0_n = sat0.n;
  r.g0_converged = sat0.converged;
  r.g0_total_over_n = sat0.g_total;
  r.g0_ci_method = sat0.ci_method;
  r.g0_rule = sat0.rule;
  r.credits = ep.credit_limit();
  if (!sat0.converged)
    r.notes.push_back("g(0): the saturation did not converge up to n = " + std::to_string(sat0.n) +
                      " messages (the doubling ends at n = 2^20 or a stream of " +
                      std::to_string(detail::kMaxStreamSeconds).substr(0, 3) + " s)");
  auto gap = [&](const KielmannSize& k) { return k.rtt - zero.rtt + r.g0; };
  // A value at m extrapolated on the line through the two sizes below it.
  auto extrapolate = [](double m0, double v0, double m1, double v1, double m) {
    return v1 + (v1 - v0) / (m1 - m0) * (m - m1);
  };
  auto misses = [&](double meas, double pred) { return std::fabs(meas - pred) > cfg.eps * std::fabs(pred) + 20; };

  std::vector<std::uint32_t> sizes;
  for (int k = 0; k <= cfg.k_max_initial && (1u << k) <= cap; ++k) sizes.push_back(1u << k);
  for (auto m : sizes) measure(m);
  // Extend the range until g(m) follows the line through the two sizes below (g(m)/m has settled).
  while (sizes.size() >= 3 && sizes.back() * 2 <= cap) {
    const auto& a = measure(sizes[sizes.size() - 3]);
    const auto& b = measure(sizes[sizes.size() - 2]);
    const auto& c = measure(sizes.back());
    if (!misses(gap(c), extrapolate(a.bytes, gap(a), b.bytes, gap(b), c.bytes))) break;
    sizes.push_back(sizes.back() * 2);
    measure(sizes.back());
  }
  // Interval halving where o_s, o_r or g is not linear in m.
  for (std::size_t i = 2; i < sizes.size(); ++i) {
    std::uint32_t lo = sizes[i - 1], hi = sizes[i];
    int halvings = 0;
    while (hi - lo > std::max<std::uint32_t>(32, static_cast<std::uint32_t>(cfg.eps * hi)) && halvings < 8) {
      const auto& a = measure(sizes[i - 2]);
      const auto& b = measure(lo);
      const auto& c = measure(hi);
      const bool off = misses(c.o_s, extrapolate(a.bytes, a.o_s, b.bytes, b.o_s, c.bytes)) ||
                       misses(c.o_r, extrapolate(a.bytes, a.o_r, b.bytes, b.o_r, c.bytes)) ||
                       misses(gap(c), extrapolate(a.bytes, gap(a), b.bytes, gap(b), c.bytes));
      if (!off) break;
      const std::uint32_t mid = (lo + hi) / 2;
      measure(mid);
      lo = mid;  // look closer at the upper half, where the bend is
      ++halvings;
    }
  }
  r.fast_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  for (auto& [m, k] : done) {
    k.g = gap(k);
    r.sizes.push_back(k);
  }

  if (cfg.compare_saturation) {
    const auto t_sat = std::chrono::steady_clock::now();
    for (auto& k : r.sizes) {
      progress("saturation g(" + std::to_string(k.bytes) + " B)");
      const detail::Saturation sm = detail::saturate(ep, st, clock, k.bytes, cfg.eps, k.rtt);
      k.g_saturation = sm.g;
      k.g_saturation_ci = sm.ci95;
    }
    r.saturation_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sat).count();
  }
  return r;
}

}  // namespace logpb::methods
