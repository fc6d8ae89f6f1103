// Doerfler & Brightwell's overhead and availability over runs (section 2): per size and side, the
// overhead (iter_t - work_t at the stop point) and availability 1 - overhead / base_t, each over runs;
// an availability outside [0,1] is never reported as a figure, the check says why.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "methods/availability/loops.hpp"

namespace logpb::methods {

nlohmann::json doerfler_record(const std::vector<methods::DoerflerSize>& run, double base_threshold,
                               double stop_threshold);
// {parameters, per_size, checks} over every run.
nlohmann::json doerfler_summary(const std::vector<std::vector<methods::DoerflerSize>>& runs);

}  // namespace logpb::methods
