// Kielmann et al.'s parameterized LogP over runs (section 3): per size o_s(m), o_r(m), RTT(m), g(m) and
// the saturation-based g(m) beside it; the LogP/LogGP parameters by their Table 1 (loggp.hpp), and which
// stage g(0) by saturation saw.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "methods/kielmann/loops.hpp"

namespace logpb::methods {

nlohmann::json kielmann_record(const methods::KielmannResult& run);
// {parameters, per_size, checks} over every run.
nlohmann::json kielmann_summary(const std::vector<methods::KielmannResult>& runs);

}  // namespace logpb::methods
