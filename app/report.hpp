#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>

namespace logpb::app {
// The short LogP table printed at the end of a run: value, 95% interval, run-to-run range, and the
// failed checks in words. A parameter without a valid value is shown as n/a with the reason.
void print_table(std::FILE* out, const nlohmann::json& doc);
}  // namespace logpb::app
