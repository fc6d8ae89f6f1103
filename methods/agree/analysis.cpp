#include "methods/agree/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "methods/descriptor.hpp"

namespace logpb::analysis {
namespace {

struct Source {
  std::string method;
  const app::SharedFigure* figure;
};

// Each shared parameter's figures, from the descriptors of the methods agree runs, in their order.
std::vector<Source> sources_of(const std::string& param) {
  std::vector<Source> out;
  for (const char* name : kAgreeMethods)
    if (const app::MethodInfo* m = app::find_method(name))
      for (const auto& f : m->shares)
        if (f.param == param) out.push_back({name, &f});
  return out;
}

std::string local_completion_text(const nlohmann::json& transport) {
  if (!transport.is_object() || !transport.contains("local_completion")) return "not described by the transport";
  const auto& c = transport["local_completion"];
  if (c.is_string()) return c.get<std::string>();
  if (c.is_object()) {
    std::string s = c.value("meaning", std::string());
    const std::string m = c.value("mechanism", std::string());
    if (!m.empty()) s += (s.empty() ? "" : " (") + m + (s.empty() ? "" : ")");
    if (!s.empty()) return s;
  }
  return c.dump();
}

// A parameter's bottleneck as its method named it ("" when it did not).
std::string bottleneck(const nlohmann::json& p) {
  const auto b = p.value("bottleneck", std::string());
  return b.empty() || b == "unknown" ? std::string() : " (bottleneck here: " + b + ")";
}

// What the method's figure is, in its own paper's terms, with what only the run knows filled in.
std::string definition(const app::SharedFigure& f, const nlohmann::json& p, const nlohmann::json& record,
                       const nlohmann::json& transport) {
  std::string text = f.definition;
  auto fill = [&](const std::string& hole, const auto& value) {
    const auto at = text.find(hole);
    if (at != std::string::npos) text.replace(at, hole.size(), value());
  };
  fill("{local_completion}", [&] { return local_completion_text(transport); });
  fill("{bottleneck}", [&] { return bottleneck(p); });
  fill("{first_bytes}", [&] {
    const auto& per = record.value("per_size", nlohmann::json::array());
    return !per.empty() && per[0].contains("bytes") ? per[0]["bytes"].dump() : std::string("?");
  });
  return text;
}

struct Entry {
  std::string method;
  double value = NAN, ci = 0;
  bool valid = false;
};

std::string us(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f us", ns / 1e3);
  return b;
}

std::string percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", x * 100);
  return b;
}

std::string names(const std::vector<const Entry*>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i]->method + " " + us(v[i]->value);
  return s;
}

}  // namespace

