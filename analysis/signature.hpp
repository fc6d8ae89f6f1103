// The signature's results over runs (Culler et al. section 3): each run's record (round trip, curves,
// fit) and the parameters over runs, with the bottleneck the runs named.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/signature_fit.hpp"
#include "common/methods/signature.hpp"

namespace logpb::analysis {

// One run's record: the round trip, the curves measured so far and, once fitted, the fit.
nlohmann::json signature_record(const methods::SignatureData& d, bool raw);
// {parameters, checks} over every run's fit (each parameter by combine_runs; checks carry their run).
nlohmann::json signature_summary(const std::vector<SignatureFit>& fits);

}  // namespace logpb::analysis
