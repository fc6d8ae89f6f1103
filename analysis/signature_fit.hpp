// Reading LogP parameters off a signature (Culler et al. section 3.2-3.3), written against plain
// curves so it can be tested on synthetic ones:
//   o_s           the average message cost of the send-only regime: the first points of the Delta = 0 curve,
//                 at M below RTT / o_s (where the first replies come back, section 3.1) and within the window;
//   g             the steady-state cost of the Delta = 0 curve: the slope of the issue time T(M) = M cost(M)
//                 over its largest M (the asymptote of the curve, not biased by the send-only start);
//   o_s_plus_o_r  from the Deltas that raise the steady state: g' = o_s + o_r + Delta, so o_s + o_r = g' -
//                 Delta (the median of their estimates, each from a curve in its steady state). This is the
//                 requester's cost per request/reply pair, the figure the signature defines;
//   o_r_remainder o_s_plus_o_r - o_s: what the send-only cost did not take. It is not LogP's o_r: the empty
//                 poll a request makes before it sends is inside o_s here, and not in a receive;
//   L             = RTT/2 - o_s_plus_o_r.
// Each comes with a 95% half-width propagated from the points' own intervals, and a list of checks
// that say in words what looks wrong (negative or impossible values are never reported bare).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/figures.hpp"

namespace logpb::analysis {

struct Curve {
  double delta_ns = 0;  // the achieved compute delay
  std::vector<double> M, cost_ns, ci95_ns;
  std::vector<bool> converged;  // per point, from the stop rule (empty: all converged)
  // The run's burst cap (NaN: unknown). Bursts within it are the ones its medians can trust: a longer burst
  // nearly always holds an interruption (loops.hpp), and on a loaded core one that the median keeps.
  double max_burst_ns = std::nan("");
};

struct SendOnly {
  Param o_s;
  std::vector<double> used_M;
  // The largest M the send-only regime may hold: below RTT / o_s, when the first replies return, and at
  // most the window W (Culler et al. 3.1: the transition "will begin at RTT/o_s ... or when the capacity
  // limit is reached; whichever comes first"). NaN when neither is known: the plateau is then unbounded.
  double M_limit = std::nan("");
  std::string limit_detail;  // how M_limit was reached, in words
  // Points of the curve below M_limit: 1 on a link whose round trip is under two sends (RTT / o_s < 2),
  // where the plateau is one point by the link's nature, not for want of measuring.
  std::size_t below_limit = 0;
  // Several points below the limit, and they scatter beyond their intervals (no two in one band): the send
  // cost moves with M on this link. o_s is then their mean, its interval their scatter, and this says how.
  std::string scatter;
};
// rtt_ns: the round trip (NaN: unknown); window: W (0: unknown).
SendOnly send_only_cost(const Curve& c, double rtt_ns = std::nan(""), int window = 0, double tolerance = 0.03);

struct Steady {
  Param cost;  // per-message steady-state cost (g for Delta = 0, g' otherwise)
  std::vector<double> used_M;
  double last_cost = std::nan("");    // the average cost per message at the largest M used
  double capped_cost = std::nan("");  // ... at the largest M whose burst is within the curve's cap
  double capped_M = std::nan("");
  bool reached = false;  // the slope of T(M) is the same over both halves of the tail, within the data
  std::string detail;    // the two slopes, in words
};
Steady steady_state_cost(const Curve& c);

struct DeltaFit {
  double delta_ns = 0;
  Param steady;
  bool reached = false;  // the curve reached its steady state (steady_state_cost)
  std::string steady_detail;
  bool raised = false;  // Delta > Idle: the steady state rose above g
  bool used = false;    // raised and in its steady state: its g' - Delta enters o_s_plus_o_r
  Param o_s_plus_o_r;   // g' - Delta
};

// What limits the steady state of a signature (Culler et al. 3.1): the NI's gap, the processor (o_s + o_r
// per request-reply pair, Idle = 0: section 5's "the gap is equal to o_s + o_r"), or the capacity (the
// window of W requests per round trip: g = RTT / W).
inline constexpr const char* kBottleneckNI = "network interface";
inline constexpr const char* kBottleneckProcessor = "processor";
inline constexpr const char* kBottleneckCapacity = "capacity";
inline constexpr const char* kBottleneckReplier = "replier";

struct SignatureFit {
  Param o_s, g, L, rtt;
  Param o_s_plus_o_r;      // g' - Delta over the raised Deltas: the requester's cost per request/reply pair
  Param o_r_remainder;     // o_s_plus_o_r - o_s: not LogP's o_r (see the top of this file)
  Param idle;              // g - o_s_plus_o_r (Culler 3.1), with its interval
  Param g_ni;              // the NI's own gap: = g when the NI is the bottleneck, else hidden with upper_bound g
  Param replier;           // the replier's busy time per request, as it timed it (Culler et al. 3.5's turnaround)
  std::string bottleneck;  // one of the kBottleneck* names ("" when g itself is unknown)
  int window = 0;          // the AM window W the run used (0: unknown: no capacity test)
  double step_ns = std::nan("");  // the clock's step: a published figure within one step of zero is a bound
  double send_only_M_limit = std::nan("");
  // The Delta = 0 curve did not show its steady state: it still bends over its largest M, or its slope is
  // below the o_s + o_r each request/reply pair costs (Idle < 0 beyond its interval: still filling its
  // window). g is then a lower bound, and the run may measure longer bursts (methods/signature/loops.hpp).
  bool g_in_transition = false;
  std::vector<double> send_only_M, steady_M;
  std::vector<DeltaFit> per_delta;
  std::vector<Check> checks;
};
// The published figures, each through within_step(step_ns): a time within one clock step of zero is a bound.
void to_json(nlohmann::json& j, const SignatureFit& f);

// curves[0] must be the Delta = 0 curve. rtt is the round-trip estimate with its interval.
// window: the AM window W of the run (for the capacity bound RTT / W; 0 skips that test).
// replier: the replier's own service time per request (invalid: not measured); a steady state it reaches,
// clearly above the requester's o_s + o_r, is the replier's (bottleneck "replier"), not the NI's.
// step_ns: the clock's step (meta.tsc.resolution_ns), carried to the published figures (NaN: not known).
SignatureFit fit_signature(const std::vector<Curve>& curves, const Param& rtt, double raise_threshold = 1.2,
                           int window = 0,
                           const Param& replier = Param::invalid("the replier's service time was not measured"),
                           double step_ns = std::nan(""));

// How far o_s + o_r may move over the used Deltas before it is no single number (a share of the figure).
inline constexpr double kPairSlopeShare = 0.10;
// ... and only when the estimates keep the slope's direction: Kendall's tau at least this in size (five of
// six pairs of four Deltas in order; three Deltas all in order).
inline constexpr double kPairTrendTau = 0.6;

// The automatic Delta grid: factors x g, rounded to 10 ns.
std::vector<double> auto_deltas(double g_ns, const std::vector<double>& factors);

}  // namespace logpb::analysis
