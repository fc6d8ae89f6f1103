#include "analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "analysis/figures.hpp"
#include "analysis/results_json.hpp"

namespace logpb::analysis::compare {

using nlohmann::json;

namespace {

bool num(const json& j, const char* key) { return j.is_object() && j.contains(key) && j[key].is_number(); }

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The unit of a top-level parameter: the results name every figure *_ns, but some hold other things.
Unit unit_of(const std::string& key) {
  if (key == "G" || key == "G_ni") return Unit::ns_per_byte;
  if (key == "crossover_bytes") return Unit::bytes;
  if (key == "R_inf_bytes_per_ns") return Unit::gb_per_s;  // 1 byte/ns is 1 GB/s
  return Unit::ns;
}

std::string size_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", s);
  return b;
}

// Is this object a parameter entry (a figure, perhaps null)?
bool is_param(const json& p) { return p.is_object() && p.contains("value_ns"); }

Estimate estimate(const Figure& f) { return {f.value, f.ci95}; }

void add(std::vector<Quantity>& out, std::string param, const std::string& kind, double size, Unit u, Figure f) {
  Quantity q;
  q.param = std::move(param);
  q.size_kind = kind;
  q.size = size;
  q.unit = u;
  q.fig = std::move(f);
  q.label = kind.empty()  ? q.param
            : kind == "k" ? q.param + "(K=" + size_text(size) + ")"
                          : q.param + "(" + size_text(size) + ")";
  out.push_back(std::move(q));
}

std::string fmt_value(double v, Unit u) {
  char b[64];
  switch (u) {
    case Unit::ns:
      std::snprintf(b, sizeof b, "%.1f", v);
      break;
    case Unit::ns_per_byte:
      std::snprintf(b, sizeof b, "%.4f", v);
      break;
    case Unit::bytes:
      std::snprintf(b, sizeof b, "%.0f", v);
      break;
    case Unit::gb_per_s:
      std::snprintf(b, sizeof b, "%.3f", v);
      break;
    case Unit::ratio:
      std::snprintf(b, sizeof b, "%.3f", v);
      break;
  }
  return b;
}

std::string with_unit(const std::string& s, Unit u) {
  const std::string n = unit_name(u);
  return n.empty() ? s : s + " " + n;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_num(double v) {
  if (!std::isfinite(v)) return "";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::ns:
      return "ns";
    case Unit::ns_per_byte:
      return "ns/B";
    case Unit::bytes:
      return "B";
    case Unit::gb_per_s:
      return "GB/s";
    case Unit::ratio:
      return "";
  }
  return "";
}

Figure figure_of(const json& p) {
  Figure f;
  if (!p.is_object()) {
    f.error = "not a parameter entry";
    return f;
  }
  const char* vk = p.contains("value_ns") ? "value_ns" : "value";
  const char* ck = p.contains("value_ns") ? "ci95_ns" : "ci95";
  if (num(p, vk) && std::isfinite(p[vk].get<double>())) {
    f.valid = true;
    f.value = p[vk].get<double>();
    if (num(p, ck) && std::isfinite(p[ck].get<double>()) && p[ck].get<double>() >= 0) f.ci95 = p[ck].get<double>();
    return f;
  }
  f.error = str(p, "error");
  if (f.error.empty()) f.error = str(p, "note");
  if (f.error.empty()) f.error = "no value given";
  if (num(p, "upper_bound_ns")) f.upper_bound = p["upper_bound_ns"].get<double>();
  return f;
}

Figure difference(const Figure& base, const Figure& other, const std::string& base_name,
                  const std::string& other_name) {
  Figure d;
  if (!base.valid || !other.valid) {
    std::string why;
    if (!base.valid) why = base_name + " has no value: " + base.error;
    if (!other.valid) why += (why.empty() ? "" : "; ") + other_name + " has no value: " + other.error;
    d.error = why;
    return d;
  }
  d.valid = true;
  // Independent runs: the half-widths add in quadrature (see the header).
  const Estimate e = analysis::difference(estimate(base), estimate(other));
  d.value = e.value;
  if (std::isfinite(base.ci95) && std::isfinite(other.ci95))
    d.ci95 = e.ci95;
  else
    d.error = std::string("no interval: ") + (std::isfinite(base.ci95) ? other_name : base_name) + " gave none";
  return d;
}

std::vector<Quantity> quantities(const json& doc, const ReadingOf& reading) {
  std::vector<Quantity> out;
  const Reading how = reading(bench_of(doc));
  if (doc.contains("parameters") && doc["parameters"].is_object()) {
    double pp_size = 0;
    if (how.rtt_at_size) {
      const json& fl = doc["meta"].value("flags", json::object());
      if (num(fl, "size")) pp_size = fl["size"].get<double>();
    }
    // LogP's order first (the JSON object itself is sorted by name), then the rest.
    static const std::vector<std::string> first = {"o_s", "o_r", "g", "g_ni", "L", "rtt", "G", "G_ni"};
    std::vector<std::string> keys;
    for (const auto& k : first)
      if (doc["parameters"].contains(k)) keys.push_back(k);
    for (const auto& [k, p] : doc["parameters"].items())
      if (std::find(first.begin(), first.end(), k) == first.end()) keys.push_back(k);
    for (const auto& k : keys) {
      const json& p = doc["parameters"][k];
      if (!is_param(p)) continue;
      if (k == "rtt" && pp_size > 0)
        add(out, k, "bytes", pp_size, Unit::ns, figure_of(p));
      else
        add(out, k, "", 0, unit_of(k), figure_of(p));
    }
  }
  if (doc.contains("per_size") && doc["per_size"].is_array()) {
    for (const auto& e : doc["per_size"]) {
      if (!num(e, "bytes")) continue;
      const double n = e["bytes"].get<double>();
      for (const auto& [k, p] : e.items()) {
        if (is_param(p)) {
          const std::string name = k == "rtt" ? how.per_size_rtt : k;
          add(out, name, "bytes", n, Unit::ns, figure_of(p));
        } else if ((k == "send" || k == "recv") && p.is_object() && p.contains("availability")) {
          // Doerfler & Brightwell's availability, a fraction; its overhead is already o_s / o_r here.
          Figure f;
          if (num(p, "availability")) {
            f.valid = true;
            f.value = p["availability"].get<double>();
            if (num(p, "availability_ci95")) f.ci95 = p["availability_ci95"].get<double>();
          } else {
            f.error = str(p, "availability_error");
            if (f.error.empty()) f.error = "no availability";
          }
          add(out, "availability_" + k, "bytes", n, Unit::ratio, f);
        }
      }
      if (how.bandwidth && e.contains("rtt")) {
        // BW(n) = n / T(n); its half-width from T's (first order: n ciT / T²).
        const Figure t = figure_of(e["rtt"]);
        Figure bw;
        if (t.valid && t.value > 0) {
          bw.valid = true;
          bw.value = n / t.value;
          if (std::isfinite(t.ci95)) bw.ci95 = n * t.ci95 / (t.value * t.value);
        } else {
          bw.error = t.valid ? "T(n) is not positive" : "no T(n): " + t.error;
        }
        add(out, "BW", "bytes", n, Unit::gb_per_s, bw);
      }
    }
  }
  if (doc.contains("per_k") && doc["per_k"].is_array()) {
    for (const auto& e : doc["per_k"]) {
      if (!num(e, "k")) continue;
      const double k = e["k"].get<double>();
      if (e.contains("g") && is_param(e["g"])) add(out, "g", "k", k, Unit::ns, figure_of(e["g"]));
      for (const char* r : {"ratio", "gain"})
        if (e.contains(r) && e[r].is_object()) add(out, r, "k", k, Unit::ratio, figure_of(e[r]));
    }
  }
  return out;
}

std::string bench_of(const json& doc) {
  const json& meta = doc.is_object() ? doc.value("meta", json::object()) : json::object();
  return str(meta.value("flags", json::object()), "bench");
}

std::string transport_of(const json& doc) {
  const json& meta = doc.is_object() ? doc.value("meta", json::object()) : json::object();
  std::string t = str(meta.value("flags", json::object()), "transport");
  if (t.empty()) t = str(meta.value("transport", json::object()), "kind");
  return t;
}

void check_result(const json& doc, const std::string& what) {
  if (!doc.is_object()) throw Refused(what + ": not a logpbench result (not a JSON object)");
  const std::string schema = str(doc, "schema");
  if (schema.rfind("logpbench/", 0) != 0) {
    if (schema.rfind("logpbench-", 0) == 0)
      throw Refused(what + ": a " + schema +
                    " document, not a measured result (compare takes results of logpbench runs)");
    throw Refused(what + ": not a logpbench result (schema '" + schema + "', wanted logpbench/1)");
  }
  if (!doc.contains("meta") || !doc["meta"].is_object()) throw Refused(what + ": a logpbench result without 'meta'");
  if (!doc.contains("parameters") || !doc["parameters"].is_object())
    throw Refused(what + ": a logpbench result without 'parameters' (status '" + str(doc, "status") +
                  "'): nothing to compare");
}

std::vector<std::string> default_names(const std::vector<json>& docs) {
  auto unique = [](const std::vector<std::string>& v) {
    std::set<std::string> s(v.begin(), v.end());
    return s.size() == v.size() && !s.count("");
  };
  std::vector<std::string> t, tb, letters;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    t.push_back(transport_of(docs[i]));
    tb.push_back(t.back().empty() || bench_of(docs[i]).empty() ? std::string() : t.back() + "-" + bench_of(docs[i]));
    letters.push_back(i < 26 ? std::string(1, char('A' + i)) : "R" + std::to_string(i + 1));
  }
  if (unique(t)) return t;
  if (unique(tb)) return tb;
  return letters;
}

