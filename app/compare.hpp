// `logpbench compare A.json B.json [C.json …] [--names a,b,…] [--json OUT] [--csv OUT]`: each shared
// parameter (and per-size figure) of every run beside the first (the baseline), with the difference and
// its interval (analysis/compare.hpp). Runs nothing. Exit 2 on input that cannot be compared.
#pragma once

namespace logpb::app {
int run_compare(int argc, const char* const* argv);  // argv[1] == "compare"
}  // namespace logpb::app
