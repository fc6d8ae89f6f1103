// `logpbench quick [local | server | client HOST] [options]`: the first look at a NI (methods/quick/quick.hpp
// says what it runs and with which budgets); `logpbench agree ...`: the methods' shared parameters side by
// side (methods/agree/agree.hpp). Each command is --bench NAME under the usual options.
#pragma once

#include <string>
#include <vector>

namespace logpb::app {

// The arguments parse_options reads: for `logpbench quick ...` (or agree), the same without the command's
// word and with --bench quick (agree); for `logpbench` with no arguments or only output options (--json,
// --csv, -q, --raw), --bench agree; any other command line unchanged. UsageError when the command is
// also given --bench.
std::vector<std::string> command_args(int argc, const char* const* argv);

}  // namespace logpb::app