std::vector<std::string> parse_names(const std::string& list, std::size_t files) {
  std::vector<std::string> names;
  std::stringstream ss(list);
  std::string n;
  while (std::getline(ss, n, ',')) names.push_back(trim(n));
  if (!list.empty() && list.back() == ',') names.push_back("");
  if (names.size() != files)
    throw Refused("--names gives " + std::to_string(names.size()) + " name(s) for " + std::to_string(files) + " files");
  std::set<std::string> seen;
  for (const auto& x : names) {
    if (x.empty()) throw Refused("--names: an empty name");
    if (x.find_first_of(" \t") != std::string::npos)
      throw Refused("--names: '" + x + "' has a space (names start each line)");
    if (!seen.insert(x).second) throw Refused("--names: '" + x + "' given twice");
  }
  return names;
}

std::vector<std::string> knob_warnings(const std::vector<json>& docs, const std::vector<std::string>& names) {
  // Flags that do not change a figure: where output goes, how long to wait for a peer, what is recorded
  // (mpi-settings), and the transport, which is what a comparison is about (it is named in each line).
  // max_burst_time_effective_ns follows each run's own measured interruptions; max-burst-time, the knob,
  // is compared.
  static const std::set<std::string> ignored = {"json",
                                                "csv",
                                                "quiet",
                                                "port",
                                                "connect-timeout",
                                                "timeout",
                                                "link-timeout",
                                                "transport",
                                                "max_burst_time_effective_ns",
                                                "mpi-settings"};
  std::vector<std::string> w;
  if (docs.empty()) return w;
  const json& m0 = docs[0]["meta"];
  const json f0 = m0.value("flags", json::object());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string st = str(docs[i], "status");
    if (st != "complete")
      w.push_back(names[i] + " has status '" + st + "', not complete: its figures may come from part of the run");
  }
  for (std::size_t i = 1; i < docs.size(); ++i) {
    const json& mi = docs[i]["meta"];
    const json fi = mi.value("flags", json::object());
    std::vector<std::string> diffs;
    // A flag a run does not record was not set there (e.g. emulate on a run without emulation).
    auto text = [](const json& f, const std::string& k) {
      if (!f.contains(k)) return std::string("(not set)");
      return f[k].is_string() ? f[k].get<std::string>() : f[k].dump();
    };
    std::set<std::string> keys;
    for (const auto& [k, v] : f0.items()) keys.insert(k);
    for (const auto& [k, v] : fi.items()) keys.insert(k);
    for (const auto& k : keys) {
      if (ignored.count(k) || (f0.contains(k) && fi.contains(k) && f0[k] == fi[k])) continue;
      diffs.push_back(k + " " + text(f0, k) + " vs " + text(fi, k));
    }
    if (!diffs.empty()) {
      std::string s = names[0] + " and " + names[i] + " differ in knobs that change figures: ";
      for (std::size_t k = 0; k < diffs.size(); ++k) s += (k ? "; " : "") + diffs[k];
      w.push_back(s);
    }
    if (bench_of(docs[0]) != bench_of(docs[i]))
      w.push_back(names[0] + " ran " + bench_of(docs[0]) + ", " + names[i] + " ran " + bench_of(docs[i]) +
                  ": the methods define a parameter of the same name differently (docs/design.md §9), so a difference "
                  "may be the method's, not the interface's");
    for (const char* k : {"host", "cpu"}) {
      const std::string a = trim(str(m0, k)), b = trim(str(mi, k));
      if (a != b)
        w.push_back(names[0] + " and " + names[i] + " ran on a different " + k + ": '" + a + "' vs '" + b + "'");
    }
    if (str(m0, "version") != str(mi, "version"))
      w.push_back(names[0] + " and " + names[i] + " come from different logpbench versions: " + str(m0, "version") +
                  " vs " + str(mi, "version"));
  }
  return w;
}

