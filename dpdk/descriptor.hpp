// --transport dpdk: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in dpdk/options.hpp, how a job runs over it in dpdk/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "dpdk/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::dpdk {

struct Descriptor {
  static constexpr const char* name = "dpdk";
  static constexpr const char* summary =
      "DPDK ethdev: memif between local ranks, or the port --eal gives (af_xdp, a real NIC)";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return dpdk::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) {
    dpdk::validate(o, c.vm, c.transport, c.mode, c.batches_sends);
  }
  static void run(app::Job& job);  // dpdk/job.cpp
};

}  // namespace logpb::dpdk
