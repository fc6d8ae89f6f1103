// The emulated NI: LogP parameters the shm transport enforces, so the benchmark code can be run against
// a machine whose parameters are known (docs/design.md §8).
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
// The behaviours of a real NI, each off by default (a real ConnectX, E810 or EFA shows all of them):
//   batch    B: one poll hands up to B arrived frames (a CQ polled in batches; verbs 16, DPDK 32, MPI 16)
//   cq       T: a send completes locally T after its last byte left (RC's ACK: about 2L)
//   signal   k: local completion is reported for every k-th send (selective signalling), and for a send
//            the caller asked to track (as the verbs transport signals a tracked work request); earlier
//            sends complete with the reported one
//   rs       k: as signal, but a tracked send is not signalled either (a PMD that frees mbufs only every
//            tx_rs_thresh descriptors): waiting for one send's completion waits for the k-th
//   jitter   J: each message's L, and its share of g, grow by a draw from an exponential distribution of
//            mean J (for g: J g / L), seeded by `seed`: a long tail, never shorter than the set L and g
//   stall    P/S: every P the NI stops for S (no departure and no arrival inside), as a host that takes
//            the NI's core away, or a switch pausing a port
//   seed     the jitter's seed (default 1), so a run is reproducible
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace logpb::shm {

struct Emulation {
  bool enabled = false;
  std::string spec;
  double o_s_ns = 0, o_r_ns = 0, g_ns = 0, L_ns = 0;
  double o_s_per_byte_ns = 0, o_r_per_byte_ns = 0, G_ns = 0;
  int capacity = 0;  // 0: the run's --window decides
  double handler_ns = 0;
  std::string waiting = "auto";  // spin | sleep | auto
  int batch = 1;                 // frames handed up per poll, at most
  double cq_ns = 0;              // local completion this long after the last byte left
  int signal_every = 1;          // completion reported for every k-th send (and tracked ones unless rs)
  bool signal_tracked = true;    // false with rs=k: tracking does not signal
  double jitter_ns = 0;          // mean of the exponential tail added to L (and J g / L to g)
  double stall_period_ns = 0, stall_ns = 0;
  std::uint64_t seed = 1;
  // Any behaviour of a real NI switched on (the JSON says which).
  bool behaves() const { return batch > 1 || cq_ns > 0 || signal_every > 1 || jitter_ns > 0 || stall_ns > 0; }
};

// Throws UsageError naming the bad key or value, or the LogP constraint an impossible set breaks.
Emulation parse_emulation(const std::string& spec);
void to_json(nlohmann::json& j, const Emulation& e);
// Parses "250ns", "1.4us", "2ms", "0" into nanoseconds; throws UsageError otherwise.
double parse_duration_ns(const std::string& s);

}  // namespace logpb::shm
