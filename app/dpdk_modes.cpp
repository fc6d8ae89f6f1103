// --transport dpdk: every rank of the job connects through dpdk::connect (dpdk/connect.hpp) and plays
// its role in run_job. `local -N K` joins its K processes with one memif per pair of ranks;
// `server`/`client HOST` and launched jobs use the port the EAL arguments give (af_xdp on a veth pair or
// a bridge, a real NIC), routed by MAC; `local --reflector` is a job of one rank measuring against a
// reflector nobody here wrote (testpmd in macswap mode).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "app/job.hpp"
#include "app/modes.hpp"
#include "app/modes_common.hpp"
#include "common/methods/protocol.hpp"
#include "dpdk/connect.hpp"

namespace logpb::app {
namespace {

constexpr double kEthernetLossTimeout = 0.05;  // an Ethernet may drop frames: re-measure after 50 ms of silence

// A launched job on one host with no device in its EAL arguments is joined like `local` (memif pairs).
bool memif_job(const Job& job) {
  if (job.o.reflector) return false;
  if (job.o.mode == "local") return true;
  if (job.o.mode != "launched" || !job.one_host) return false;
  for (const char* dev : {"--vdev", "-a", "--allow", "-b", "--block"})
    if (job.o.eal.find(dev) != std::string::npos) return false;
  return true;
}

dpdk::ConnectOptions connect_options(const Job& job) {
  const Options& o = job.o;
  dpdk::ConnectOptions c;
  c.eal = o.eal;
  c.no_huge = o.no_huge;
  c.cpu = o.cpu;
  c.port_id = o.dpdk_port;
  c.rx_ring = o.rx_ring;
  c.tx_ring = o.tx_ring;
  c.mtu = o.mtu;
  c.link_timeout_s = o.link_timeout_s;
  c.local = memif_job(job);
  c.reflector = o.reflector;
  dpdk::TransportOptions& t = c.transport;
  t.session = job.session;
  t.burst = o.burst;
  t.tx_burst = o.tx_burst;
  // Loss, duplicates and reordering are injected on the leader's side only, so the figures say exactly
  // how much was injected.
  t.drop_rate = job.leader() ? o.drop_rate : 0;
  t.dup_rate = job.leader() ? o.dup_rate : 0;
  t.reorder_rate = job.leader() ? o.reorder_rate : 0;
  t.reflector = o.reflector;
  t.reflector_reply_handler = methods::kAck;
  t.segment_bytes = o.segment_bytes;
  t.seed = job.session + static_cast<std::uint64_t>(job.ranks.rank());
  t.yield_when_idle = job.oversubscribed;
  return c;
}

// testpmd's memif (DPDK 22.11) can crash when its peer disconnects while it forwards: its forwarding
// lcore reads a ring the control thread has just unmapped (SIGSEGV in eth_memif_rx, seen here under
// load). With LOGPB_REFLECTOR_LINGER_S set, the client says when it is done measuring and keeps the link
// up until the reflector closes it (or that many seconds pass), so the reflector stops forwarding before
// anything is unmapped. scripts/dpdk-vs-testpmd uses it.
void linger_for_reflector(const dpdk::Port& port) {
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

}  // namespace

void run_dpdk(Job& job) {
  auto conn = dpdk::connect(job.ranks, connect_options(job));
  dpdk::Transport& t = conn->transport();
  if (job.o.mode == "server" && !job.leader())
    std::fprintf(stderr, "logpbench server: DPDK port %u (%s)\n", conn->ports()[0]->id(), conn->ports()[0]->mac_string().c_str());
  if (job.leader()) {
    job.doc.j["meta"]["no_huge"] = job.o.no_huge;
    job.doc.j["meta"]["dpdk_job"] = conn->describe();
  }
  const nlohmann::json numa = numa_placement(job.o.cpu, t.describe().value("numa_socket", 0));
  run_job(job, t, kEthernetLossTimeout, numa);
  if (job.o.reflector) linger_for_reflector(*conn->ports()[0]);
}

}  // namespace logpb::app
