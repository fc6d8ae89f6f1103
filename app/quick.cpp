#include "app/quick.hpp"

#include <cstring>

#include "common/errors.hpp"

namespace logpb::app {

std::vector<std::string> command_args(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  // `logpbench` alone, the first run a newcomer makes, is `logpbench agree`: one LogP table for the shm link,
  // each quantity from the method that defines it and cross-checked by a second (a few seconds on shm).
  if (argc < 2) {
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
