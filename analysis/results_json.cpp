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
