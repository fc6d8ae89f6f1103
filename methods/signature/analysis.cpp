#include "methods/signature/analysis.hpp"

#include <cmath>
#include <map>
#include <string>

#include "analysis/results_json.hpp"

namespace logpb::methods {

using namespace analysis;

namespace {
// The requester's polls over one more, untimed burst of the curve's largest M (methods/signature/loops.hpp,
// counted_burst): how many frames each poll that found any handed up, and polls per message.
nlohmann::json requester_polls_json(const methods::SignatureCurve& c) {
  if (c.counted_messages == 0) return nullptr;
  const double m = c.counted_messages;
  return {{"messages", c.counted_messages},
          {"polls", c.counted_polls},
          {"productive_polls", c.counted_productive_polls},
          {"frames", c.counted_frames},
          {"polls_per_message", static_cast<double>(c.counted_polls) / m},
          {"frames_per_productive_poll",
           c.counted_productive_polls
               ? nlohmann::json(static_cast<double>(c.counted_frames) / static_cast<double>(c.counted_productive_polls))
               : nlohmann::json(nullptr)}};
}
}  // namespace

nlohmann::json signature_curves_json(const methods::SignatureData& d, bool raw) {
  nlohmann::json curves = nlohmann::json::array();
  const bool compute = d.compute_delta;
  for (const auto& c : d.curves) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : c.points) {
      nlohmann::json jp = {
          {"M", p.M},
          {"cost_ns", p.point.value},
          {"net_of_delta_ns", p.net.n ? nlohmann::json(p.net.median) : nlohmann::json(nullptr)},
          {"ci95_ns", p.point.ci95},
          {"converged", p.point.converged},
          {"discarded", p.point.discarded},
          {"interrupted", p.interrupted},
          {"disturbed", p.disturbed},
          {"interrupted_cut_ns",
           std::isfinite(p.interrupted_cut_ns) ? nlohmann::json(p.interrupted_cut_ns) : nlohmann::json(nullptr)},
          {"summary", p.point.summary}};
      if (p.disturbed > 0) jp["disturbed_cause"] = p.disturbed_cause;
      if (raw) jp["samples_ns"] = p.point.samples;
      pts.push_back(std::move(jp));
    }
    curves.push_back({{"delta_ns", c.delta_ns},
                      {"delta_achieved_ns", c.delta_achieved_ns},
                      {"delta_source", compute ? "fixed work calibrated to Delta (--delta-kind compute): each burst is "
                                                 "net of its uninterrupted length, delta_subtracted_ns"
                                               : "spent inside the timed bursts (median per message)"},
                      {"delta_kind", compute ? "compute" : "deadline"},
                      {"delta_calibrated_ns", c.delta_calibrated_ns},
                      {"delta_subtracted_ns", c.delta_subtracted_ns},
                      // compute: how far the work stretched inside the bursts (1 = nothing was taken from the core)
                      {"delta_stretch", compute && c.delta_subtracted_ns > 0
                                            ? nlohmann::json(c.delta_achieved_ns / c.delta_subtracted_ns)
                                            : nlohmann::json(nullptr)},
                      {"steady_reached", c.steady_reached},
                      {"extended_M_points", c.extended},
                      {"requester_polls", requester_polls_json(c)},
                      {"points", pts}});
  }
  return curves;
}

Curve to_fit_curve(const methods::SignatureCurve& c) {
  // With Delta > 0 the fit reads each point as its bursts' own cost net of their own Delta, plus the
  // curve's median Delta (so the fit's g' - Delta is the net cost, as spent in the same bursts).
  Curve f;
  f.delta_ns = c.delta_subtracted_ns;
  f.max_burst_ns = c.max_burst_ns;
  for (const auto& p : c.points) {
    f.M.push_back(p.M);
    const bool net = c.delta_ns > 0 && p.net.n > 0 && std::isfinite(p.net.median);
    f.cost_ns.push_back(net ? p.net.median + c.delta_subtracted_ns : p.point.value);
    f.ci95_ns.push_back(net && std::isfinite(p.net.ci95_median) ? p.net.ci95_median : p.point.ci95);
    f.converged.push_back(p.point.converged);
  }
  return f;
}

std::vector<Curve> to_fit_curves(const methods::SignatureData& d) {
  std::vector<Curve> out;
  for (const auto& c : d.curves) out.push_back(to_fit_curve(c));
  return out;
}

