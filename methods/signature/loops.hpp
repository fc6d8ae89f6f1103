// The LogP signature of Culler, Liu, Martin and Yoshikawa (section 3.1-3.2): for a grid of burst
// lengths M and compute delays Delta, the average cost of issuing M requests with Delta between them
// (start timer; M x {request; compute Delta}; stop timer), each point repeated to the stop rule of
// section 3.3. The parameters are read off the curves by analysis/signature_fit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/figures.hpp"
#include "common/disturbance.hpp"
#include "common/clock.hpp"
#include "common/compute_delay.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "methods/pingpong/loops.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

struct SignatureConfig {
  std::vector<int> bursts;                               // M values, ascending
  std::vector<double> deltas_ns;                         // explicit Delta grid (must include 0), or empty for automatic
  std::vector<double> auto_delta_factors{0.5, 1, 2, 4};  // automatic grid: Delta = factor x g(Delta=0)
  StopRule rule;
  PingpongConfig rtt;
  double max_burst_ns = 2e6;   // longest timed burst (see signature_curve)
  std::size_t min_points = 8;  // M values measured whatever their burst length
  int window = 32;             // the AM window W (recorded; the steady state may need M well past it)
  int max_extend = 8;          // M values added past the grid (x1.5 each) while the steady state is not reached
  // The typical length of an interruption of a spinning core (a tick, a VM exit), measured before the curves;
  // NaN: none seen, and no burst is left out as interrupted (see leave_out_interrupted).
  double interruption_ns = NAN;
  // Set: Delta is fixed work (--delta-kind compute) and each burst is net of its uninterrupted length, so what
  // was taken from the core during the work stays in the cost; null: a TSC deadline, net of what it spent.
  std::shared_ptr<const ComputeDelay> compute;
};

// Default M grid: powers of two and the points halfway between, 1 .. max_burst.
std::vector<int> default_bursts(int max_burst);

struct SignaturePoint {
  int M = 0;
  Point point;  // samples are the per-message cost of one burst, ns (the paper's curve)
  Summary net;  // per burst: its cost minus the Delta that burst itself spent, per message
  // Bursts left out of value and net as interrupted (see leave_out_interrupted), and the cut they exceeded
  // (per message, net of Delta; NaN where none was applied).
  int interrupted = 0;
  double interrupted_cut_ns = NAN;
  // Bursts during which another task held a measuring core (common/disturbance.hpp): no samples, measured
  // again (counted in point.discarded too), and the first one's cause.
  int disturbed = 0;
  std::string disturbed_cause{};
};
struct SignatureCurve {
  double delta_ns = 0;             // requested
  double delta_achieved_ns = 0;    // the Delta actually spent inside the timed bursts (median per message)
  double delta_calibrated_ns = 0;  // a standalone calibration of the same delay (compute: its uninterrupted length)
  double delta_subtracted_ns = 0;  // what each burst is net of per message: deadline, delta_achieved_ns; compute,
                                   // delta_calibrated_ns (so a stretch of the work stays in the cost)
  std::vector<SignaturePoint> points;
  bool steady_reached = false;  // the hook's verdict after the last point (and any extension)
  int extended = 0;             // M values added past the grid to reach the steady state
  std::vector<double> in_burst_delta_ns;  // per sample: the mean Delta of that burst (for delta_achieved_ns)
  double max_burst_ns = NAN;              // the cap its grid stopped at (the fit trusts bursts within it)
  // The mechanism under its steady state: the requester's polls during the issue phase of one more burst
  // of the curve's largest M, untimed, counted (counted_burst). How many frames a poll hands up shares the
  // poll's fixed cost between the pairs: a g' - Delta that moves while this stays put moves for another reason.
  int counted_messages = 0;  // 0: not counted (an endpoint without count_polls)
  std::uint64_t counted_polls = 0, counted_productive_polls = 0, counted_frames = 0;
};
struct SignatureData {
  PingpongResult rtt;
  std::vector<SignatureCurve> curves;  // curves[0] is Delta = 0
  // The replier's own busy time per request during the Delta = 0 curve, as it timed it (NaN: the peer
  // did not say, e.g. a reflector), and how many requests that covers.
  double replier_service_ns = NAN;
  std::uint64_t replier_requests = 0;
  double replier_service_mean_ns = NAN, replier_service_p90_ns = NAN;  // the same polls' mean and 90th percentile
  double interruption_ns = NAN;  // the interruption length the points' bursts were judged by (NaN: none)
  bool compute_delta = false;    // Delta was fixed work (--delta-kind compute)
};