std::vector<std::string> harness_lines(const std::vector<json>& docs, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  auto share = [](const json& d, const char* k) {
    const json h = d["meta"].value("harness", json::object());
    return h.contains(k) && h[k].is_object() && h[k].value("value_ns", json(nullptr)).is_number()
               ? h[k]["value_ns"].get<double>()
               : std::nan("");
  };
  char buf[256];
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const double s = share(docs[i], "send_ns"), r = share(docs[i], "recv_ns");
    if (!std::isfinite(s) || !std::isfinite(r)) {
      out.push_back("harness " + names[i] +
                    ": not recorded (a run older than meta.harness): its figures carry "
                    "logpbench's AM layer by an unknown amount");
      continue;
    }
    std::snprintf(buf, sizeof buf,
                  "harness %s: logpbench's AM layer costs %.1f ns per send and %.1f ns per receive "
                  "(meta.harness), inside its o_s and o_r",
                  names[i].c_str(), s, r);
    out.push_back(buf);
    if (const auto t = transport_share(docs[i])) {
      char tb[480];
      if (t->floor_above())
        std::snprintf(tb, sizeof tb,
                      "harness %s: its %s transport's own code is not split out: a bare %s loop in the same run "
                      "(meta.transport_floor) took %.0f ns, more than its small AM's rtt, %.0f ns, less the AM layer "
                      "(the link changed between them)",
                      names[i].c_str(), t->transport.c_str(), t->transport.c_str(), t->floor_rtt_ns, t->rtt_ns);
      else if (t->transport_ns < 0)
        std::snprintf(tb, sizeof tb,
                      "harness %s: its %s transport's own code adds under %.1f ns per message (a send and its "
                      "receive): its small AM's rtt, %.0f ns, over a bare %s loop in the same run "
                      "(meta.transport_floor), %.0f ns, leaves no more than the AM layer's %.1f",
                      names[i].c_str(), t->transport.c_str(), t->transport_ns + t->ci95_ns, t->rtt_ns,
                      t->transport.c_str(), t->floor_rtt_ns, t->am_layer_ns);
      else
        std::snprintf(tb, sizeof tb,
                      "harness %s: its %s transport's own code adds %.1f +- %.1f ns per message (a send and its "
                      "receive), also inside o_s and o_r: its small AM's rtt, %.0f ns, over a bare %s loop in the "
                      "same run (meta.transport_floor), %.0f ns, is %.1f ns per message, %.1f of it the AM layer",
                      names[i].c_str(), t->transport.c_str(), t->transport_ns, t->ci95_ns, t->rtt_ns,
                      t->transport.c_str(), t->floor_rtt_ns, t->over_floor_ns, t->am_layer_ns);
      out.push_back(tb);
    }
    if (i == 0) continue;
    const double s0 = share(docs[0], "send_ns"), r0 = share(docs[0], "recv_ns");
    if (!std::isfinite(s0) || !std::isfinite(r0)) continue;
    auto differs = [](double a, double b) { return std::fabs(a - b) > std::max(2.0, 0.1 * std::max(a, b)); };
    if (differs(s, s0) || differs(r, r0)) {
      std::snprintf(buf, sizeof buf,
                    "harness %s vs %s: the AM layer's share differs by %+.1f ns per send and %+.1f ns "
                    "per receive: that much of o_s and o_r \"added\" is logpbench's, not the interface's",
                    names[i].c_str(), names[0].c_str(), s - s0, r - r0);
      out.push_back(buf);
    }
  }
  return out;
}

