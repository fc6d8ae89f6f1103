#include "methods/agree/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/figures.hpp"
#include "methods/descriptor.hpp"

namespace logpb::methods {

using namespace analysis;
namespace {

// How the cross-check's figure must stand to the defining one.
enum class Relation {
  same,      // both time the same thing
  at_least,  // the cross-check's figure holds the defining one and more
};

struct Figure {
  const char* method;
  const char* key;  // where the method's parameters hold it
};

struct Quantity {
  const char* name;
  const char* meaning;
  Figure defined_by;
  Figure cross;
  Relation relation;
  const char* relation_text;  // why the relation holds, in the papers' terms
};

// The table's rows: what each quantity is, who defines it, who checks it and how.
constexpr Quantity kQuantities[] = {
    {"o_s", "the send call alone (of one frame)", {"kielmann", "o_s_0"}, {"signature", "o_s"}, Relation::at_least,
     "the signature's send-only cost holds the send call and the poll its request makes first (Culler et al. 3.2; "
     "an AM request polls before it sends), so it is at least Kielmann's send call"},
    {"o_s_completion", "the send up to local completion", {"availability", "o_s_completion"},
     {"overlap", "o_s_completion"}, Relation::same,
     "both post a send, compute, and wait for its local completion (Doerfler & Brightwell 2; Bell et al. 4.3)"},
    {"o_r", "one receive of a message already there, with the poll that finds it", {"kielmann", "o_r_0"},
     {"availability", "o_r"}, Relation::same,
     "both time the receive of one message that arrived while the receiver computed (Kielmann et al. 3: after a "
     "wait Delta > RTT; Doerfler & Brightwell 2: after work longer than the transfer)"},
    {"o_r_stream", "per message of a saturated one-way stream", {"overlap", "o_r_stream"}, {"kielmann", "o_r_0"},
     Relation::at_least,
     "in a stream one poll hands up several frames and its fixed cost is shared among them, so the cost per "
     "message is at most that of one receive (o_r)"},
    {"o_s_plus_o_r", "the requester's cost per request/reply pair", {"signature", "o_s_plus_o_r"},
     {"kielmann", "o_s_plus_o_r"}, Relation::same,
     "the signature's g' - Delta is one request's send and one reply's receive (Culler et al. 3.3), as Kielmann's "
     "o_s + o_r are"},
    {"g", "the one-way gap: g(0) by saturation", {"kielmann", "g0"}, {"signature", "g"}, Relation::at_least,
     "the signature's steady state is the slowest of g, o_s + o_r per pair, the replier's turnaround and RTT/W "
     "(Culler et al. 3.1), a one-way saturation the slowest of g, o_s and o_r (Kielmann et al. 3): the first is at "
     "least the second"},
    {"rtt", "the round trip of a small message", {"signature", "rtt"}, {"kielmann", "rtt"}, Relation::same,
     "both time the round trip of one small message, the signature's with the poll its request makes before it "
     "is sent (an AM request, Culler et al. 3.2) and Kielmann's without (its o_s is the send call, section 3): "
     "where the poll phase measured an empty poll, Kielmann's is taken with one added"},
    {"L", "the latency: half the round trip less the overheads", {"signature", "L"}, {"kielmann", "L"},
     Relation::same, "both are LogP's L, RTT/2 - o_s - o_r (Culler et al. 3.3; Kielmann et al. Table 1)"},
};

const Quantity* quantity(const std::string& name) {
  for (const auto& q : kQuantities)
    if (name == q.name) return &q;
  return nullptr;
}

const SharedFigure* shared(const std::string& method, const std::string& param) {
  if (const MethodInfo* m = find_method(method))
    for (const auto& f : m->shares)
      if (f.param == param) return &f;
  return nullptr;
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
std::string definition(const std::string& method, const std::string& param, const nlohmann::json& p,
                       const nlohmann::json& record, const nlohmann::json& transport) {
  const SharedFigure* f = shared(method, param);
  std::string text = f ? f->definition : method + "'s " + param;
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

// The method's own failed checks that concern this figure (a check without "about" concerns them all).
std::vector<std::string> failed_checks(const nlohmann::json& record, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& c : record.value("checks", nlohmann::json::array())) {
    if (!c.is_object() || c.value("ok", true)) continue;
    if (c.contains("about") && c["about"].is_array()) {
      bool concerns = false;
      for (const auto& a : c["about"]) concerns = concerns || (a.is_string() && a.get<std::string>() == key);
      if (!concerns) continue;
    }
    const std::string name = c.value("name", std::string("?"));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

struct Entry {
  std::string method, key;
  double value = NAN, ci = 0;
  bool valid = false;
  std::vector<std::string> failed;
};

// One method's figure as the table shows it: a value, or null with the method's bound and reason.
// A figure within one clock step of zero as within_step has it: a bound, never a value.
nlohmann::json stepped(nlohmann::json p, double step_ns) {
  if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number()) return p;
  Param x;
  x.value = p["value_ns"].get<double>();
  x.ci95 = p.contains("ci95_ns") && p["ci95_ns"].is_number() ? p["ci95_ns"].get<double>() : 0.0;
  x.valid = true;
  const Param y = within_step(x, step_ns);
  if (y.valid) return p;
  p["value_ns"] = nullptr;
  p["ci95_ns"] = nullptr;
  p["upper_bound_ns"] = y.upper_bound;
  p["raw_value_ns"] = x.value;
  p["error"] = y.note;
  return p;
}

// The method's record of one figure: null when the method, or the figure in its parameters, is absent.
nlohmann::json figure_record(const nlohmann::json& records, const Figure& f) {
  if (!records.contains(f.method)) return nullptr;
  const auto& params = records[f.method].value("parameters", nlohmann::json::object());
  return params.contains(f.key) && params[f.key].is_object() ? params[f.key] : nlohmann::json(nullptr);
}

nlohmann::json figure_json(const nlohmann::json& records, const Figure& f, Entry& e, std::string& unobserved,
                           double step_ns) {
  e.method = f.method;
  e.key = f.key;
  const auto& rec = records[f.method];
  const nlohmann::json record = figure_record(records, f);
  const nlohmann::json p = stepped(record.is_object() ? record : nlohmann::json::object(), step_ns);
  nlohmann::json m = {{"key", f.key},
                      {"value_ns", p.value("value_ns", nlohmann::json(nullptr))},
                      {"ci95_ns", p.value("ci95_ns", nlohmann::json(nullptr))}};
  e.valid = m["value_ns"].is_number() && m["value_ns"].get<double>() > 0;
  e.failed = failed_checks(rec, f.key);
  if (!e.failed.empty()) m["failed_checks"] = e.failed;
  if (e.valid) {
    e.value = m["value_ns"].get<double>();
    e.ci = m["ci95_ns"].is_number() ? std::max(0.0, m["ci95_ns"].get<double>()) : 0.0;
    return m;
  }
  // A figure the method could not observe is a bound, never a disagreement.
  m["value_ns"] = nullptr;
  const std::string why = p.value("error", p.value("note", std::string("not measured")));
  m["error"] = why;
  std::string bound;
  if (p.contains("upper_bound_ns") && p["upper_bound_ns"].is_number()) {
    m["upper_bound_ns"] = p["upper_bound_ns"];
    bound = "at most " + us(p["upper_bound_ns"].get<double>()) + ": ";
  }
  unobserved += std::string(unobserved.empty() ? "" : "; ") + f.method + " " + f.key + " cannot be observed here (" +
                bound + why + ")";
  return m;
}

// What the run itself measured about why a pair parted, where a method records it (e.g. the receive's poll:
// frames per poll, the empty poll's cost).
// `mechanism`: what the poll phase measured of this pair (poll_mechanism), or empty.
std::string measured_cause(const Quantity& q, const nlohmann::json& records, const std::string& mechanism) {
  std::string s = mechanism;
  for (const Figure& f : {q.defined_by, q.cross}) {
    const nlohmann::json p = figure_record(records, f);
    if (p.is_object() && p.contains("mechanism") && p["mechanism"].is_string())
      s += (s.empty() ? "" : "; ") + std::string(f.method) + ": " + p["mechanism"].get<std::string>();
  }
  return s;
}

// The mechanism that parts o_r from o_r_stream, as the run's poll phase measured it (--bench poll,
// methods/poll): one poll that hands up a reply that has waited (Kielmann's o_r path), the receive per
// message of a standing stream (the overlap test's o_r), the frames its polls handed up, and the empty
// poll. Empty where the poll phase did not run or gave none of them.
std::string poll_mechanism(const Quantity& q, const nlohmann::json& records) {
  if (std::string(q.name) != "o_r" && std::string(q.name) != "o_r_stream") return {};
  if (!records.contains("poll") || !records["poll"].is_object()) return {};
  const nlohmann::json& rec = records["poll"];
  auto value = [&](const char* k) {
    const nlohmann::json p = figure_record(records, {"poll", k});
    return p.is_object() && p.contains("value_ns") && p["value_ns"].is_number() ? p["value_ns"].get<double>() : NAN;
  };
  const double reply = value("poll_one_reply"), frame = value("poll_one_frame"),
               stream = value("o_r_backlog_measured"), empty = value("poll_empty");
  if (!std::isfinite(reply) && !std::isfinite(stream)) return {};
  // Frames per poll that found something, in the standing stream (polls_by_frames[n]: polls of n frames).
  double polls = 0, frames = 0;
  const auto runs = rec.value("runs", nlohmann::json::array());
  if (!runs.empty() && runs.back().contains("poll")) {
    const auto by = runs.back()["poll"].value("backlog", nlohmann::json::object()).value("polls_by_frames",
                                                                                          nlohmann::json::array());
    for (std::size_t n = 1; n < by.size(); ++n)
      if (by[n].is_number()) {
        polls += by[n].get<double>();
        frames += static_cast<double>(n) * by[n].get<double>();
      }
  }
  std::string s = "measured by this run's poll phase: one poll that hands up a reply that waited (Kielmann's o_r "
                  "path) " +
                  (std::isfinite(reply) ? us(reply) : std::string("n/a")) +
                  "; one that hands up one waiting one-way frame " +
                  (std::isfinite(frame) ? us(frame) : std::string("n/a")) +
                  "; per message of a standing stream (the overlap test's o_r) " +
                  (std::isfinite(stream) ? us(stream) : std::string("n/a"));
  if (polls > 0) {
    char b[64];
    std::snprintf(b, sizeof b, ", %.2f frames per poll", frames / polls);
    s += b;
  }
  if (std::isfinite(empty)) s += "; an empty poll " + us(empty);
  // The overlap test's o_r_stream (its lowest point past the knee) and o_r_knee (Bell et al.'s reading at the
  // knee) each carry the frames per poll measured where they were read: the poll's line (a + b x frames)
  // predicts a / f + b at that f.
  const double a = value("poll_fixed"), b = value("poll_per_frame");
  for (const char* key : {"o_r_stream", "o_r_knee"}) {
    const nlohmann::json ov = figure_record(records, {"overlap", key});
    if (!std::isfinite(a) || !std::isfinite(b) || !ov.is_object() ||
        !ov.value("frames_per_poll", nlohmann::json()).is_number() ||
        !ov.value("value_ns", nlohmann::json()).is_number())
      continue;
    const double f = ov["frames_per_poll"].get<double>(), got = ov["value_ns"].get<double>();
    if (!(f > 0)) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "; the overlap test's %s at %.2f frames per poll %s, where the line a + b x f predicts ", key, f,
                  us(got).c_str());
    s += buf + us(a / f + b);
  }
  s += ". A waiting frame's poll pays the poll and the frame's arrival in this core's cache; a stream's frames "
       "share polls and arrive while earlier ones are handled";
  return s;
}

// The judgement's frame: each method's figure and definition, whatever the verdict. Fills `entries` with
// the figures observed (the defining one first) and `unobserved` with those that could not be, in words.
nlohmann::json judged_figures(const Quantity& q, const nlohmann::json& records, const nlohmann::json& transport,
                              double step_ns, std::vector<Entry>& entries, std::string& unobserved) {
  nlohmann::json methods = nlohmann::json::object(), defs = nlohmann::json::object();
  for (const Figure& f : {q.defined_by, q.cross}) {
    if (!records.contains(f.method)) continue;
    Entry e;
    methods[f.method] = figure_json(records, f, e, unobserved, step_ns);
    const nlohmann::json p = figure_record(records, f);
    defs[f.method] = definition(f.method, q.name, p.is_object() ? p : nlohmann::json::object(), records[f.method],
                                transport);
    if (e.valid) entries.push_back(e);
  }
  return {
      {"meaning", q.meaning},
      {"defined_by", {{"method", q.defined_by.method}, {"key", q.defined_by.key}}},
      {"cross_check",
       {{"method", q.cross.method},
        {"key", q.cross.key},
        {"relation", q.relation == Relation::same ? "same" : "at_least"},
        {"why", q.relation_text}}},
      {"methods", methods},
      {"definitions", defs},
      {"max_rel_diff", nullptr},
      {"max_rel_diff_beyond_ci95", nullptr},
  };
}

// The signature's round trip holds one poll before its request that Kielmann's does not: the relation is
// Kielmann's plus the empty poll the poll phase measured (af_xdp: 1.4 us a poll, a system call). Adds it to
// the cross-check x where it was measured; returns x's label in the verdict's text.
std::string with_empty_poll(const Quantity& q, const nlohmann::json& records, Entry& x, nlohmann::json& r) {
  if (std::string(q.name) != "rtt") return x.method;
  const nlohmann::json e = figure_record(records, {"poll", "poll_empty"});
  if (!e.is_object() || !e.value("value_ns", nlohmann::json()).is_number()) return x.method;
  const double empty = e["value_ns"].get<double>();
  const double empty_ci = e.value("ci95_ns", nlohmann::json()).is_number() ? e["ci95_ns"].get<double>() : 0.0;
  r["empty_poll_added_ns"] = empty;
  x.value += empty;
  x.ci = std::hypot(x.ci, empty_ci);
  return x.method + " + an empty poll";
}

// The methods' own checks that failed on the pair's figures, in words ("" when none did).
std::string failed_on(const Entry& d, const Entry& x) {
  std::string failed;
  for (const Entry* e : {&d, &x})
    for (const auto& c : e->failed) failed += (failed.empty() ? "" : ", ") + e->method + ": " + c;
  return failed;
}

// The pair compared: d defines the figure, x cross-checks it (xl: x's label), with the share of the larger
// figure that breaks the relation, raw and beyond the timer's floor and both intervals.
struct Compared {
  const Entry& d;
  const Entry& x;
  std::string xl, pair;
  double raw, beyond;
};

// Why a pair that agrees does so, in words.
std::string agreement_text(const Quantity& q, const Compared& c, double floor_ns, double tolerance) {
  if (q.relation == Relation::at_least)
    return c.xl + " " + us(c.x.value) + " >= " + c.d.method + " " + us(c.d.value) +
           (c.raw > 0 ? " within " + percent(tolerance) : std::string());
  return c.raw <= tolerance ? "agree within " + percent(tolerance) + " (" + c.pair + ")"
                            : "agree within the timer's own cost (" + us(floor_ns) + "): figures this small (" +
                                  c.pair + ") cannot show a difference of " + percent(tolerance);
}

// A pair that parts: "fail" when it parts beyond both intervals, with the cause the run measured or the
// definitions; "inconclusive" when the intervals cover it. Sets r's verdict; returns its explanation.
std::string parted(const Quantity& q, const Compared& c, double tolerance, const std::string& measured,
                   const nlohmann::json& defs, nlohmann::json& r) {
  std::string text = q.relation == Relation::same
                         ? "differ by " + percent(c.raw) + " (" + c.pair + "), though " + q.relation_text
                         : c.xl + " " + us(c.x.value) + " is below " + c.d.method + " " + us(c.d.value) + " by " +
                               percent(c.raw) + ", though " + q.relation_text;
  if (c.beyond > tolerance) {
    r["verdict"] = "fail";
    return text + ". Cause: " +
           (measured.empty() ? std::string("not measured by this run; the definitions: ") +
                                   defs[c.d.method].get<std::string>() + "; " + defs[c.x.method].get<std::string>()
                             : measured);
  }
  // The figures part, but their intervals are wide enough to cover it: a difference the run cannot claim.
  r["verdict"] = "inconclusive";
  text += "; but their 95% intervals (" + c.d.method + " +-" + us(c.d.ci) + ", " + c.xl + " +-" + us(c.x.ci) +
          ") cover all but " + percent(c.beyond) + ": repeat with more --runs on a quieter core";
  if (!measured.empty()) text += ". Measured: " + measured;
  return text;
}

nlohmann::json judge(const Quantity& q, const nlohmann::json& records, const nlohmann::json& transport, double floor_ns,
                     double tolerance, double step_ns) {
  std::vector<Entry> entries;
  std::string unobserved;
  nlohmann::json r = judged_figures(q, records, transport, step_ns, entries, unobserved);
  // The mechanism that parts the pair, wherever the run measured it, whatever the verdict.
  const std::string mechanism = poll_mechanism(q, records);
  if (!mechanism.empty()) r["mechanism"] = mechanism;
  const std::string tail = unobserved.empty() ? "" : "; " + unobserved;
  if (entries.size() < 2) {
    r["verdict"] = "not compared";
    r["explanation"] =
        std::string(entries.empty() ? "no method" : "only " + entries.front().method) + " observed it" + tail;
    return r;
  }
  // Two entries are the defining figure and the cross-check's, in the order judge() took them.
  const Entry& d = entries[0];
  Entry& x = entries[1];
  const std::string xl = with_empty_poll(q, records, x, r);
  const double larger = std::max(d.value, x.value);
  // The part of the pair that breaks the relation: any difference for `same`; the cross-check's figure
  // below the defining one for `at_least`.
  const double broken = q.relation == Relation::same ? std::fabs(d.value - x.value) : std::max(0.0, d.value - x.value);
  const double past_floor = std::max(0.0, broken - floor_ns) / larger;
  const Compared c{d,
                   x,
                   xl,
                   d.method + " " + us(d.value) + " and " + xl + " " + us(x.value),
                   broken / larger,
                   std::max(0.0, broken - floor_ns - d.ci - x.ci) / larger};
  r["max_rel_diff"] = std::fabs(d.value - x.value) / larger;
  r["max_rel_diff_beyond_ci95"] = c.beyond;
  const std::string failed = failed_on(d, x);
  if (!failed.empty()) {
    r["verdict"] = "unjudged";
    r["explanation"] = c.pair + ": not judged, the methods' own checks on it failed (" + failed + ")" + tail;
  } else if (past_floor <= tolerance) {
    r["verdict"] = "agree";
    r["explanation"] = agreement_text(q, c, floor_ns, tolerance) + tail;
  } else {
    const nlohmann::json defs = r["definitions"];
    r["explanation"] = parted(q, c, tolerance, measured_cause(q, records, mechanism), defs, r) + tail;
  }
  return r;
}

}  // namespace

nlohmann::json agreement(const nlohmann::json& records, const nlohmann::json& transport, double floor_ns,
                         double tolerance, double step_ns) {
  floor_ns = std::isfinite(floor_ns) && floor_ns > 0 ? floor_ns : 0.0;
  nlohmann::json out = {{"tolerance", tolerance}, {"floor_ns", floor_ns}};
  for (const auto& q : kQuantities) out[q.name] = judge(q, records, transport, floor_ns, tolerance, step_ns);
  return out;
}

nlohmann::json agreed_parameters(const nlohmann::json& records, const nlohmann::json& agreement_result,
                                 double step_ns) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* name : kSharedParameters) {
    const Quantity* q = quantity(name);
    nlohmann::json chosen;
    for (int which = 0; which < 2; ++which) {
      const Figure& f = which == 0 ? q->defined_by : q->cross;
      // A cross-check that only bounds the quantity (at_least) never stands in for it.
      if (which == 1 && q->relation != Relation::same) break;
      const nlohmann::json record = figure_record(records, f);
      if (record.is_null()) continue;
      nlohmann::json j = stepped(record, step_ns);
      j["source"] = std::string(f.method) + " " + f.key +
                    (which == 1 ? " (the defining method, " + std::string(q->defined_by.method) + ", gave no value)"
                                : std::string());
      const bool has_value = j.contains("value_ns") && j["value_ns"].is_number();
      if (chosen.is_null() || has_value) chosen = j;
      if (has_value) break;
    }
    if (chosen.is_null()) continue;
    if (agreement_result.is_object() && agreement_result.contains(name))
      chosen["cross_check"] = {{"method", q->cross.method},
                               {"verdict", agreement_result[name].value("verdict", std::string())},
                               {"explanation", agreement_result[name].value("explanation", std::string())}};
    out[name] = chosen;
  }
  return out;
}

}  // namespace logpb::methods
