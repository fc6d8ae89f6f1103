// --bench signature: the LogP signature of Culler et al. (sections 3.1-3.3), M x Delta bursts of small
// requests, and the parameters read off it (analysis/signature_fit).
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/results_json.hpp"
#include "analysis/signature_fit.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"
#include "methods/signature/analysis.hpp"
#include "methods/signature/loops.hpp"
#include "methods/signature/options.hpp"

namespace logpb::methods::method {

struct signature {
  static constexpr const char* name = "signature";
  static constexpr const char* summary = "Culler et al. 3: the M x Delta signature (default)";
  static constexpr const char* plot = "signature";
  static constexpr Needs needs{};
  static constexpr bool burst_cap = true;
  static constexpr Scope scope = Scope::link;
  static constexpr Takes takes{.ud = true};
  static inline const std::vector<MethodOption> options = {opt::kMaxBurst, opt::kMaxBurstTime, opt::kBursts,
                                                           opt::kDeltas, opt::kDeltaFactors, opt::kDeltaKind};
  // The signature's o_r would be a remainder, g' - Delta - o_s, of whatever o_s did not take (the empty poll
  // before each request is timed inside o_s): it publishes the pair it defines, o_s_plus_o_r, and no "o_r".
  static inline const std::vector<SharedFigure> shares{
      {"o_s", "o_s",
       "signature's o_s is the send-only cost: the time per request of a burst too short to see a reply or fill "
       "the window, M < RTT/o_s (Culler et al. 3.1-3.2)",
       0},
      {"o_s_plus_o_r", "o_s_plus_o_r",
       "signature's o_s + o_r is the requester's cost per request/reply pair, g' - Delta on the Delta curves that "
       "raise the steady state (Culler et al. 3.3)",
       0},
      {"g", "g",
       "signature's g is the request/reply steady state at Delta = 0: the slowest of g_NI, o_s + o_r per pair at "
       "the requester, the replier's turnaround and RTT/W (Culler et al. 3.2){bottleneck}",
       1},
      {"rtt", "rtt", "signature's RTT is the median round trip of one small request/reply", 0},
      {"L", "L", "signature's L is RTT/2 - (o_s + o_r) (Culler et al. 3.3)", 0},
  };
  struct Run {
    methods::SignatureData data;
    analysis::SignatureFit fit;
  };

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::SignatureConfig cfg;
    const std::vector<int>& bursts = o.get(opt::kBursts);
    cfg.bursts = bursts.empty() ? methods::default_bursts(o.get(opt::kMaxBurst)) : bursts;
    cfg.deltas_ns = o.get(opt::kDeltas);
    cfg.auto_delta_factors = o.get(opt::kDeltaFactors);
    cfg.rule = o.rule;
    cfg.rtt = {o.iterations, o.warmup};
    cfg.max_burst_ns = o.get(opt::kMaxBurstTime);
    cfg.window = link.window();
    if (o.get(opt::kDeltaKind) == "compute") cfg.compute = std::make_shared<const ComputeDelay>(clock);
    {
      // How long this core's interruptions last, so the bursts that held one can be left out of their point
      // (methods::leave_out_interrupted). Watched here, at the run's start, not taken from the start-up probe:
      // a run of several minutes outlives that.
      const Interruptions irq = measure_interruptions(clock, 50);
      if (irq.count >= 3 && std::isfinite(irq.median_length_us)) cfg.interruption_ns = irq.median_length_us * 1e3;
    }
    if (!cfg.deltas_ns.empty() && cfg.deltas_ns.front() != 0) cfg.deltas_ns.insert(cfg.deltas_ns.begin(), 0.0);
    methods::Hooks hooks;
    // Percent done for the progress display: a step per point of each curve (and the round trip); points
    // past the longest burst are skipped and extensions added, so the share is an estimate.
    std::size_t curves = 1 + cfg.auto_delta_factors.size();
    if (!cfg.deltas_ns.empty())
      curves = static_cast<std::size_t>(
                   std::count_if(cfg.deltas_ns.begin(), cfg.deltas_ns.end(), [](double d) { return d > 0; })) +
               1;
    const double steps = 1.0 + static_cast<double>(curves * cfg.bursts.size());
    auto step = std::make_shared<int>(0);
    hooks.progress = [&io, step, steps](const std::string& s) {
      io.done(std::min(0.99, (*step)++ / steps));
      io.progress(s);
    };
    hooks.checkpoint = [&](const methods::SignatureData& d) { io.checkpoint(methods::signature_record(d, o.raw)); };
    hooks.steady_reached = [](const methods::SignatureCurve& c) {
      return analysis::steady_state_cost(methods::to_fit_curve(c)).reached;
    };
    // Once every curve is in, the fit judges the Delta = 0 curve against the o_s + o_r the Delta curves read:
    // a slope below it (Idle < 0 beyond its interval) is a curve still filling its window, which longer
    // bursts carry into its steady state (a 1990s NI, g > o_s + o_r, capped at 120 us: g read 2.7 us for 4.5).
    hooks.first_in_transition = [&](const methods::SignatureData& d) {
      return analysis::fit_signature(methods::to_fit_curves(d), analysis::rtt_param(d.rtt.summary), 1.2, link.window())
          .g_in_transition;
    };
    hooks.deltas_after_first = [&](const methods::SignatureCurve& c0) {
      const auto g = analysis::steady_state_cost(methods::to_fit_curve(c0)).cost;
      if (!g.valid)
        throw std::runtime_error("no steady state on the Delta = 0 curve to base the Delta grid on: " + g.note);
      return analysis::auto_deltas(g.value, cfg.auto_delta_factors);
    };
    // The automatic grid (0.5, 1, 2 and 4 g) raises the steady state at 2 g and 4 g at least; where only those
    // two did (a capacity-bound machine, g = RTT / W far above o_s + o_r), two estimates of o_s + o_r cannot
    // tell a trend from an interval too narrow (the capacity emulation, pair 1000 ns: 985 +- 46 against
    // 1167 +- 90), so 8 g and 16 g are added until three have raised.
    hooks.more_deltas = [&](const methods::SignatureData& d) {
      const auto fit =
          analysis::fit_signature(methods::to_fit_curves(d), analysis::rtt_param(d.rtt.summary), 1.2, link.window());
      const int raised = static_cast<int>(std::count_if(fit.per_delta.begin(), fit.per_delta.end(),
                                                        [](const analysis::DeltaFit& x) { return x.used; }));
      if (raised >= 3 || !fit.g.valid || d.curves.size() < 2) return std::vector<double>{};
      const double top = d.curves.back().delta_ns;
      return raised == 2 ? std::vector<double>{2 * top} : std::vector<double>{2 * top, 4 * top};
    };
    Run r;
    r.data = methods::signature(link, st, clock, cfg, hooks);
    r.data.interruption_ns = cfg.interruption_ns;
    r.data.compute_delta = cfg.compute != nullptr;
    // The replier's service time: its busy time per request, averaged over the Delta = 0 curve's thousands
    // of requests (an interval of 2% or the clock's step, whichever is larger).
    analysis::Param replier =
        analysis::Param::invalid("the replier did not time its service (a reflector, or no request)");
    if (std::isfinite(r.data.replier_service_ns) && r.data.replier_service_ns > 0)
      replier = analysis::param_of(
          r.data.replier_service_ns, std::max(0.02 * r.data.replier_service_ns, clock.resolution_ns()),
          "the replier's busy time per request over " + std::to_string(r.data.replier_requests) +
              " requests of the Delta = 0 curve: its receive, handler and reply (Culler et al. 3.5)");
    r.fit = analysis::fit_signature(methods::to_fit_curves(r.data), analysis::rtt_param(r.data.rtt.summary), 1.2,
                                    link.window(), replier, clock.resolution_ns());
    return r;
  }
  static nlohmann::json record(const Run& r, const Settings& o) {
    nlohmann::json j = methods::signature_record(r.data, o.raw);
    j["fit"] = r.fit;
    return j;
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    std::vector<analysis::SignatureFit> fits;
    for (const auto& r : runs) fits.push_back(r.fit);
    return methods::signature_summary(fits);
  }
};

}  // namespace logpb::methods::method
