// The command line as logpbench's main reads it (command_args, then parse_options), for the unit tests of
// the options: the parsed Options, or the text of the UsageError it raised.
#pragma once

#include <string>
#include <vector>

#include "app/options.hpp"
#include "app/quick.hpp"
#include "common/errors.hpp"

namespace logpb::test {

inline app::Options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "logpbench");
  std::vector<const char*> raw;
  for (const auto& a : args) raw.push_back(a.c_str());
  const std::vector<std::string> full = app::command_args(static_cast<int>(raw.size()), raw.data());
  std::vector<const char*> av;
  for (const auto& a : full) av.push_back(a.c_str());
  app::Options o;
  app::parse_options(static_cast<int>(av.size()), av.data(), o);
  return o;
}

// The refusal's text; empty when the command line was accepted.
inline std::string refusal(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace logpb::test
