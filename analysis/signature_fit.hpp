// Reading LogP parameters off a signature (Culler et al. section 3.2-3.3), written against plain
// curves so it can be tested on synthetic ones:
//   o_s  the average message cost of the send-only regime (the first points of the Delta = 0 curve);
//   g    the steady-state cost of the Delta = 0 curve: the slope of the issue time T(M) = M cost(M)
//        over its largest M (the asymptote of the curve, not biased by the send-only start);
//   o_r  from the Deltas that raise the steady state: g' = o_s + o_r + Delta, so o_r = g' - Delta - o_s
//        (the median of their estimates);
//   L    = RTT/2 - o_s - o_r.
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
};

struct SendOnly {
  Param o_s;
  std::vector<double> used_M;
};
SendOnly send_only_cost(const Curve& c, double tolerance = 0.03);

struct Steady {
  Param cost;  // per-message steady-state cost (g for Delta = 0, g' otherwise)
  std::vector<double> used_M;
  bool reached = false;  // the slope of T(M) is the same over both halves of the tail, within the data
  std::string detail;    // the two slopes, in words
};
Steady steady_state_cost(const Curve& c);

struct DeltaFit {
  double delta_ns = 0;
  Param steady;
  bool raised = false;  // Delta > Idle: the steady state rose above g
  Param o_r;
};

// What limits the steady state of a signature (Culler et al. 3.1): the NI's gap, the processor (o_s + o_r
// per request-reply pair, Idle = 0: section 5's "the gap is equal to o_s + o_r"), or the capacity (the
// window of W requests per round trip: g = RTT / W).
inline constexpr const char* kBottleneckNI = "network interface";
inline constexpr const char* kBottleneckProcessor = "processor";
inline constexpr const char* kBottleneckCapacity = "capacity";
inline constexpr const char* kBottleneckReplier = "replier";

struct SignatureFit {
  Param o_s, o_r, g, L, rtt;
  Param idle;              // g - o_s - o_r (Culler 3.1), with its interval
  Param g_ni;              // the NI's own gap: = g when the NI is the bottleneck, else hidden with upper_bound g
  Param replier;           // the replier's busy time per request, as it timed it (Culler et al. 3.5's turnaround)
  std::string bottleneck;  // one of the kBottleneck* names ("" when g itself is unknown)
  int window = 0;          // the AM window W the run used (0: unknown: no capacity test)
  std::vector<double> send_only_M, steady_M;
  std::vector<DeltaFit> per_delta;
  std::vector<Check> checks;
};
void to_json(nlohmann::json& j, const SignatureFit& f);

// curves[0] must be the Delta = 0 curve. rtt is the round-trip estimate with its interval.
// window: the AM window W of the run (for the capacity bound RTT / W; 0 skips that test).
// replier: the replier's own service time per request (invalid: not measured); a steady state it reaches,
// clearly above the requester's o_s + o_r, is the replier's (bottleneck "replier"), not the NI's.
SignatureFit fit_signature(const std::vector<Curve>& curves, const Param& rtt, double raise_threshold = 1.2,
                           int window = 0,
                           const Param& replier = Param::invalid("the replier's service time was not measured"));

// The automatic Delta grid: factors x g, rounded to 10 ns.
std::vector<double> auto_deltas(double g_ns, const std::vector<double>& factors);

}  // namespace logpb::analysis
