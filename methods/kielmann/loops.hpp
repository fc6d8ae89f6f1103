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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/disturbance.hpp"
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
  SegmentBook g0_segments{"saturation streams", 0, 0, 0};  // g(0)'s streams, disturbed ones run again
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

// Streams of the converged n timed again for g's value and interval: seven, the fewest whose median has
// a distribution-free interval (stats.cpp: order statistics, from six samples on).
inline constexpr int kSaturationRepeats = 7;

struct Saturation {
  double g = NAN, ci95 = NAN;
  double g_total = NAN;  // RTT_n / n at the converged n, as the paper takes it
  int n = 0;
  bool converged = false;
  std::vector<double> repeats;  // the converged n timed again: their steady rates, for the value and interval
  std::string ci_method;
  std::string rule;  // which convergence rule held
  // Every stream timed, disturbed ones measured again; refusal: too few of the repeats were clean.
  SegmentBook segments{"saturation streams", kSaturationRepeats, (kSaturationRepeats + 1) / 2, 1 << 30};
  std::string refusal;
};

// g(m) by saturation: n = 10, 20, 40, ... until the gap per message changes by less than eps and
// RTT_1 < eps * RTT_n. On a shared machine RTT_n / n carries every interruption of a long stream and
// may never settle within eps; the streams' steady rates (the receiver's credit returns, which leave
// interruptions out) settling is taken as saturation too, and recorded as the rule that held. A stream
// longer than kMaxStreamSeconds ends the doubling. A saturation that never converges says so; it never
// returns its last value as if it had.
inline constexpr double kMaxStreamSeconds = 0.5;
// Each stream is a segment (common/disturbance.hpp): one during which another task held a measuring core
// timed that task in its total / n, and is run again, up to twice kSegmentBudget times (a stream is a few ms:
// at 10% stolen in 0.5 ms of every 5, about half of them are clean). Its steady rate is the median over its
// credit intervals: a steal that held a core for under kMedianSafeShare of the stream lengthens fewer than
// half of them and leaves that median where it was, so a disturbed stream's steady rate is kept (its total
// is not) when no clean one came.
inline constexpr double kMedianSafeShare = 0.25;
struct Stream {
  double total = NAN, steady = NAN;
  bool clean = false, disturbed = false;
};
template <class EP>
Stream clean_saturation(EP& ep, ClientState& st, const Clock& clock, SegmentWatch& watch, SegmentBook& book,
                        std::uint32_t m, int n) {
  Stream out;
  for (int attempt = 0; attempt < 2 * kSegmentBudget; ++attempt) {
    watch.begin();
    double steady = NAN;
    const double g = saturation_once(ep, st, clock, m, n, &steady);
    const SegmentTag tag = watch.end();
    if (book.record(tag)) return {g, steady, true, false};
    out.disturbed = true;
    const double held = std::max(tag.requester.delay_ns, tag.replier.delay_ns);
    if (std::isfinite(steady) && held < kMedianSafeShare * tag.wall_ns) out.steady = steady;
  }
  return out;
}

