// `logpbench compare`: two or more results side by side, the way Bell et al. (002_…, section 5, Figure 3
// and Table 2) set the same network reached through its native API beside the same network through MPI,
// and the difference between them: here with an interval on every figure.
//
// The first result is the baseline. For every other result and every quantity both hold — a top-level
// parameter (o_s, o_r, g, L, rtt, G, …) or a per-size one (flood g(m), Kielmann's o_s(m)/o_r(m)/g(m),
// Doerfler's overhead and availability, bulk T(n) and BW(n), per-K contention gaps) — it gives each run's
// value with its 95% half-width and the difference (other − baseline, "added") with its own.
//
// The runs are independent (different processes, often different transports, each with its own
// samples), so the difference's half-width is the two half-widths combined in quadrature, sqrt(a² + b²):
// the normal approximation for the difference of two independent estimates. It is not a paired interval
// and it assumes nothing is shared between the runs.
//
// A value a run could not observe (value_ns null, with an error and perhaps upper_bound_ns) stays what it
// is: shown with its bound and reason, never as a number, and its difference is n/a with the reason.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace logpb::analysis::compare {

// A file that cannot be compared (not a result, nothing shared, fewer than two): the command exits 2.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Unit { ns, ns_per_byte, bytes, gb_per_s, ratio };
const char* unit_name(Unit u);  // "ns", "ns/B", "B", "GB/s", ""

// One figure of one run: a value with its 95% half-width, or none with the reason.
struct Figure {
  bool valid = false;
  double value = std::numeric_limits<double>::quiet_NaN();
  double ci95 = std::numeric_limits<double>::quiet_NaN();         // NaN: the run gave no interval
  double upper_bound = std::numeric_limits<double>::quiet_NaN();  // with !valid: at most this
  std::string error;                                              // with !valid: why there is no value
};
// From {value_ns, ci95_ns} (or {value, ci95} for a ratio); null values keep error and upper_bound_ns.
Figure figure_of(const nlohmann::json& p);
// other − base with sqrt(ci_base² + ci_other²); n/a (invalid) with the reason when either has no value.
Figure difference(const Figure& base, const Figure& other, const std::string& base_name, const std::string& other_name);

// One comparable quantity of one result.
struct Quantity {
  std::string label;      // as printed: "o_s", "g(4096)", "availability_send(64)", "g(K=3)"
  std::string param;      // without the size: "o_s", "g", "availability_send"
  std::string size_kind;  // "" (top level), "bytes" or "k"
  double size = 0;
  Unit unit = Unit::ns;
  Figure fig;
};
// How a method's figures are read where LogP's name alone would mislead. Each method's descriptor gives
// its own (`compare_as`, methods/descriptor.hpp); compare looks it up by the result's bench name.
struct Reading {
  bool rtt_at_size = false;          // its rtt is the round trip of its one size (meta.flags.size), so a
                                     // ping-pong of -s n is rtt(n), not the small-AM rtt of the others
  const char* per_size_rtt = "rtt";  // the name of its per-size round trip (bulk's is T(n), Culler et al. 4)
  bool bandwidth = false;            // BW(n) = n / T(n) beside each per-size round trip
};
using ReadingOf = std::function<Reading(const std::string& bench)>;

// Every quantity of a result, in the document's order: its `parameters`, then `per_size` (by bytes),
// then `per_k`, each named as the method's Reading says.
std::vector<Quantity> quantities(const nlohmann::json& doc, const ReadingOf& reading);

std::string bench_of(const nlohmann::json& doc);
std::string transport_of(const nlohmann::json& doc);

// Refuses (Refused) what is not a logpbench result: not an object, another schema (a model or a comparison),
// no meta or no parameters. `what` names the file in the message.
void check_result(const nlohmann::json& doc, const std::string& what);

// Each run's meta transport when those are unique; else transport-bench when unique; else A, B, C, …
std::vector<std::string> default_names(const std::vector<nlohmann::json>& docs);
// --names a,b,…: one per file, non-empty, unique, no spaces.
std::vector<std::string> parse_names(const std::string& list, std::size_t files);

// The differences between each run and the baseline that change a figure: meta.flags knobs (window, runs,
// emulate, bench, …; not the output paths, ports, timeouts or the transport, which is what is compared),
// host and CPU, version, and a status other than complete. Each a sentence.
std::vector<std::string> knob_warnings(const std::vector<nlohmann::json>& docs, const std::vector<std::string>& names);
// logpbench's own share of each run's o_s and o_r (meta.harness: the AM layer over a null NI, measured in
// that run): one line per run. A difference between runs is logpbench's, not the interfaces'; where the
// shares differ by more than 10% and 2 ns a line says by how much the added figures carry it.
std::vector<std::string> harness_lines(const std::vector<nlohmann::json>& docs, const std::vector<std::string>& names);

struct Row {
  Quantity a, b;
  Figure added;
  bool resolved = false;  // |added| > its half-width: the runs differ beyond their intervals
};
struct Pair {
  std::string a, b;  // names: the baseline and the other run
  std::vector<Row> rows;
  std::vector<std::string> only_a, only_b;  // labels one of the two lacks
};
// Refuses a pair that shares no quantity (e.g. a pingpong beside a k-to-one).
Pair compare_pair(const nlohmann::json& base, const nlohmann::json& other, const std::string& a, const std::string& b,
                  const ReadingOf& reading);

// "3.1 ± 0.4 ns", "n/a (reason)", "hidden, at most 1241.9 ns (reason)", "312.0 ns (no interval)".
std::string format_figure(const Figure& f, Unit u);
// `<a>-vs-<b> <label>: <a> X ± a, <b> Y ± b, added Z ± c`
std::string format_line(const Pair& p, const Row& r);

nlohmann::json figure_json(const Figure& f, Unit u);
nlohmann::json pair_json(const Pair& p);
// One row per quantity of every pair; fields quoted where needed (RFC 4180).
std::string csv(const std::vector<Pair>& pairs);

// What the figure (analysis/logpb_plots.py, draw_compare) needs of a run: o_s, o_r, rtt and the g(m) curve.
nlohmann::json figure_inputs(const nlohmann::json& doc, const ReadingOf& reading);

}  // namespace logpb::analysis::compare
