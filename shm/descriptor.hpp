// --transport shm: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in shm/options.hpp, how a job runs over it in shm/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "shm/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::shm {

struct Descriptor {
  static constexpr const char* name = "shm";
  static constexpr const char* summary =
      "shared memory between the ranks of one host; with --emulate, an NI of known LogP parameters";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return shm::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) { shm::validate(o, c.transport, c.mode, c.window); }
  static void run(app::Job& job);  // shm/job.cpp
};

}  // namespace logpb::shm