template <class EP>
Saturation saturate(EP& ep, ClientState& st, const Clock& clock, std::uint32_t m, double eps, double rtt1) {
  Saturation s;
  double prev = NAN, prev_steady = NAN;
  SegmentWatch watch(clock);
  for (int n = 10; n <= (1 << 20); n *= 2) {
    throw_if_interrupted();
    const Stream x = clean_saturation(ep, st, clock, watch, s.segments, m, n);
    // A length that no attempt ran clean nor left a steady rate ends the doubling: a longer stream would be
    // disturbed more often, and doubling past it would call an unsettled rate saturated, or never settle.
    if (!std::isfinite(x.total) && !std::isfinite(x.steady) && x.disturbed) {
      s.refusal = "disturbed: every stream of " + std::to_string(n) + " messages (" +
                  std::to_string(2 * kSegmentBudget) + " tries) ran while another task held a measuring core";
      return s;
    }
    const double g = x.total, steady = x.steady;
    if (!std::isfinite(g) && !std::isfinite(steady)) continue;  // a message lost
    const bool long_enough = rtt1 < eps * (std::isfinite(g) ? g : steady) * n;
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
        const Stream r = clean_saturation(ep, st, clock, watch, s.segments, m, n);
        if (std::isfinite(r.steady) || std::isfinite(r.total))
          s.repeats.push_back(std::isfinite(r.steady) ? r.steady : r.total);
      }
      if (static_cast<int>(s.repeats.size()) < (kSaturationRepeats + 1) / 2) {
        s.converged = false;
        s.refusal = "disturbed: only " + std::to_string(s.repeats.size()) + " of " +
                    std::to_string(kSaturationRepeats) + " streams of " + std::to_string(n) +
                    " messages gave a rate, the others run while another task held a measuring core";
        return s;
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
    if ((std::isfinite(g) ? g : steady) * n * 1e-9 > kMaxStreamSeconds) break;
  }
  return s;  // not converged: g stays NaN
}

// The share of the run done, for a progress display. The fast phase measures each size once: at least
// size 0 and the initial powers of two, and the adaptive range adds more (counted as they come); the
// saturation comparison then takes each measured size once more, and is the second half of the run.
class KielmannProgress {
 public:
  KielmannProgress(const KielmannConfig& cfg, std::uint32_t cap, std::function<void(double)> done)
      : done_(std::move(done)), fast_share_(cfg.compare_saturation ? 0.5 : 1.0) {
    for (int k = 0; k <= cfg.k_max_initial && (1u << k) <= cap; ++k) ++expected_;
  }
  // A size of the fast phase begins: the sizes done so far over those expected (at least one more).
  void size_started() {
    done_(fast_share_ * std::min(0.99, sizes_ / std::max(expected_, sizes_ + 1.0)));
    ++sizes_;
  }
  // A size's saturation begins: the fast phase, and the saturations done over the sizes measured.
  void saturation_started() {
    done_(fast_share_ + (1 - fast_share_) * saturations_ / std::max(1, sizes_));
    ++saturations_;
  }

 private:
  std::function<void(double)> done_;
  double fast_share_;
  double expected_ = 1;  // size 0, and the initial powers of two below
  int sizes_ = 0, saturations_ = 0;
};

// The fast phase's sizes, each measured once (section 3): the first call for a size measures it, later
// calls return what it read.
template <class EP>
class KielmannSizes {
 public:
  KielmannSizes(EP& ep, ClientState& st, const Clock& clock, const KielmannConfig& cfg,
                const std::function<void(const std::string&)>& progress, KielmannProgress& share)
      : ep_(ep), st_(st), clock_(clock), cfg_(cfg), progress_(progress), share_(share) {}

  // o_s(m) is the time inside the send call (section 3): the AM layer's poll before a request is no part of
  // MPI_Send, so the timed round trips send without it (the one-way saturation keeps the layer's default).
  const KielmannSize& measure(std::uint32_t m) {
    auto it = done_.find(m);
    if (it != done_.end()) return it->second;
    const PollBeforeSend<EP> no_poll(ep_, false);
    share_.size_started();
    progress_("kielmann " + std::to_string(m) + " B");
    const int max_n = m >= cfg_.large_bytes ? cfg_.max_large : cfg_.max_small;
    KielmannSize k;
    k.bytes = m;
    std::vector<double> sends;
    for (int i = 0; i < 10; ++i) round_trip(ep_, st_, clock_, m);  // untimed: caches, rings, the slot in use
    const Summary rtt = repeat_until(cfg_.eps, max_n, [&] {
      const Timed t = round_trip(ep_, st_, clock_, m);
      if (t.send_ns == t.send_ns) sends.push_back(t.send_ns);
      return t.total_ns;
    });
    const Summary os = summarize(sends);
    // Delta > RTT(m) (section 3), from the median: a round trip that an interruption stretched to
    // milliseconds would otherwise make every o_r sample wait twice that.
    k.delta_ns = 2 * rtt.median + 1000;
    const std::uint64_t wait = clock_.cycles(k.delta_ns);
    const Summary orr = repeat_until(cfg_.eps, max_n, [&] { return receive_overhead(ep_, st_, clock_, m, wait); });
    k.rtt = rtt.median;
    k.rtt_ci = rtt.ci95_median;
    k.o_s = os.median;
    k.o_s_ci = os.ci95_median;
    k.o_r = orr.median;
    k.o_r_ci = orr.ci95_median;
    k.samples = static_cast<int>(rtt.n);
    return done_.emplace(m, k).first->second;
  }
  // Every size measured, ascending.
  const std::map<std::uint32_t, KielmannSize>& measured() const { return done_; }

