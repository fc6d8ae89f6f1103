#include "analysis/kielmann.hpp"

#include <cmath>
#include <string>

#include "analysis/loggp.hpp"
#include "analysis/results_json.hpp"

namespace logpb::analysis {

namespace {

const methods::KielmannSize* find(const methods::KielmannResult& k, std::uint32_t m) {
  for (const auto& x : k.sizes)
    if (x.bytes == m) return &x;
  return nullptr;
}

PLogPPoint point(const methods::KielmannSize& k) { return {k.rtt, k.rtt_ci, k.o_s, k.o_s_ci, k.o_r, k.o_r_ci}; }

// One run's figures at size m: as measured (o_s, o_r, RTT), and converted by Table 1.
struct Derived {
  Param g, G, L_plogp, L, o_s, o_r, rtt, g0;
};
Derived derive(const methods::KielmannResult& k, std::uint32_t m) {
  Derived d;
  const auto* zero = find(k, 0);
  const auto* one = find(k, 1);
  const auto* x = find(k, m);
  d.g0 = std::isfinite(k.g0) ? param_of(k.g0, k.g0_ci, "", "Student-t over 5 repeats of the converged saturation")
                             : Param::invalid(k.notes.empty() ? "g(0) not measured" : k.notes.front());
  if (!x || !zero) return d;
  d.o_s = param_of(x->o_s, x->o_s_ci);
  d.o_r = param_of(x->o_r, x->o_r_ci);
  d.rtt = param_of(x->rtt, x->rtt_ci);
  const PLogPPoint p1 = one ? point(*one) : PLogPPoint{};
  const auto c = plogp_to_loggp(m, point(*x), point(*zero), one ? &p1 : nullptr, k.g0, k.g0_ci);
  d.g = c.g;
  d.G = c.G;
  d.L_plogp = c.L_plogp;
  d.L = c.L;
  return d;
}

}  // namespace

nlohmann::json kielmann_record(const methods::KielmannResult& r) {
  const double ratio = r.fast_seconds > 0 && r.saturation_seconds > 0 ? r.saturation_seconds / r.fast_seconds : NAN;
  return {{"method", "Kielmann et al. parameterized LogP (section 3)"},
          {"g0_messages", r.g0_n},
          {"g0_converged", r.g0_converged},
          {"notes", r.notes},
          {"fast_seconds", r.fast_seconds},
          {"saturation_seconds", r.saturation_seconds},
          {"saturation_vs_fast_time", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(nullptr)}};
}

nlohmann::json kielmann_summary(const std::vector<methods::KielmannResult>& runs) {
  nlohmann::json checks = nlohmann::json::array();
  const auto& r = runs.back();
  // Per size, over runs; sizes are those of the last run (each run may extend differently: a size
  // missing from a run counts as not measured there).
  nlohmann::json per = nlohmann::json::array();
  for (const auto& k : r.sizes) {
    std::vector<Param> os, orr, rtt, g, gs;
    for (const auto& run : runs) {
      const Derived d = derive(run, k.bytes);
      os.push_back(d.o_s);
      orr.push_back(d.o_r);
      rtt.push_back(d.rtt);
      g.push_back(d.g);
      const auto* x = find(run, k.bytes);
      if (x && std::isfinite(x->g_saturation)) gs.push_back(param_of(x->g_saturation, x->g_saturation_ci));
    }
    nlohmann::json e = {{"bytes", k.bytes}, {"o_s", over_runs(os)}, {"o_r", over_runs(orr)}, {"rtt", over_runs(rtt)},
                        {"g", over_runs(g)}, {"samples", k.samples}};
    if (!gs.empty()) {
      e["g_saturation"] = over_runs(gs);
      if (std::isfinite(k.g) && std::isfinite(k.g_saturation)) e["g_fast_vs_saturation"] = k.g / k.g_saturation;
    }
    per.push_back(e);
  }
  nlohmann::json p = nlohmann::json::object();
  if (find(r, 0) && find(r, 1)) {
    std::vector<Param> os, orr, g, g0, rtt, Lp, L, G, gni;
    std::vector<std::string> stages;
    const std::uint32_t big = r.sizes.back().bytes;
    for (const auto& run : runs) {
      const Derived d1 = derive(run, 1), d0 = derive(run, 0), dbig = derive(run, big);
      os.push_back(d1.o_s);
      orr.push_back(d1.o_r);
      g.push_back(d1.g);
      g0.push_back(d0.g0);
      rtt.push_back(d0.rtt);
      Lp.push_back(d0.L_plogp);
      L.push_back(d1.L);
      G.push_back(dbig.G);
      // g(0) by saturation is the sender's injection interval: max(g_NI, o_s(0), o_r(0)). Which one it
      // was, from the o_s(0) and o_r(0) this method measures itself.
      const auto c = classify_flood(d0.g0.valid ? d0.g0.value : NAN, d0.g0.ci95, d0.o_s, d0.o_r);
      gni.push_back(c.ni);
      stages.push_back(c.stage.empty() ? "unknown" : c.stage);
    }
    p["o_s"] = over_runs(os);
    p["o_r"] = over_runs(orr);
    p["g"] = over_runs(g);
    p["g"]["method_sense"] = "Kielmann et al. Table 1: LogP's g = g(1) = RTT(1) - RTT(0) + g(0)";
    p["g0"] = over_runs(g0);
    p["g0"]["method_sense"] = "g(0) by saturation: n one-way messages and one reply, the sender's injection interval";
    p["g0"]["bottleneck"] = stages.back();
    p["g0"]["estimator"] = "saturated once RTT_n / n changes by less than eps and RTT_1 < eps RTT_n (the paper's rule); "
                           "the figure is the median over 5 streams of that n of the receiver's credit-return rate";
    if (std::isfinite(r.g0_total_over_n)) p["g0"]["rtt_n_over_n_ns"] = r.g0_total_over_n;
    p["g_ni"] = over_runs(gni);
    p["rtt"] = over_runs(rtt);
    p["L_plogp"] = over_runs(Lp);
    p["L"] = over_runs(L);
    p["G"] = over_runs(G);
    p["G"]["note"] = "g(m)/m at the largest m (" + std::to_string(big) + " B), Table 1";
    add_check(checks, "L_plogp >= 0", p["L_plogp"]["value_ns"].is_number(), "RTT(0) < 2 g(0): saturation and round trips disagree");
    add_check(checks, "g(0) saturation converged", r.g0_converged, r.notes.empty() ? "" : r.notes.front());
    for (const auto& k : r.sizes)
      if (std::isfinite(k.o_r) && std::isfinite(k.g) && k.o_r > k.g + k.o_r_ci)
        add_check(checks, "o_r <= g at " + std::to_string(k.bytes) + " B", false,
                  "o_r(m) > g(m): unexpected messages cost more to receive than expected ones (Kielmann et al. 3.1)");
  }
  return {{"parameters", p}, {"per_size", per}, {"checks", checks}};
}

}  // namespace logpb::analysis
