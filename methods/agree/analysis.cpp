#include "methods/agree/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace logpb::analysis {
namespace {

struct Source {
  const char* method;
  const char* key;  // in that method's parameters
};

struct Shared {
  const char* param;
  std::vector<Source> sources;
};

// Which figure of which method stands for each shared parameter. Kielmann's LogP g is g(1), which is
// g(0) plus a byte's round-trip cost: g(0) is the saturation itself, the figure the papers set against
// the signature's steady state.
const std::vector<Shared>& shared_parameters() {
  static const std::vector<Shared> s{
      {"o_s", {{"signature", "o_s"}, {"kielmann", "o_s"}, {"overlap", "o_s"}, {"availability", "o_s"}}},
      {"o_r", {{"signature", "o_r"}, {"kielmann", "o_r"}, {"overlap", "o_r"}, {"availability", "o_r"}}},
      {"g", {{"signature", "g"}, {"kielmann", "g0"}}},
      {"rtt", {{"signature", "rtt"}, {"kielmann", "rtt"}, {"overlap", "rtt"}}},
      {"L", {{"signature", "L"}, {"kielmann", "L"}}},
  };
  return s;
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

// What each method's figure is, in its own paper's terms.
std::string definition(const std::string& param, const std::string& method, const nlohmann::json& p,
                       const nlohmann::json& record, const nlohmann::json& transport) {
  if (param == "o_s") {
    if (method == "signature")
      return "signature's o_s is the send-only cost: the time per request of a burst too short to fill the "
             "window (Culler et al. 3.2)";
    if (method == "kielmann")
      return "Kielmann's o_s is the time inside the send call of one 1-byte message (Kielmann et al. 3)";
    if (method == "overlap")
      return "overlap's o_s is inferred from the computation a stream of sends cannot hide (Bell et al. 4.3)";
    return "availability's o_s is post, work, then wait for local completion, less the work (Doerfler & Brightwell "
           "2): it holds what local completion costs, here: " + local_completion_text(transport);
  }
  if (param == "o_r") {
    if (method == "signature")
      return "signature's o_r is read off the Delta curves, g' - Delta - o_s (Culler et al. 3.3)";
    if (method == "kielmann")
      return "Kielmann's o_r is the receive call's time after waiting Delta > RTT, the message already there "
             "(Kielmann et al. 3)";
    if (method == "overlap")
      return "overlap's o_r is the per-message receive cost under a flood, from the computation it cannot hide "
             "(Bell et al. 4.3)";
    return "availability's o_r is a receive posted, work, then the receive completed, less the work (Doerfler & "
           "Brightwell 2)";
  }
  if (param == "g") {
    if (method == "signature")
      return "signature's g is the request/reply steady state at Delta = 0: the slowest of g_NI, o_s + o_r per "
             "pair at the requester, the replier's turnaround and RTT/W (Culler et al. 3.2)" + bottleneck(p);
    return "Kielmann's g(0) is a one-way saturation, n messages and one reply: max(g_NI, o_s, o_r) (Kielmann et "
           "al. 3)" + bottleneck(p);
  }
  if (param == "rtt") {
    if (method == "signature") return "signature's RTT is the median round trip of one small request/reply";
    if (method == "kielmann") return "Kielmann's RTT(0) is the round trip of an empty message";
    const auto& per = record.value("per_size", nlohmann::json::array());
    const std::string bytes = !per.empty() && per[0].contains("bytes") ? per[0]["bytes"].dump() : std::string("?");
    return "overlap's RTT is the median round trip of its smallest message (" + bytes + " B, a bulk store)";
  }
  if (method == "signature") return "signature's L is RTT/2 - o_s - o_r (Culler et al. 3.3)";
  return "Kielmann's L is LogP's by their Table 1: (RTT(0) - 2 g(0))/2 + g(1) - o_s(1) - o_r(1), so it carries "
         "their g(0)";
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
  for (const auto& sh : shared_parameters()) {
    nlohmann::json methods = nlohmann::json::object(), defs = nlohmann::json::object();
    std::vector<Entry> entries;
    std::string unobserved;
    for (const auto& src : sh.sources) {
      if (!records.contains(src.method)) continue;
      const auto& rec = records[src.method];
      const auto& params = rec.value("parameters", nlohmann::json::object());
      const nlohmann::json p = params.value(src.key, nlohmann::json::object());
      nlohmann::json m = {{"key", src.key},
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
        unobserved += std::string(unobserved.empty() ? "" : "; ") + src.method + " cannot observe it here (" + bound +
                      why + ")";
      }
      methods[src.method] = m;
      defs[src.method] = definition(sh.param, src.method, p, rec, transport);
    }
    nlohmann::json r = {{"methods", methods}, {"definitions", defs}};
    if (entries.size() < 2) {
      r["verdict"] = "not compared";
      r["max_rel_diff"] = nullptr;
      r["max_rel_diff_beyond_ci95"] = nullptr;
      r["explanation"] = std::string(entries.empty() ? "no method" : "only " + entries.front().method) +
                         " observed it" + (unobserved.empty() ? "" : "; " + unobserved);
      out[sh.param] = r;
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
      r["explanation"] = (raw <= tolerance ? "agree within " + percent(tolerance)
                                           : "agree within the timer's own cost (" + us(floor_ns) +
                                                 "): figures this small cannot show a difference of " +
                                                 percent(tolerance)) +
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
    out[sh.param] = r;
  }
  return out;
}

nlohmann::json agreed_parameters(const nlohmann::json& records) {
  nlohmann::json out = nlohmann::json::object();
  auto param = [&](const char* method, const char* key) -> nlohmann::json {
    if (!records.contains(method)) return nullptr;
    const auto& p = records[method].value("parameters", nlohmann::json::object());
    if (!p.contains(key) || !p[key].is_object()) return nullptr;
    nlohmann::json j = p[key];
    j["source"] = std::string(method) + " " + key;
    return j;
  };
  for (const char* k : {"o_s", "o_r", "L", "rtt"}) {
    const auto j = param("signature", k);
    if (!j.is_null()) out[k] = j;
  }
  nlohmann::json g = param("kielmann", "g0");
  if (g.is_null() || !g["value_ns"].is_number()) {
    const auto s = param("signature", "g");
    if (!s.is_null()) g = s;
  }
  if (!g.is_null()) out["g"] = g;
  return out;
}

}  // namespace logpb::analysis
