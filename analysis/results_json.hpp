// The JSON shapes every method's record shares: a sample distribution (summary, percentiles, histogram),
// a parameter over runs, a check in words.
#pragma once

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
// Appends {name, ok, detail} to a JSON array of checks (detail only when the check failed).
void add_check(nlohmann::json& checks, const std::string& name, bool ok, const std::string& detail);

}  // namespace logpb::analysis
