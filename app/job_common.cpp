#include "app/job_common.hpp"

#include <numa.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb::app {
am::EndpointOptions endpoint_options(const Options& o, std::uint32_t session, std::size_t segment_bytes, bool server,
                                     double loss_timeout_s) {
  am::EndpointOptions e;
  e.session = session;
  e.rank = server ? 1 : 0;  // a pair: the client is rank 0, the server rank 1
  e.size = 2;
  e.window = o.window;
  e.credits = o.credits;
  e.stall_timeout_s = server ? 0 : o.timeout_s;
  e.segment_bytes = static_cast<std::uint32_t>(segment_bytes);
  e.loss_timeout_s = o.loss_timeout_s >= 0 ? o.loss_timeout_s : loss_timeout_s;
  return e;
}

std::uint32_t new_session() {
  std::random_device rd;
  std::uint32_t s = 0;
  while (s == 0) s = rd();
  return s;
}

nlohmann::json numa_placement(int cpu, int nic_node) {
  const int cpu_node = numa_available() >= 0 ? numa_node_of_cpu(cpu) : -1;
  if (nic_node >= 0 && cpu_node >= 0 && cpu_node != nic_node)
    std::fprintf(stderr,
                 "logpbench: warning: core %d is on NUMA node %d but the NIC is on node %d: every message "
                 "crosses the interconnect; choose a core of node %d with --cpu\n",
                 cpu, cpu_node, nic_node, nic_node);
  return {{"cpu", cpu},
          {"cpu_numa_node", cpu_node},
          {"nic_numa_node", nic_node},
          {"local", nic_node < 0 || cpu_node < 0 || cpu_node == nic_node}};
}

}  // namespace logpb::app
