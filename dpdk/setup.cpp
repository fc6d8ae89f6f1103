#include "dpdk/setup.hpp"

#include <rte_ethdev.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace logpb::dpdk {

bool memif_job(const CliOptions& o, const JobPlace& job) {
  if (o.reflector) return false;
  if (job.mode == "local") return true;
  if (job.mode != "launched" || !job.one_host) return false;
  for (const char* dev : {"--vdev", "-a", "--allow", "-b", "--block"})
    if (o.eal.find(dev) != std::string::npos) return false;
  return true;
}

ConnectOptions connect_options(const CliOptions& o, const JobPlace& job) {
  ConnectOptions c;
  c.eal = o.eal;
  c.no_huge = o.no_huge;
  c.cpu = job.cpu;
  c.port_id = o.dpdk_port;
  c.rx_ring = o.rx_ring;
  c.tx_ring = o.tx_ring;
  c.mtu = o.mtu;
  c.link_timeout_s = o.link_timeout_s;
  c.local = memif_job(o, job);
  c.reflector = o.reflector;
  TransportOptions& t = c.transport;
  t.session = job.session;
  t.burst = o.burst;
  t.tx_burst = o.tx_burst;
  // Loss, duplicates and reordering are injected on the leader's side only, so the figures say exactly
  // how much was injected.
  t.drop_rate = job.leader ? o.drop_rate : 0;
  t.dup_rate = job.leader ? o.dup_rate : 0;
  t.reorder_rate = job.leader ? o.reorder_rate : 0;
  t.reflector = o.reflector;
  t.reflector_reply_handler = job.reflector_reply_handler;
  t.segment_bytes = job.segment_bytes;
  t.seed = job.session + static_cast<std::uint64_t>(job.rank);
  t.yield_when_idle = job.oversubscribed;
  return c;
}

// testpmd's memif (DPDK 22.11) can crash when its peer disconnects while it forwards: its forwarding
// lcore reads a ring the control thread has just unmapped (SIGSEGV in eth_memif_rx, seen here under
// load). So the client says when it is done measuring and waits for the reflector to close the link
// first, and the reflector stops forwarding before anything is unmapped. scripts/dpdk-vs-testpmd uses it.
void linger_for_reflector(const Port& port) {
  const char* env = std::getenv("LOGPB_REFLECTOR_LINGER_S");
  if (!env) return;
  const double limit = std::atof(env);
  std::fprintf(stderr, "logpbench: reflector run done\n");
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  rte_eth_link l{};
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rte_eth_link_get_nowait(port.id(), &l);
  } while (l.link_status == RTE_ETH_LINK_UP && std::chrono::steady_clock::now() < end);
}

}  // namespace logpb::dpdk