Pair compare_pair(const json& base, const json& other, const std::string& a, const std::string& b,
                  const ReadingOf& reading) {
  Pair p{a, b, {}, {}, {}};
  const auto qa = quantities(base, reading), qb = quantities(other, reading);
  std::map<std::string, const Quantity*> in_b;
  for (const auto& q : qb) in_b.emplace(q.label, &q);
  std::set<std::string> in_a;
  for (const auto& q : qa) {
    in_a.insert(q.label);
    const auto it = in_b.find(q.label);
    if (it == in_b.end()) {
      p.only_a.push_back(q.label);
      continue;
    }
    Row r{q, *it->second, difference(q.fig, it->second->fig, a, b), false};
    // Resolved: the runs differ beyond the interval of their difference, with no allowance besides.
    r.resolved = r.added.valid &&
                 !analysis::agree(estimate(q.fig), estimate(it->second->fig), {analysis::Intervals::quadrature}).agree;
    p.rows.push_back(std::move(r));
  }
  for (const auto& q : qb)
    if (!in_a.count(q.label)) p.only_b.push_back(q.label);
  if (p.rows.empty())
    throw Refused(a + " (" + bench_of(base) + ") and " + b + " (" + bench_of(other) +
                  ") share no parameter: nothing to compare");
  return p;
}