 private:
  EP& ep_;
  ClientState& st_;
  const Clock& clock_;
  const KielmannConfig& cfg_;
  const std::function<void(const std::string&)>& progress_;
  KielmannProgress& share_;
  std::map<std::uint32_t, KielmannSize> done_;
};

// The first size is measured right after start-up, with cold caches, branch predictors and (over MPI)
// a library that has moved no message yet; LogP/MPI runs its g(0) saturation of thousands of messages
// first. Round trips for 2 ms (at most 2000) before anything is timed.
template <class EP>
void warm_up(EP& ep, ClientState& st, const Clock& clock) {
  const PollBeforeSend<EP> no_poll(ep, false);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  for (int i = 0; i < 2000 && (i < 10 || std::chrono::steady_clock::now() < until); ++i) round_trip(ep, st, clock, 0);
}

// g(0) by saturation into r, with a note when it did not converge.
template <class EP>
void saturate_g0(EP& ep, ClientState& st, const Clock& clock, const KielmannConfig& cfg, double rtt0,
                 KielmannResult& r) {
  const Saturation sat0 = saturate(ep, st, clock, 0, cfg.eps, rtt0);
  r.g0 = sat0.g;
  r.g0_ci = sat0.ci95;
  r.g0_n = sat0.n;
  r.g0_converged = sat0.converged;
  r.g0_total_over_n = sat0.g_total;
  r.g0_ci_method = sat0.ci_method;
  r.g0_rule = sat0.rule;
  r.credits = ep.credit_limit();
  r.g0_segments = sat0.segments;
  if (!sat0.refusal.empty())
    r.notes.insert(r.notes.begin(), "g(0): the saturation's streams were " + sat0.refusal);
  else if (!sat0.converged)
    r.notes.push_back("g(0): the saturation did not converge up to n = " + std::to_string(sat0.n) +
                      " messages (the doubling ends at n = 2^20 or a stream of " +
                      std::to_string(kMaxStreamSeconds).substr(0, 3) + " s)");
}

// A value at m extrapolated on the line through the two sizes below it.
inline double extrapolate(double m0, double v0, double m1, double v1, double m) {
  return v1 + (v1 - v0) / (m1 - m0) * (m - m1);
}
inline bool misses(double meas, double pred, double eps) { return std::fabs(meas - pred) > eps * std::fabs(pred) + 20; }

