// --transport verbs: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in verbs/options.hpp, how a job runs over it in verbs/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "verbs/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::verbs {

struct Descriptor {
  static constexpr const char* name = "verbs";
  static constexpr const char* summary =
      "RDMA verbs: RC queue pairs (UD with --ud) on the device -d names, as perftest";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return verbs::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) {
    verbs::validate(o, c.vm, c.transport, c.small_ams_only, c.window);
  }
  static void run(app::Job& job);  // verbs/job.cpp
};

}  // namespace logpb::verbs
