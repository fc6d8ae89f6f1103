#include "app/quick.hpp"

#include <cstring>

#include "common/errors.hpp"

namespace logpb::app {

std::vector<std::string> command_args(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (argc < 2 || std::strcmp(argv[1], "quick") != 0) return args;
  for (const auto& a : args)
    if (a == "--bench" || a.rfind("--bench=", 0) == 0)
      throw UsageError("logpbench quick chooses its methods (pingpong, bw, signature): drop --bench");
  args.erase(args.begin() + 1);
  args.insert(args.begin() + 1, {"--bench", "quick"});
  return args;
}

}  // namespace logpb::app
