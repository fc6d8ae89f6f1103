// --transport ucx: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in ucx/options.hpp, how a job runs over it in ucx/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "ucx/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::ucx {

struct Descriptor {
  static constexpr const char* name = "ucx";
  static constexpr const char* summary = "UCX: one UCT transport (--ucx-tl) or UCP over what UCX_TLS allows";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return ucx::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) { ucx::validate(o, c.vm, c.transport); }
  static void run(app::Job& job);  // ucx/job.cpp
};

}  // namespace logpb::ucx