struct Hooks {
  std::function<void(const std::string&)> progress = [](const std::string&) {};
  std::function<void(const SignatureData&)> checkpoint = [](const SignatureData&) {};
  // Picks the Delta grid once the Delta = 0 curve is known (the automatic grid needs its g).
  std::function<std::vector<double>(const SignatureCurve&)> deltas_after_first;
  // Whether a curve has reached its steady state (the analysis decides); while not, larger M are added.
  std::function<bool(const SignatureCurve&)> steady_reached = [](const SignatureCurve&) { return true; };
  // Asked once the Delta grid's curves are in: further Deltas to measure (the automatic grid's, where too few
  // of its curves raised the steady state to read o_s + o_r from more than two). Empty: none.
  std::function<std::vector<double>(const SignatureData&)> more_deltas;
  // Asked once every curve is in: whether the Delta = 0 curve is still in its transition by what the Delta
  // curves say (its slope below their o_s + o_r: Idle < 0). While so, larger M are added to it. Empty: never.
  std::function<bool(const SignatureData&)> first_in_transition;
};

// Which bursts of a point to keep: those that held no interruption of either core (a timer tick or a VM exit
// on this VM takes 35-50 us about every millisecond, on each of the two cores). The median leaves an
// interrupted burst out only while fewer than half the bursts hold one; with two cores interrupted
// independently a burst of a third of the interval is hit more often than not (the cloud truth machine at
// M = 97, 350 us a burst: median 3800 ns a message where its clean bursts read 3531). An interruption
// lengthens a burst by its own length, so per message by length / M: a burst more than half of that above
// the point's lower quartile (clean while fewer than three bursts in four are hit) held one and is left out,
// as a burst that lost a message is. Net of each burst's own Delta, since an interruption inside a delay
// cancels there. Keeps everything when no interruption length was measured, when nothing is above the cut,
// or when fewer than a quarter of the bursts (or six) would remain: then the point stands as measured.
inline std::vector<bool> leave_out_interrupted(const std::vector<double>& net, int M, double interruption_ns,
                                               double& cut_ns) {
  std::vector<bool> keep(net.size(), true);
  cut_ns = NAN;
  if (!(interruption_ns > 0) || M <= 0 || net.size() < 8) return keep;
  std::vector<double> sorted = net;
  std::sort(sorted.begin(), sorted.end());
  const double cut = quantile_of_sorted(sorted, 0.25) + 0.5 * interruption_ns / M;
  std::size_t kept = 0;
  for (double x : net) kept += x <= cut;
  if (kept == net.size() || kept < std::max<std::size_t>(6, net.size() / 4)) return keep;
  for (std::size_t i = 0; i < net.size(); ++i) keep[i] = net[i] <= cut;
  cut_ns = cut;
  return keep;
}

// A curve's issue phase: M x {issue(i); compute Delta}, with its Delta (a deadline, or fixed work) worked
// out once. run() returns the cycles the Deltas took.
struct IssuePhase {
  const SignatureConfig& cfg;
  const BusyDelay delay;
  const std::uint64_t delta_cycles, delta_work;
  IssuePhase(const Clock& clock, const SignatureConfig& c, double delta_ns)
      : cfg(c),
        delay(clock),
        delta_cycles(delta_ns > 0 ? clock.cycles(delta_ns) : 0),
        delta_work(c.compute ? c.compute->iterations(delta_cycles) : 0) {}
  template <class Issue>
  std::uint64_t run(Issue& issue, int M) const {
    std::uint64_t spent = 0;
    for (int i = 0; i < M; ++i) {
      issue(i);
      spent += cfg.compute ? cfg.compute->run_measured(delta_work) : delay.run_measured(delta_cycles);
    }
    return spent;
  }
};

