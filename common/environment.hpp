// The environment variables a library reads by name prefix (UCX_, OMPI_MCA_), as a run's meta records them:
// what chose a library's paths where no option of logpbench did.
#pragma once

#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace logpb {

// Every variable of this process's environment whose name starts with prefix, name to value.
nlohmann::json environment_with_prefix(std::string_view prefix);

}  // namespace logpb
