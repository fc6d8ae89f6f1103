// Bell et al.'s flood and CPU overlap test over runs (section 4): per size, the flood's time per message
// (min over Bell's runs), the overheads the overlap test inferred, which stage limited the flood; over
// sizes, g and G with the 'large message' crossover (loggp.hpp), and the NI's own g and G where visible.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/signature_fit.hpp"
#include "methods/bell/loops.hpp"

namespace logpb::methods {

// An overhead inferred by the overlap test: positive, or invalid with the reason (a non-positive one means
// the computation loop or the timer misbehaved, and is never shown as a figure).
analysis::Param overhead_param(const methods::OverlapSide& s);

// One run's record (the raw per-run figures of each size).
nlohmann::json bell_record(const std::vector<methods::BellSize>& run, bool flood);
// {parameters, per_size, checks} over every run; flood false: the overlap test alone.
nlohmann::json bell_summary(const std::vector<std::vector<methods::BellSize>>& runs, bool flood);

}  // namespace logpb::methods