// One point of a curve: M x {issue(i); compute Delta}, timed, to the stop rule; appended to c.
template <class EP, class Issue>
void signature_point(EP& ep, const Clock& clock, SignatureCurve& c, int M, const SignatureConfig& cfg,
                     const Hooks& hooks, const std::string& label, Issue& issue) {
  const IssuePhase phase(clock, cfg, c.delta_ns);
  const double timer = clock.timer_cost_cycles();
  auto elapsed_ns = [&] { return clock.ns(tsc::now()); };
  throw_if_interrupted();
  hooks.progress(label + " M=" + std::to_string(M));
  std::vector<double> deltas, costs;
  SegmentWatch watch(clock);
  int disturbed = 0;
  std::string disturbed_cause;
  auto sample = [&] {
    const std::uint64_t losses = ep.loss_events();
    watch.begin();
    const std::uint64_t t0 = tsc::now();
    const std::uint64_t spent = phase.run(issue, M);
    const std::uint64_t t1 = tsc::now_end();
    // Drain the replies outside the timed issue phase. A burst during which a message was lost is no
    // sample (NaN): measure_point re-measures it and counts it as discarded. So is a burst during which
    // another task held a measuring core, the drain included (the replier's replies are part of the burst).
    if (!ep.wait_all() || ep.loss_events() != losses) return std::nan("");
    if (const SegmentTag tag = watch.end(); !tag.clean) {
      if (disturbed++ == 0) disturbed_cause = tag.cause;
      return std::nan("");
    }
    const double cost = clock.ns(static_cast<double>(t1 - t0) - timer) / M;
    deltas.push_back(clock.ns(static_cast<double>(spent)) / M);
    costs.push_back(cost);
    return cost;
  };
  sample();  // one untimed burst warms caches and rings for this M
  deltas.clear();
  costs.clear();
  SignaturePoint sp{M, measure_point(cfg.rule, sample, elapsed_ns), {}};
  sp.disturbed = disturbed;
  sp.disturbed_cause = disturbed_cause;
  // Each sample is one timed span of M messages over M: the clock's step quantises the span, so a point's
  // interval is floored at step / M, not at one step (a point of 512 messages on a 10 ns clock is not
  // +-10 ns). The stop rule above still stops at one step, as precise as a single span can tell.
  const bool median = cfg.rule.estimator == Estimator::median;
  if (!sp.point.samples.empty() && std::isfinite(sp.point.ci95))
    sp.point.ci95 = analysis::point_ci95(sp.point.samples, median, clock.resolution_ns(), M);
  // Subtract each burst's own Delta from that burst: an interruption inside a delay lengthens both, so
  // they cancel, where a Delta calibrated elsewhere would leave it in (or take out one that never came).
  std::vector<double> net(costs.size());
  for (std::size_t i = 0; i < costs.size(); ++i) net[i] = costs[i] - (cfg.compute ? c.delta_subtracted_ns : deltas[i]);
  const std::vector<bool> keep = leave_out_interrupted(net, M, cfg.interruption_ns, sp.interrupted_cut_ns);
  std::vector<double> kept_net, kept_cost;
  for (std::size_t i = 0; i < net.size(); ++i)
    if (keep[i]) {
      kept_net.push_back(net[i]);
      kept_cost.push_back(costs[i]);
    }
  sp.interrupted = static_cast<int>(net.size() - kept_net.size());
  if (sp.interrupted > 0 && c.delta_ns == 0) {
    // At Delta = 0 the point's value is the curve the fit reads: taken over the uninterrupted bursts.
    const Summary s = summarize(kept_cost);
    sp.point.value = s.value(cfg.rule.estimator);
    sp.point.ci95 = analysis::point_ci95(kept_cost, median, clock.resolution_ns(), M);
  }
  sp.net = summarize(kept_net);
  if (sp.net.n >= 6) sp.net.ci95_median = analysis::point_ci95(kept_net, true, clock.resolution_ns(), M);
  if (sp.net.n >= 2) sp.net.ci95_mean = analysis::point_ci95(kept_net, false, clock.resolution_ns(), M);
  c.points.push_back(std::move(sp));
  c.in_burst_delta_ns.insert(c.in_burst_delta_ns.end(), deltas.begin(), deltas.end());
  c.delta_achieved_ns = c.delta_ns > 0 ? median_of(c.in_burst_delta_ns) : 0;
  if (!cfg.compute) c.delta_subtracted_ns = c.delta_achieved_ns;
}

