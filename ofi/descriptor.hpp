// --transport ofi: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in ofi/options.hpp, how a job runs over it in ofi/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "ofi/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::ofi {

struct Descriptor {
  static constexpr const char* name = "ofi";
  static constexpr const char* summary = "libfabric: the provider --provider names (shm, tcp, udp, verbs, ...)";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return ofi::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) { ofi::validate(o, c.vm, c.transport); }
  static void run(app::Job& job);  // ofi/job.cpp
};

}  // namespace logpb::ofi
