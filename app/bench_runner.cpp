#include "bench_runner.hpp"

#include <algorithm>

namespace logpb::app {

nlohmann::json distribution_json(const std::vector<double>& samples, bool raw) {
  const Summary s = summarize(samples);
  nlohmann::json j = {{"summary", s}};
  if (samples.empty()) return j;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  nlohmann::json pct = nlohmann::json::object();
  for (double q : {0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999}) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q * 100);
    pct[key] = v[i];
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
                           {"ci95_ns", p.point.ci95},
                           {"converged", p.point.converged},
                           {"discarded", p.point.discarded},
                           {"summary", p.point.summary}};
      if (raw) jp["samples_ns"] = p.point.samples;
      pts.push_back(std::move(jp));
    }
    curves.push_back({{"delta_ns", c.delta_ns}, {"delta_achieved_ns", c.delta_achieved_ns}, {"delta_mean_ns", c.delta_mean_ns}, {"points", pts}});
  }
  return curves;
}

std::vector<analysis::Curve> to_fit_curves(const methods::SignatureData& d) {
  std::vector<analysis::Curve> out;
  for (const auto& c : d.curves) {
    analysis::Curve f;
    f.delta_ns = c.delta_achieved_ns;
    for (const auto& p : c.points) {
      f.M.push_back(p.M);
      f.cost_ns.push_back(p.point.value);
      f.ci95_ns.push_back(p.point.ci95);
    }
    out.push_back(std::move(f));
  }
  return out;
}

analysis::Param rtt_param(const Summary& s) {
  if (s.n == 0 || !(s.median > 0)) return analysis::Param::invalid("no round trip measured", s.median);
  analysis::Param p;
  p.value = p.raw = s.median;
  p.ci95 = std::isfinite(s.ci95_median) ? s.ci95_median : 0;
  p.valid = true;
  p.note = "median round trip";
  return p;
}

namespace {
analysis::Param pick(const analysis::SignatureFit& f, const std::string& k) {
  if (k == "o_s") return f.o_s;
  if (k == "o_r") return f.o_r;
  if (k == "g") return f.g;
  if (k == "L") return f.L;
  return f.rtt;
}
}  // namespace

void summarize_runs(ResultsDoc& doc, const std::vector<analysis::SignatureFit>& fits) {
  nlohmann::json params = nlohmann::json::object();
  for (const std::string k : {"o_s", "o_r", "g", "L", "rtt"}) {
    std::vector<analysis::Param> v;
    for (const auto& f : fits) v.push_back(pick(f, k));
    params[k] = analysis::combine_runs(v);
  }
  doc.j["parameters"] = params;
  nlohmann::json checks = nlohmann::json::array();
  for (std::size_t r = 0; r < fits.size(); ++r)
    for (const auto& c : fits[r].checks) {
      nlohmann::json jc = c;
      jc["run"] = r;
      checks.push_back(jc);
    }
  doc.j["checks"] = checks;
}

void summarize_pingpong_runs(ResultsDoc& doc, const std::vector<analysis::Param>& rtts) {
  doc.j["parameters"] = {{"rtt", analysis::combine_runs(rtts)}};
  doc.j["checks"] = nlohmann::json::array();
}

}  // namespace logpb::app