// Sizes 2^k, the range extended while g(2^k) misses the line through the two sizes below it (until g(m)/m
// has settled), then intervals halved where o_s, o_r or g is not linear in m. gap(k) is g(m).
template <class EP, class Gap>
void adapt_sizes(KielmannSizes<EP>& sizes_of, const KielmannConfig& cfg, std::uint32_t cap, const Gap& gap) {
  auto measure = [&](std::uint32_t m) -> const KielmannSize& { return sizes_of.measure(m); };
  std::vector<std::uint32_t> sizes;
  for (int k = 0; k <= cfg.k_max_initial && (1u << k) <= cap; ++k) sizes.push_back(1u << k);
  for (auto m : sizes) measure(m);
  while (sizes.size() >= 3 && sizes.back() * 2 <= cap) {
    const auto& a = measure(sizes[sizes.size() - 3]);
    const auto& b = measure(sizes[sizes.size() - 2]);
    const auto& c = measure(sizes.back());
    if (!misses(gap(c), extrapolate(a.bytes, gap(a), b.bytes, gap(b), c.bytes), cfg.eps)) break;
    sizes.push_back(sizes.back() * 2);
    measure(sizes.back());
  }
  for (std::size_t i = 2; i < sizes.size(); ++i) {
    std::uint32_t lo = sizes[i - 1], hi = sizes[i];
    int halvings = 0;
    while (hi - lo > std::max<std::uint32_t>(32, static_cast<std::uint32_t>(cfg.eps * hi)) && halvings < 8) {
      const auto& a = measure(sizes[i - 2]);
      const auto& b = measure(lo);
      const auto& c = measure(hi);
      const bool off = misses(c.o_s, extrapolate(a.bytes, a.o_s, b.bytes, b.o_s, c.bytes), cfg.eps) ||
                       misses(c.o_r, extrapolate(a.bytes, a.o_r, b.bytes, b.o_r, c.bytes), cfg.eps) ||
                       misses(gap(c), extrapolate(a.bytes, gap(a), b.bytes, gap(b), c.bytes), cfg.eps);
      if (!off) break;
      const std::uint32_t mid = (lo + hi) / 2;
      measure(mid);
      lo = mid;  // look closer at the upper half, where the bend is
      ++halvings;
    }
  }
}

// Their Table 2's comparison: g(m) by saturation for every size measured.
template <class EP>
void compare_saturation(EP& ep, ClientState& st, const Clock& clock, const KielmannConfig& cfg, KielmannResult& r,
                        const std::function<void(const std::string&)>& progress, KielmannProgress& share) {
  const auto t_sat = std::chrono::steady_clock::now();
  for (auto& k : r.sizes) {
    share.saturation_started();
    progress("saturation g(" + std::to_string(k.bytes) + " B)");
    const Saturation sm = saturate(ep, st, clock, k.bytes, cfg.eps, k.rtt);
    k.g_saturation = sm.g;
    k.g_saturation_ci = sm.ci95;
  }
  r.saturation_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sat).count();
}

}  // namespace detail

// progress(text) names each step as it begins; done(share) says how much of the run is done (0..1).
template <class EP>
KielmannResult kielmann(
    EP& ep, ClientState& st, const Clock& clock, const KielmannConfig& cfg,
    const std::function<void(const std::string&)>& progress, const std::function<void(double)>& done = [](double) {}) {
  KielmannResult r;
  const auto t_start = std::chrono::steady_clock::now();
  const std::uint32_t cap = cfg.max_bytes ? std::min(cfg.max_bytes, max_message(ep)) : max_message(ep);
  detail::KielmannProgress share(cfg, cap, done);
  detail::KielmannSizes<EP> sizes(ep, st, clock, cfg, progress, share);

  detail::warm_up(ep, st, clock);
  const KielmannSize& zero = sizes.measure(0);
  progress("kielmann g(0) by saturation");
  detail::saturate_g0(ep, st, clock, cfg, zero.rtt, r);
  auto gap = [&](const KielmannSize& k) { return k.rtt - zero.rtt + r.g0; };
  detail::adapt_sizes(sizes, cfg, cap, gap);
  r.fast_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  for (const auto& [m, k] : sizes.measured()) {
    r.sizes.push_back(k);
    r.sizes.back().g = gap(k);
  }
  if (cfg.compare_saturation) detail::compare_saturation(ep, st, clock, cfg, r, progress, share);
  return r;
}

}  // namespace logpb::methods