// Adds M values past the curve's last (x1.5 each) while `more(c)` says its steady state is not yet seen,
// at most `max` of them; returns how many were added.
template <class EP, class Issue, class More>
int extend_curve(EP& ep, const Clock& clock, SignatureCurve& c, const SignatureConfig& cfg, const Hooks& hooks,
                 const std::string& label, Issue& issue, int max, More&& more) {
  int added = 0;
  // Nor past a point whose bursts were lost more often than kept: on a lossy link (--drop-rate 0.01, two
  // frames a request) a longer burst loses more, and growing M then only re-measures (dpdk_drop_signature:
  // 15742 bursts discarded at Delta = 0, one run over 300 s).
  auto lossy = [](const SignaturePoint& p) {
    return p.point.discarded > static_cast<int>(p.point.samples.size());
  };
  while (added < max && !c.points.empty() && !lossy(c.points.back()) && more(c)) {
    signature_point(ep, clock, c, c.points.back().M * 3 / 2 + 1, cfg, hooks, label, issue);
    ++added;
    ++c.extended;
  }
  return added;
}

// One more burst of the curve's largest M, as its points ran it but untimed, with the requester's polls
// counted over the issue phase (the part a point times); then drained.
template <class EP, class Issue>
void counted_burst(EP& ep, const Clock& clock, SignatureCurve& c, const SignatureConfig& cfg, Issue& issue) {
  if constexpr (requires { ep.count_polls(true); }) {
    if (c.points.empty()) return;
    const int M = c.points.back().M;
    const IssuePhase phase(clock, cfg, c.delta_ns);
    ep.count_polls(true);
    phase.run(issue, M);
    const auto counted = ep.poll_count();
    ep.count_polls(false);
    ep.wait_all();
    c.counted_messages = M;
    c.counted_polls = counted.polls;
    c.counted_productive_polls = counted.productive;
    c.counted_frames = counted.frames;
  }
}

// One curve: for every M, M x {issue(i); compute Delta}, timed. `issue` sends the i-th message of the
// burst (a small request for the signature, a bulk store for Culler's section 4).
template <class EP, class Issue>
SignatureCurve signature_curve(EP& ep, const Clock& clock, double delta_ns, const SignatureConfig& cfg,
                               const Hooks& hooks, const std::string& label, Issue&& issue) {
  const BusyDelay delay(clock);
  SignatureCurve c;
  c.delta_ns = delta_ns;
  c.max_burst_ns = cfg.max_burst_ns;
  // Delta is subtracted as it was spent inside the bursts: each delay reports its own length, so a
  // calibration taken elsewhere (which a VM transient can make 30% long) never enters a figure.
  c.delta_calibrated_ns = delta_ns <= 0 ? 0
                          : cfg.compute ? cfg.compute->uninterrupted_ns(delta_ns)
                                        : delay.achieved_ns(delta_ns, 201);
  if (cfg.compute) c.delta_subtracted_ns = c.delta_calibrated_ns;
  for (std::size_t k = 0; k < cfg.bursts.size(); ++k) {
    const int M = cfg.bursts[k];
    // A burst longer than max_burst_ns would nearly always contain an interruption (a timer tick, a VM
    // exit), which the median could then no longer leave out: past the first few points such M are
    // skipped here, and come back below only if the steady state needs them.
    if (k >= cfg.min_points && !c.points.empty() && c.points.back().point.value * M > cfg.max_burst_ns) break;
    signature_point(ep, clock, c, M, cfg, hooks, label, issue);
  }
  // Every curve reaches its steady state, or grows until it does (up to max_extend more M values).
  extend_curve(ep, clock, c, cfg, hooks, label, issue, cfg.max_extend,
               [&](const SignatureCurve& x) { return !hooks.steady_reached(x); });
  c.steady_reached = hooks.steady_reached(c);
  counted_burst(ep, clock, c, cfg, issue);
  return c;
}

