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
  // An interval that could not be computed stays unknown (null), never a falsely tight 0: a value of one run
  // with no interval of its own then has none, and over runs the runs' scatter gives it (combine_runs).
  p.ci95 = ci;
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

void add_note(nlohmann::json& notes, const std::string& name, const std::string& detail) {
  if (!notes.is_array()) notes = nlohmann::json::array();
  notes.push_back({{"name", name}, {"detail", detail}});
}

std::optional<TransportShare> transport_share(const nlohmann::json& doc) {
  using nlohmann::json;
  const json meta = doc.value("meta", json::object());
  const json floor = meta.value("transport_floor", json::object()).value("rtt", json::object());
  const json rtt = doc.value("parameters", json::object()).value("rtt", json::object());
  const json h = meta.value("harness", json::object());
  auto number = [](const json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number() ? std::optional<double>(j[k].get<double>())
                                                               : std::nullopt;
  };
  const auto f = number(floor, "value_ns"), r = number(rtt, "value_ns");
  const auto s = number(h.value("send_ns", json::object()), "value_ns");
  const auto v = number(h.value("recv_ns", json::object()), "value_ns");
  const json size = meta.value("flags", json::object()).value("size", json(0));
  if (!f || !r || !s || !v || (size.is_number() && size.get<double>() != 0)) return std::nullopt;
  TransportShare t;
  t.transport = meta.value("transport", json::object()).value("kind", std::string("transport"));
  t.rtt_ns = *r;
  t.floor_rtt_ns = *f;
  t.over_floor_ns = (*r - *f) / 2;
  t.am_layer_ns = *s + *v;
  t.transport_ns = t.over_floor_ns - t.am_layer_ns;
  const double ci_r = number(rtt, "ci95_ns").value_or(0), ci_f = number(floor, "ci95_ns").value_or(0);
  t.ci95_ns = std::sqrt(ci_r * ci_r + ci_f * ci_f) / 2;
  return t;
}

}  // namespace logpb::analysis
