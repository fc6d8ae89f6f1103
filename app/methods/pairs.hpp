// --bench pairs: Culler et al. 3.5 on N ranks: half request, each from its own replier, running the
// single-pair method --pairs-bench; one pair alone, then every pair at once, and the spread. A job-level
// method: it drives several links, so the job runner (app/job.hpp) runs it; this entry lists it for the
// option check, --help and the report.
#pragma once

#include "app/method.hpp"

namespace logpb::app::method {

struct pairs {
  static constexpr const char* name = "pairs";
  static constexpr const char* summary = "Culler et al. 3.5: N ranks in pairs running --pairs-bench, against one pair alone";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::job;
};

}  // namespace logpb::app::method