nlohmann::json signature_record(const methods::SignatureData& d, bool raw) {
  return {{"rtt", distribution_json(d.rtt.rtt_ns, raw)},
          {"rtt_lost", d.rtt.lost},
          // The interruption length (a tick, a VM exit) the points were judged by: a burst more than half of it
          // per message above its point's lower quartile held one and is left out (the points' "interrupted").
          {"interruption_ns", std::isfinite(d.interruption_ns) ? nlohmann::json(d.interruption_ns) : nlohmann::json(nullptr)},
          // The replier's timed polls (Culler et al. 3.5): the median is the fit's replier_service; a mean or
          // 90th percentile well above it says part of its polls were slower (its throughput pays for them).
          {"replier_polls",
           {{"median_ns", std::isfinite(d.replier_service_ns) ? nlohmann::json(d.replier_service_ns) : nlohmann::json()},
            {"mean_ns", std::isfinite(d.replier_service_mean_ns) ? nlohmann::json(d.replier_service_mean_ns)
                                                                 : nlohmann::json()},
            {"p90_ns", std::isfinite(d.replier_service_p90_ns) ? nlohmann::json(d.replier_service_p90_ns)
                                                               : nlohmann::json()},
            {"requests", d.replier_requests}}},
          {"signature", signature_curves_json(d, raw)}};
}

namespace {
Param pick(const SignatureFit& f, const std::string& k) {
  if (k == "o_s") return f.o_s;
  if (k == "o_s_plus_o_r") return f.o_s_plus_o_r;
  if (k == "o_r_remainder") return f.o_r_remainder;
  if (k == "g") return f.g;
  if (k == "L") return f.L;
  if (k == "g_ni") return f.g_ni;
  if (k == "idle") return f.idle;
  if (k == "replier_service") return f.replier;
  return f.rtt;
}

// The figures a check of the fit concerns (`agree` leaves a figure judged when only checks about others
// failed); a check not named here concerns them all.
nlohmann::json check_about(const std::string& name) {
  if (name == "steady state reached at Delta = 0") return nlohmann::json::array({"g", "g_ni", "idle"});
  if (name == "send-only regime seen") return nlohmann::json::array({"o_s", "o_r_remainder"});
  if (name == "a Delta raised the steady state" || name == "o_s + o_r does not move with Delta" ||
      name == "steady state reached on every Delta curve used")
    return nlohmann::json::array({"o_s_plus_o_r", "o_r_remainder", "L", "idle", "g_ni"});
  if (name == "L >= 0") return nlohmann::json::array({"L"});
  if (name == "g >= o_s") return nlohmann::json::array({"g", "o_s"});
  // Idle < 0 beyond its interval: g and o_s + o_r contradict LogP, one of them is wrong.
  if (name == "Idle >= 0") return nlohmann::json::array({"idle", "g", "g_ni", "o_s_plus_o_r", "o_r_remainder", "L"});
  return nullptr;
}
}  // namespace

nlohmann::json signature_summary(const std::vector<SignatureFit>& fits) {
  nlohmann::json params = nlohmann::json::object();
  // The clock's step, which every run shares (one clock): a figure within one step of zero is a bound.
  const double step = fits.empty() ? std::nan("") : fits.front().step_ns;
  for (const std::string k :
       {"o_s", "o_s_plus_o_r", "o_r_remainder", "g", "L", "rtt", "g_ni", "idle", "replier_service"}) {
    std::vector<Param> v;
    for (const auto& f : fits) v.push_back(pick(f, k));
    params[k] = combine_runs(v, step);
  }
  params["o_s_plus_o_r"]["method_sense"] =
      "Culler et al. 3.3: g' - Delta on the Deltas that raise the steady state, the requester's cost per "
      "request/reply pair (its o_s + o_r as the signature defines them)";
  params["o_r_remainder"]["method_sense"] =
      "o_s_plus_o_r - o_s: what the send-only cost did not take. Not LogP's o_r: the empty poll before each request "
      "is timed inside o_s";
  // The bottleneck the runs named; runs that disagree are named too.
  std::map<std::string, int> votes;
  for (const auto& f : fits) ++votes[f.bottleneck.empty() ? "unknown" : f.bottleneck];
  std::string named;
  for (const auto& [b, n] : votes)
    named +=
        (named.empty() ? "" : ", ") + b + " (" + std::to_string(n) + " of " + std::to_string(fits.size()) + " runs)";
  params["g"]["bottleneck"] = votes.size() == 1 ? votes.begin()->first : named;
  params["g"]["method_sense"] =
      "Culler et al.: the steady-state cost per message at Delta = 0, the slowest stage including the processor";
  nlohmann::json checks = nlohmann::json::array();
  for (std::size_t r = 0; r < fits.size(); ++r)
    for (const auto& c : fits[r].checks) {
      nlohmann::json jc = c;
      jc["run"] = r;
      if (const nlohmann::json about = check_about(c.name); !about.is_null()) jc["about"] = about;
      checks.push_back(jc);
    }
  return {{"parameters", params}, {"checks", checks}};
}

}  // namespace logpb::methods
