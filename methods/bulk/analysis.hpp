// Culler et al.'s bulk transfer over runs (section 4): per size T(n), BW(n) = n / T(n), the get's round
// trip, o_s(n) from each size's send-only regime (Figure 12) and g(n) from its steady state; over sizes
// the naive T_0 + n / R_inf model, whose negative T_0 is reported as the paper warns.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "methods/bulk/loops.hpp"

namespace logpb::methods {

nlohmann::json bulk_record(const std::vector<methods::BulkSize>& run, bool raw);
// {parameters, per_size, checks} over every run.
nlohmann::json bulk_summary(const std::vector<std::vector<methods::BulkSize>>& runs);

}  // namespace logpb::methods
