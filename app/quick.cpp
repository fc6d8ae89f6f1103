#include "app/quick.hpp"

#include <cstring>
#include <string>

#include "common/errors.hpp"

namespace logpb::app {

namespace {

// Whether every argument after the program's name only says where the results go or how much is printed
// (--json FILE, --csv FILE, -q, --raw): such a command line runs what `logpbench` alone runs, so saving the
// first table does not change it.
bool only_output_options(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-q" || a == "--quiet" || a == "--raw" || a.rfind("--json=", 0) == 0 || a.rfind("--csv=", 0) == 0)
      continue;
    if ((a == "--json" || a == "--csv") && i + 1 < argc) {
      ++i;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> command_args(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  // `logpbench` alone, the first run a newcomer makes, is `logpbench agree`: one LogP table for the shm link,
  // each quantity from the method that defines it and cross-checked by a second (a few seconds on shm).
  // `logpbench --json F` (or --csv, -q) is the same run, saved.
  if (only_output_options(argc, argv)) {
    args.insert(args.end(), {"--bench", "agree"});
    return args;
  }
  // The commands that are a job-level method under the usual options, with the methods each runs.
  struct Command {
    const char* name;
    const char* runs;
  };
  static constexpr Command commands[] = {{"quick", "pingpong, bw, signature"},
                                         {"agree", "signature, kielmann, overlap, availability"}};
  for (const auto& c : commands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    for (const auto& a : args)
      if (a == "--bench" || a.rfind("--bench=", 0) == 0)
        throw UsageError(std::string("logpbench ") + c.name + " chooses its methods (" + c.runs + "): drop --bench");
    args.erase(args.begin() + 1);
    args.insert(args.begin() + 1, {"--bench", c.name});
    return args;
  }
  return args;
}

}  // namespace logpb::app
