// `logpbench quick [local | server | client HOST] [options]`: the first look at a NI (app/methods/quick.hpp
// says what it runs and with which budgets). The command is --bench quick under the usual options.
#pragma once

#include <string>
#include <vector>

namespace logpb::app {

// The arguments parse_options reads: for `logpbench quick ...`, the same without the word quick and with
// --bench quick; any other command line unchanged. UsageError when quick is also given --bench.
std::vector<std::string> command_args(int argc, const char* const* argv);

}  // namespace logpb::app