std::string format_figure(const Figure& f, Unit u) {
  if (!f.valid) {
    if (std::isfinite(f.upper_bound))
      return "hidden, at most " + with_unit(fmt_value(f.upper_bound, u), u) + " (" + f.error + ")";
    return "n/a (" + f.error + ")";
  }
  if (!std::isfinite(f.ci95))
    return with_unit(fmt_value(f.value, u), u) + " (" + (f.error.empty() ? "no interval" : f.error) + ")";
  return with_unit(fmt_value(f.value, u) + " ± " + fmt_value(f.ci95, u), u);
}

std::string format_line(const Pair& p, const Row& r) {
  // A difference within its own interval says only that the two runs agree: a reader is told so, rather than
  // left to read "added -40 ± 50 ns" as a cost that is negative.
  return p.a + "-vs-" + p.b + " " + r.a.label + ": " + p.a + " " + format_figure(r.a.fig, r.a.unit) + ", " + p.b + " " +
         format_figure(r.b.fig, r.b.unit) + ", added " + format_figure(r.added, r.a.unit) +
         (r.added.valid && !r.resolved ? " (not resolved: the runs agree within it)" : "");
}

json figure_json(const Figure& f, Unit u) {
  json j = {{"value", f.valid ? json(f.value) : json(nullptr)},
            {"ci95", f.valid && std::isfinite(f.ci95) ? json(f.ci95) : json(nullptr)},
            {"unit", unit_name(u)}};
  if (!f.error.empty()) j["error"] = f.error;
  if (std::isfinite(f.upper_bound)) j["upper_bound"] = f.upper_bound;
  return j;
}

json pair_json(const Pair& p) {
  json rows = json::array();
  for (const auto& r : p.rows) {
    json row = {{"quantity", r.a.label},
                {"param", r.a.param},
                {"unit", unit_name(r.a.unit)},
                {p.a, figure_json(r.a.fig, r.a.unit)},
                {p.b, figure_json(r.b.fig, r.b.unit)},
                {"added", figure_json(r.added, r.a.unit)},
                {"resolved", r.resolved}};
    if (!r.a.size_kind.empty()) row[r.a.size_kind] = r.a.size;
    rows.push_back(row);
  }
  return {
      {"baseline", p.a}, {"other", p.b}, {"rows", rows}, {"only_in_baseline", p.only_a}, {"only_in_other", p.only_b}};
}

std::string csv(const std::vector<Pair>& pairs) {
  std::string s =
      "baseline,other,quantity,param,size_kind,size,unit,baseline_value,baseline_ci95,baseline_note,"
      "other_value,other_ci95,other_note,added,added_ci95,added_note,resolved\n";
  for (const auto& p : pairs)
    for (const auto& r : p.rows) {
      auto fig = [](const Figure& f) {
        const std::string note = f.valid ? f.error
                                 : std::isfinite(f.upper_bound)
                                     ? "hidden, at most " + csv_num(f.upper_bound) + ": " + f.error
                                     : f.error;
        return csv_num(f.valid ? f.value : NAN) + "," + csv_num(f.valid ? f.ci95 : NAN) + "," + csv_field(note);
      };
      s += csv_field(p.a) + "," + csv_field(p.b) + "," + csv_field(r.a.label) + "," + csv_field(r.a.param) + "," +
           r.a.size_kind + "," + (r.a.size_kind.empty() ? "" : csv_num(r.a.size)) + "," + unit_name(r.a.unit) + "," +
           fig(r.a.fig) + "," + fig(r.b.fig) + "," + fig(r.added) + "," + (r.resolved ? "true" : "false") + "\n";
    }
  return s;
}

json figure_inputs(const json& doc, const ReadingOf& reading) {
  json out = {{"bench", bench_of(doc)}, {"transport", transport_of(doc)}};
  const json& ps = doc.value("parameters", json::object());
  for (const char* k : {"o_s", "o_r", "rtt", "g"})
    out[k] = ps.contains(k) && is_param(ps[k]) ? figure_json(figure_of(ps[k]), Unit::ns) : json(nullptr);
  json curve = json::array();
  for (const auto& q : quantities(doc, reading))
    if (q.param == "g" && q.size_kind == "bytes") {
      json pt = figure_json(q.fig, q.unit);
      pt["bytes"] = q.size;
      curve.push_back(pt);
    }
  out["g_curve"] = curve;
  return out;
}

}  // namespace logpb::analysis::compare
