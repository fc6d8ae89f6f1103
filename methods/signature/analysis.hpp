// The signature's results over runs (Culler et al. section 3): each run's record (round trip, curves,
// fit) and the parameters over runs, with the bottleneck the runs named.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/signature_fit.hpp"
#include "methods/signature/loops.hpp"

namespace logpb::methods {

// The measured curves as JSON: each point's cost, its cost net of Delta, interval and convergence.
nlohmann::json signature_curves_json(const methods::SignatureData& d, bool raw);
// The curves the fit reads. With Delta > 0 each point is its bursts' own cost net of their own Delta,
// plus the curve's median Delta.
analysis::Curve to_fit_curve(const methods::SignatureCurve& c);
std::vector<analysis::Curve> to_fit_curves(const methods::SignatureData& d);

// One run's record: the round trip, the curves measured so far and, once fitted, the fit.
nlohmann::json signature_record(const methods::SignatureData& d, bool raw);
// {parameters, checks} over every run's fit (each parameter by combine_runs; checks carry their run).
nlohmann::json signature_summary(const std::vector<analysis::SignatureFit>& fits);

}  // namespace logpb::methods
