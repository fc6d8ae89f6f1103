// The emulated NI: LogP parameters the shm transport enforces, so the benchmark code can be run against
// a machine whose parameters are known (DESIGN.md, "The shm transport and the emulated NI").
//
// Spec syntax: comma-separated key=value with units, e.g. "os=1.4us,or=2.2us,g=7.6us,L=6.3us,C=32".
//   os, or   send / receive overhead, spent by the CPU inside send / receive
//   g        gap: departures from one NI, and arrivals at one NI, are at least g apart
//   L        latency: a message becomes visible no earlier than its departure + L
//   C        capacity: outstanding requests the AM layer allows (the network capacity of section 3.1)
//   os_per_byte, or_per_byte   size-dependent overheads o(n) = o + b*n (per byte, as a time)
//   G        gap per byte for bulk data (per byte, as a time)
//   h        handler: time a request holds its receiver's processor beyond o_r (the request handler's own
//            work, which makes the replier the bottleneck of Culler et al. 3.5's 1-to-K)
//   wait     spin | sleep | auto: how emulated times are spent. sleep: the overheads are slept and idle
//            ranks sleep until their next arrival, so more ranks than cores share them honestly when the
//            parameters are milliseconds; auto (default): sleep when the job's ranks share cores
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace logpb {

struct Emulation {
  bool enabled = false;
  std::string spec;
  double o_s_ns = 0, o_r_ns = 0, g_ns = 0, L_ns = 0;
  double o_s_per_byte_ns = 0, o_r_per_byte_ns = 0, G_ns = 0;
  int capacity = 0;  // 0: the run's --window decides
  double handler_ns = 0;
  std::string waiting = "auto";  // spin | sleep | auto
};

// Throws UsageError naming the bad key or value, or the LogP constraint an impossible set breaks.
Emulation parse_emulation(const std::string& spec);
void to_json(nlohmann::json& j, const Emulation& e);
// Parses "250ns", "1.4us", "2ms", "0" into nanoseconds; throws UsageError otherwise.
double parse_duration_ns(const std::string& s);

}  // namespace logpb
