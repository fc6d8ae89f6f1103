#include "analysis/results_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace logpb::analysis {

nlohmann::json distribution_json(const std::vector<double>& samples, bool raw) {
  const Summary s = summarize(samples);
  nlohmann::json j = {{"summary", s}};
  if (samples.empty()) return j;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  nlohmann::json pct = nlohmann::json::object();
  for (double q : {0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999}) {
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q * 100);
    pct[key] = quantile_of_sorted(v, q);
  }
  j["percentiles_ns"] = pct;
  // 64 equal bins from the minimum to the 99.9th percentile; what lies above is counted apart.
  const double lo = v.front(), hi = std::max(s.p999, lo + 1e-9);
  std::vector<std::uint64_t> bins(64, 0);
  std::uint64_t above = 0;
  for (double x : v) {
    if (x > hi) {
      ++above;
      continue;
    }
    auto b = static_cast<std::size_t>((x - lo) / (hi - lo) * 64);
    ++bins[std::min<std::size_t>(b, 63)];
  }
  j["histogram"] = {{"lo_ns", lo}, {"hi_ns", hi}, {"counts", bins}, {"above_hi", above}};
  if (raw) j["samples_ns"] = samples;
  return j;
}

nlohmann::json signature_curves_json(const methods::SignatureData& d, bool raw) {
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& c : d.curves) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : c.points) {
      nlohmann::json jp = {{"M", p.M},
                           {"cost_ns", p.point.value},
                           {"net_of_delta_ns", p.net.n ? nlohmann::json(p.net.median) : nlohmann::json(nullptr)},
                           {"ci95_ns", p.point.ci95},
                           {"converged", p.point.converged},
                           {"discarded", p.point.discarded},
                           {"summary", p.point.summary}};
      if (raw) jp["samples_ns"] = p.point.samples;
      pts.push_back(std::move(jp));
    }
    curves.push_back({{"delta_ns", c.delta_ns},
                      {"delta_achieved_ns", c.delta_achieved_ns},
                      {"delta_source", "spent inside the timed bursts (median per message)"},
                      {"delta_calibrated_ns", c.delta_calibrated_ns},
                      {"steady_reached", c.steady_reached},
                      {"extended_M_points", c.extended},
                      {"points", pts}});
  }
  return curves;
}

Curve to_fit_curve(const methods::SignatureCurve& c) {
  // With Delta > 0 the fit reads each point as its bursts' own cost net of their own Delta, plus the
  // curve's median Delta (so the fit's g' - Delta is the net cost, as spent in the same bursts).
  Curve f;
  f.delta_ns = c.delta_achieved_ns;
  for (const auto& p : c.points) {
    f.M.push_back(p.M);
    const bool net = c.delta_ns > 0 && p.net.n > 0 && std::isfinite(p.net.median);
    f.cost_ns.push_back(net ? p.net.median + c.delta_achieved_ns : p.point.value);
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

Param rtt_param(const Summary& s) {
  if (s.n == 0 || !(s.median > 0)) return Param::invalid("no round trip measured", s.median);
  Param p;
  p.value = p.raw = s.median;
  p.ci95 = std::isfinite(s.ci95_median) ? s.ci95_median : 0;
  p.valid = true;
  p.note = "median round trip";
  return p;
}

Param param_of(double v, double ci, const std::string& note, const std::string& ci_method) {
  if (!std::isfinite(v)) return Param::invalid(note.empty() ? "not measured" : note);
  Param p;
  p.value = p.raw = v;
  p.ci95 = std::isfinite(ci) ? ci : 0;
  p.valid = true;
  p.note = note;
  p.ci_method = ci_method;
  return p;
}

nlohmann::json over_runs(const std::vector<Param>& v) { return combine_runs(v); }

void add_check(nlohmann::json& checks, const std::string& name, bool ok, const std::string& detail) {
  if (!checks.is_array()) checks = nlohmann::json::array();
  checks.push_back({{"name", name}, {"ok", ok}, {"detail", ok ? "" : detail}});
}

}  // namespace logpb::analysis
