// The JSON shapes every method's record shares: a sample distribution (summary, percentiles, histogram),
// a parameter over runs, a check in words.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/signature_fit.hpp"
#include "common/stats.hpp"

namespace logpb::analysis {

// Summary, percentiles (stats' one percentile definition), a 64-bin histogram up to p99.9; the samples
// themselves with raw.
nlohmann::json distribution_json(const std::vector<double>& samples, bool raw);

// The median round trip with its order-statistic interval, or invalid with the reason.
Param rtt_param(const Summary& s);
// A measured figure with its interval; invalid (with note as the reason) when not finite.
Param param_of(double v, double ci, const std::string& note = "", const std::string& ci_method = "");
// One parameter over the runs (combine_runs), as JSON.
nlohmann::json over_runs(const std::vector<Param>& v);
// A number, or null where it is not finite (JSON has no NaN).
inline nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }
// Appends {name, ok, detail} to a JSON array of checks (detail only when the check failed).
void add_check(nlohmann::json& checks, const std::string& name, bool ok, const std::string& detail);
// Appends {name, detail} to a JSON array of notes: a property of the link that explains how a figure reads
// (local completion inside the send call), not a doubt about it. A failed check is a figure in doubt.
void add_note(nlohmann::json& notes, const std::string& name, const std::string& detail);

// What a small AM's round trip took beyond the transport's own bare loop in the same run
// (meta.transport_floor, where the transport records one: MPI, DPDK, UCT), per message (a send and its receive, half
// the difference), and how that splits into the AM layer (meta.harness send + receive) and the transport's
// own code (the rest). Only for a run whose rtt is the small AM's (not a ping-pong of -s n > 0).
struct TransportShare {
  std::string transport;  // meta.transport.kind
  double rtt_ns = 0, floor_rtt_ns = 0;
  double over_floor_ns = 0;  // (rtt - floor) / 2
  double am_layer_ns = 0;    // meta.harness send_ns + recv_ns
  double transport_ns = 0;   // over_floor - am_layer
  double ci95_ns = 0;        // of over_floor and transport: the two round trips' intervals in quadrature, halved
  // Below zero beyond its interval: the bare loop took longer than the run's round trip less the AM layer
  // (the link changed between the two, as tcp on lo does), and there is no split to show. Below zero within
  // it: only a bound, transport_ns + ci95_ns.
  bool floor_above() const { return transport_ns + ci95_ns < 0; }
};
std::optional<TransportShare> transport_share(const nlohmann::json& doc);

}  // namespace logpb::analysis
