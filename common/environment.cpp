#include "common/environment.hpp"

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

extern char** environ;

namespace logpb {

nlohmann::json environment_with_prefix(std::string_view prefix) {
  nlohmann::json j = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string_view var(*e);
    const auto eq = var.find('=');
    if (eq != std::string_view::npos && var.substr(0, eq).starts_with(prefix))
      j[std::string(var.substr(0, eq))] = std::string(var.substr(eq + 1));
  }
  return j;
}

}  // namespace logpb
