// The LogP signature of Culler, Liu, Martin and Yoshikawa (section 3.1-3.2): for a grid of burst
// lengths M and compute delays Delta, the average cost of issuing M requests with Delta between them
// (start timer; M x {request; compute Delta}; stop timer), each point repeated to the stop rule of
// section 3.3. The parameters are read off the curves by analysis/signature_fit.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../clock.hpp"
#include "../errors.hpp"
#include "../stats.hpp"
#include "pingpong.hpp"
#include "protocol.hpp"

namespace logpb::methods {

struct SignatureConfig {
  std::vector<int> bursts;          // M values, ascending
  std::vector<double> deltas_ns;    // explicit Delta grid (must include 0), or empty for automatic
  std::vector<double> auto_delta_factors{0.5, 1, 2, 4};  // automatic grid: Delta = factor x g(Delta=0)
  StopRule rule;
  PingpongConfig rtt;
  double max_burst_ns = 2e6;     // longest timed burst (see signature_curve)
  std::size_t min_points = 8;    // M values measured whatever their burst length
};

// Default M grid: powers of two and the points halfway between, 1 .. max_burst.
std::vector<int> default_bursts(int max_burst);

struct SignaturePoint {
  int M = 0;
  Point point;  // samples are the per-message cost of one burst, ns
};
struct SignatureCurve {
  double delta_ns = 0;           // requested
  double delta_achieved_ns = 0;  // median length the busy delay actually takes
  double delta_mean_ns = 0;      // its mean, interrupts included, for the record
  std::vector<SignaturePoint> points;
};
struct SignatureData {
  PingpongResult rtt;
  std::vector<SignatureCurve> curves;  // curves[0] is Delta = 0
};

struct Hooks {
  std::function<void(const std::string&)> progress = [](const std::string&) {};
  std::function<void(const SignatureData&)> checkpoint = [](const SignatureData&) {};
  // Picks the Delta grid once the Delta = 0 curve is known (the automatic grid needs its g).
  std::function<std::vector<double>(const SignatureCurve&)> deltas_after_first;
};

// One curve: for every M, M x {issue(i); compute Delta}, timed. `issue` sends the i-th message of the
// burst (a small request for the signature, a bulk store for Culler's section 4).
template <class EP, class Issue>
SignatureCurve signature_curve(EP& ep, const Clock& clock, double delta_ns, const SignatureConfig& cfg,
                               const Hooks& hooks, const std::string& label, Issue&& issue) {
  const BusyDelay delay(clock);
  SignatureCurve c;
  c.delta_ns = delta_ns;
  // Bursts are kept short (cfg.max_burst_ns), so the median burst holds no interrupt or VM exit; the
  // Delta subtracted from it is likewise the median achieved length. The mean is kept for the record.
  c.delta_achieved_ns = delta_ns > 0 ? delay.achieved_ns(delta_ns, 1001) : 0;
  c.delta_mean_ns = delta_ns > 0 ? delay.achieved_mean_ns(delta_ns, 20) : 0;
  const std::uint64_t delta_cycles = delta_ns > 0 ? clock.cycles(delta_ns) : 0;
  const double timer = clock.timer_cost_cycles();
  const std::uint64_t t_start = tsc::now();
  auto elapsed_ns = [&] { return clock.ns(tsc::now() - t_start); };
  for (std::size_t k = 0; k < cfg.bursts.size(); ++k) {
    const int M = cfg.bursts[k];
    // A burst longer than max_burst_ns would nearly always contain a timer interrupt or a VM exit, which
    // the median could then no longer leave out; past the first few points such M are not measured.
    if (k >= cfg.min_points && !c.points.empty() && c.points.back().point.value * M > cfg.max_burst_ns) break;
    throw_if_interrupted();
    hooks.progress(label + " M=" + std::to_string(M));
    auto sample = [&] {
      const std::uint64_t losses = ep.loss_events();
      const std::uint64_t t0 = tsc::now();
      for (int i = 0; i < M; ++i) {
        issue(i);
        delay.run(delta_cycles);
      }
      const std::uint64_t t1 = tsc::now_end();
      // Drain the replies outside the timed issue phase. A burst during which a message was lost is no
      // sample (NaN): measure_point re-measures it and counts it as discarded.
      if (!ep.wait_all() || ep.loss_events() != losses) return std::nan("");
      return clock.ns(static_cast<double>(t1 - t0) - timer) / M;
    };
    sample();  // one untimed burst warms caches and rings for this M
    c.points.push_back({M, measure_point(cfg.rule, sample, elapsed_ns)});
  }
  return c;
}

template <class EP>
SignatureData signature(EP& ep, ClientState& st, const Clock& clock, const SignatureConfig& cfg, const Hooks& hooks) {
  SignatureData d;
  hooks.progress("round trip");
  d.rtt = pingpong(ep, st, clock, cfg.rtt);
  hooks.checkpoint(d);
  auto request = [&ep](int) { ep.request(kEcho); };
  d.curves.push_back(signature_curve(ep, clock, 0, cfg, hooks, "signature Delta=0", request));
  hooks.checkpoint(d);
  const std::vector<double> deltas = cfg.deltas_ns.empty() ? hooks.deltas_after_first(d.curves.front()) : cfg.deltas_ns;
  for (double delta : deltas) {
    if (delta <= 0) continue;
    char label[64];
    std::snprintf(label, sizeof label, "signature Delta=%.0fns", delta);
    d.curves.push_back(signature_curve(ep, clock, delta, cfg, hooks, label, request));
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