nlohmann::json agreement(const nlohmann::json& records, const nlohmann::json& transport, double floor_ns,
                         double tolerance) {
  floor_ns = std::isfinite(floor_ns) && floor_ns > 0 ? floor_ns : 0.0;
  nlohmann::json out = {{"tolerance", tolerance}, {"floor_ns", floor_ns}};
  for (const char* param : kSharedParameters) {
    nlohmann::json methods = nlohmann::json::object(), defs = nlohmann::json::object();
    std::vector<Entry> entries;
    std::string unobserved;
    for (const auto& src : sources_of(param)) {
      if (!records.contains(src.method)) continue;
      const auto& rec = records[src.method];
      const auto& params = rec.value("parameters", nlohmann::json::object());
      const nlohmann::json p = params.value(src.figure->key, nlohmann::json::object());
      nlohmann::json m = {{"key", src.figure->key},
                          {"value_ns", p.value("value_ns", nlohmann::json(nullptr))},
                          {"ci95_ns", p.value("ci95_ns", nlohmann::json(nullptr))}};
      Entry e{src.method};
      e.valid = m["value_ns"].is_number() && m["value_ns"].get<double>() > 0;
      if (e.valid) {
        e.value = m["value_ns"].get<double>();
        e.ci = m["ci95_ns"].is_number() ? std::max(0.0, m["ci95_ns"].get<double>()) : 0.0;
        entries.push_back(e);
      } else {
        // A figure the method could not observe is a bound, never a disagreement.
        m["value_ns"] = nullptr;
        const std::string why = p.value("error", p.value("note", std::string("not measured")));
        m["error"] = why;
        std::string bound;
        if (p.contains("upper_bound_ns") && p["upper_bound_ns"].is_number()) {
          m["upper_bound_ns"] = p["upper_bound_ns"];
          bound = "at most " + us(p["upper_bound_ns"].get<double>()) + ": ";
        }
        unobserved +=
            std::string(unobserved.empty() ? "" : "; ") + src.method + " cannot observe it here (" + bound + why + ")";
      }
      methods[src.method] = m;
      defs[src.method] = definition(*src.figure, p, rec, transport);
    }
    nlohmann::json r = {{"methods", methods}, {"definitions", defs}};
    if (entries.size() < 2) {
      r["verdict"] = "not compared";
      r["max_rel_diff"] = nullptr;
      r["max_rel_diff_beyond_ci95"] = nullptr;
      r["explanation"] = std::string(entries.empty() ? "no method" : "only " + entries.front().method) +
                         " observed it" + (unobserved.empty() ? "" : "; " + unobserved);
      out[param] = r;
      continue;
    }
    // raw: as measured; past_floor: less the floor; beyond: less the floor and both intervals.
    double raw = 0, past_floor = 0, beyond = 0;
    for (std::size_t i = 0; i < entries.size(); ++i)
      for (std::size_t j = i + 1; j < entries.size(); ++j) {
        const auto& a = entries[i];
        const auto& b = entries[j];
        const double larger = std::max(a.value, b.value);
        const double d = std::fabs(a.value - b.value);
        raw = std::max(raw, d / larger);
        past_floor = std::max(past_floor, std::max(0.0, d - floor_ns) / larger);
        beyond = std::max(beyond, std::max(0.0, d - floor_ns - a.ci - b.ci) / larger);
      }
    r["max_rel_diff"] = raw;
    r["max_rel_diff_beyond_ci95"] = beyond;
    if (past_floor <= tolerance) {
      r["verdict"] = "agree";
      r["explanation"] =
          (raw <= tolerance ? "agree within " + percent(tolerance)
                            : "agree within the timer's own cost (" + us(floor_ns) +
                                  "): figures this small cannot show a difference of " + percent(tolerance)) +
          (unobserved.empty() ? "" : "; " + unobserved);
    } else {
      // Split the figures where they part most (the largest ratio between neighbours): the two groups are
      // what the definitions must explain.
      std::vector<const Entry*> sorted;
      for (const auto& e : entries) sorted.push_back(&e);
      std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) { return a->value < b->value; });
      std::size_t cut = 1;
      double best = 0;
      for (std::size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i]->value / sorted[i - 1]->value > best) {
          best = sorted[i]->value / sorted[i - 1]->value;
          cut = i;
        }
      const std::vector<const Entry*> low(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(cut));
      const std::vector<const Entry*> high(sorted.begin() + static_cast<std::ptrdiff_t>(cut), sorted.end());
      std::string text = "differ by " + percent(raw) + " (" + names(high) + " above " + names(low) + ")";
      std::string d;
      for (const auto* group : {&high, &low})
        for (const auto* e : *group) d += (d.empty() ? "" : "; ") + defs[e->method].get<std::string>();
      if (beyond > tolerance) {
        r["verdict"] = "differ";
        text += ": ";
      } else {
        // The figures part, but their intervals are wide enough to cover it: a difference the run cannot
        // claim (an interruption inside a few repeats widens a Student-t interval past the value itself).
        std::string wide;
        for (const auto& e : entries) wide += (wide.empty() ? "" : ", ") + e.method + " +-" + us(e.ci);
        r["verdict"] = "inconclusive";
        text += ", but their 95% intervals (" + wide + ") cover all but " + percent(beyond) +
                ": repeat with more --runs on a quieter core; if it holds, ";
      }
      r["explanation"] = text + d + (unobserved.empty() ? "" : "; " + unobserved);
    }
    out[param] = r;
  }
  return out;
}

nlohmann::json agreed_parameters(const nlohmann::json& records) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* param : kSharedParameters) {
    std::vector<Source> ranked;
    for (const auto& src : sources_of(param))
      if (src.figure->table_rank >= 0) ranked.push_back(src);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Source& a, const Source& b) { return a.figure->table_rank < b.figure->table_rank; });
    // The first figure with a value; else the last one there is (its error and bound with it).
    nlohmann::json chosen;
    for (const auto& src : ranked) {
      if (!records.contains(src.method)) continue;
      const auto& p = records[src.method].value("parameters", nlohmann::json::object());
      if (!p.contains(src.figure->key) || !p[src.figure->key].is_object()) continue;
      nlohmann::json j = p[src.figure->key];
      j["source"] = src.method + " " + src.figure->key;
      const bool has_value = j.contains("value_ns") && j["value_ns"].is_number();
      chosen = j;
      if (has_value) break;
    }
    if (!chosen.is_null()) out[param] = chosen;
  }
  return out;
}

}  // namespace logpb::analysis
