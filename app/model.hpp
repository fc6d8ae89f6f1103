// `logpbench model RESULT.json --topology …`: LoGPC's predictions (analysis/logpc.hpp) from the LogGP
// parameters of a measured run, beside measured contention runs (--measured). Exit 2 on bad input.
#pragma once

namespace logpb::app {
int run_model(int argc, const char* const* argv);  // argv[1] == "model"
}  // namespace logpb::app
