// One DPDK transport policy's job (dpdk/transport.hpp: Transport<Plain>, Transport<Rigged>), each compiled
// in its own translation unit (job_plain.cpp, job_rigged.cpp). Both in one unit, the compiler's
// inlining budget for the unit was shared by two copies of every method and of the AM layer, and the
// plain datapath came out less inlined (rte_eth_rx_burst as an out-of-line clone) and measurably slower.
#pragma once

#include "app/job.hpp"
#include "app/job_common.hpp"
#include "dpdk/transport.hpp"

namespace logpb::dpdk {

using app::Job;

void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Plain>& t);
void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Rigged>& t);

// An Ethernet may drop frames: re-measure after 50 ms of silence.
inline constexpr double kEthernetLossTimeout = 0.05;

// The body both units instantiate: the job's methods over t.
template <class Rig>
void run_dpdk_job_over(Job& job, dpdk::Transport<Rig>& t) {
  const nlohmann::json numa = app::numa_placement(job.o.cpu, t.describe().value("numa_socket", 0));
  app::run_job(job, t, kEthernetLossTimeout, numa);
}

}  // namespace logpb::dpdk