template <class EP>
SignatureData signature(EP& ep, ClientState& st, const Clock& clock, const SignatureConfig& cfg, const Hooks& hooks) {
  SignatureData d;
  hooks.progress("round trip");
  d.rtt = pingpong(ep, st, clock, cfg.rtt);
  hooks.checkpoint(d);
  auto request = [&ep](int) { ep.request(kEcho); };
  // The first curve decides the Delta grid; the issue phase begins with the window empty. The replier
  // times its own service meanwhile, so a replier-bound steady state can be named (Culler et al. 3.5).
  replier_service(ep, st, true);
  d.curves.push_back(signature_curve(ep, clock, 0, cfg, hooks, "signature Delta=0", request));
  d.replier_service_ns =
      replier_service(ep, st, false, &d.replier_requests, &d.replier_service_mean_ns, &d.replier_service_p90_ns);
  hooks.checkpoint(d);
  auto delta_curves = [&](const std::vector<double>& deltas) {
    for (double delta : deltas) {
      if (delta <= 0) continue;
      char label[64];
      std::snprintf(label, sizeof label, "signature Delta=%.0fns", delta);
      d.curves.push_back(signature_curve(ep, clock, delta, cfg, hooks, label, request));
      hooks.checkpoint(d);
    }
  };
  if (!cfg.deltas_ns.empty()) {
    delta_curves(cfg.deltas_ns);
  } else {
    delta_curves(hooks.deltas_after_first(d.curves.front()));
    if (hooks.more_deltas) delta_curves(hooks.more_deltas(d));  // once: the automatic grid's additions
  }
  // A Delta = 0 curve whose slope is below the o_s + o_r the Delta curves read is still filling its window
  // (Idle < 0: LogP allows no such steady state). Its cap may be the cause, automatic or not: the curve grows
  // past it as the steady state needs, as signature_curve does for a curve that still bends.
  if (hooks.first_in_transition && !d.curves.empty()) {
    SignatureCurve& c0 = d.curves.front();
    // At most 16 caps long: past that every burst holds an interruption, which on a loaded core the median
    // keeps (a run that grew to M = 43118, 194 ms a burst, read 15-130 us a message for 4.5).
    extend_curve(ep, clock, c0, cfg, hooks, "signature Delta=0 (longer bursts)", request, cfg.max_extend,
                 [&](const SignatureCurve& x) {
                   const auto& last = x.points.back();
                   const double next_ns = last.point.value * (last.M * 3 / 2 + 1);
                   return !(next_ns > 16 * cfg.max_burst_ns) && hooks.first_in_transition(d);
                 });
    c0.steady_reached = hooks.steady_reached(c0);
    hooks.checkpoint(d);
  }
  return d;
}

inline std::vector<int> default_bursts(int max_burst) {
  std::vector<int> m;
  for (int p = 1; p <= max_burst; p *= 2) {
    m.push_back(p);
    if (p >= 2 && p + p / 2 <= max_burst && p + p / 2 < 2 * p) m.push_back(p + p / 2);
  }
  return m;
}

}  // namespace logpb::methods
