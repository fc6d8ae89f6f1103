#include "dpdk/port.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "dpdk/memif_guard.hpp"

namespace logpb::dpdk {
namespace {

std::runtime_error dpdk_error(const std::string& call, int err, const std::string& advice) {
  return std::runtime_error(call + " failed: " + rte_strerror(err < 0 ? -err : err) +
                            (advice.empty() ? "" : " (" + advice + ")"));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// memif's shared rings and buffers live in a memfd region ("memif_region_N") that DPDK maps with 4 KiB
// pages and never touches ahead: each buffer's first use is a page fault in both processes. A method that
// warms up with a few round trips then pays one or two faults per message until it has gone once round
// the rings (about a ring's worth of messages in each direction): a request/reply after a one-way stream,
// whose reply ring the stream hardly used, measured 2-5x a warm ping-pong here. Populating the regions
// once the link is up (both ends have mapped them) takes the faults out of every timed loop. The pages
// are faulted in as if written, without changing a byte: the peer may already be using them.
// Returns the bytes populated, or -errno of the first madvise that failed (a kernel before 5.14).
long populate_memif_regions() {
  std::ifstream maps("/proc/self/maps");
  long bytes = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:memif_region_") == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || hi <= lo) continue;
    if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) != 0) return -errno;
    bytes += static_cast<long>(hi - lo);
  }
  return bytes;
}

long free_hugepages() {
  std::ifstream f("/proc/meminfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("HugePages_Free:", 0) == 0) return std::stol(line.substr(15));
  return 0;
}

bool has_arg(const std::vector<std::string>& a, const std::string& s) {
  for (const auto& x : a)
    if (x == s || x.rfind(s + "=", 0) == 0) return true;
  return false;
}

// EAL keeps a write lock on <runtime dir>/<prefix>/config while a primary process runs; a second primary
// on the same prefix fails inside rte_eal_init with rte_errno unset. Look first, to name the cause.
void check_prefix_free(const std::vector<std::string>& a) {
  if (has_arg(a, "--in-memory")) return;
  std::string prefix = "rte";
  for (const auto& x : a)
    if (x.rfind("--file-prefix=", 0) == 0) prefix = x.substr(14);
  const std::string path = "/var/run/dpdk/" + prefix + "/config";
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  ::close(fd);
  if (held)
    throw UsageError("the DPDK file prefix '" + prefix + "' is in use by process " + std::to_string(l.l_pid) +
                     ": give each DPDK process its own --file-prefix (in --eal), or use --in-memory");
}

}  // namespace

void parse_mac(const std::string& s, std::uint8_t out[6]) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    throw PeerError("malformed MAC address from the peer: '" + s + "'");
  for (int i = 0; i < 6; ++i) out[i] = static_cast<std::uint8_t>(v[i]);
}

// Ports of one process share its EAL: the first holder initialises it, the last cleans it up (a test
// drives both ends of a memif pair from one process; a rank of a local job has a port per peer).
static int eal_users = 0;
constexpr useconds_t kMemifCloseSettleUs = 50000;

static void init_eal(const std::vector<std::string>& eal_args);

Eal::Eal(const std::vector<std::string>& eal_args) {
  if (eal_users == 0) init_eal(eal_args);
  ++eal_users;
}

Eal::~Eal() {
  if (--eal_users == 0) rte_eal_cleanup();
}

Port::Port(const PortOptions& opt) {
  if (eal_users == 0) init_eal(opt.eal_args);
  ++eal_users;
  try {
    setup(opt);
  } catch (...) {
    if (--eal_users == 0) rte_eal_cleanup();
    throw;
  }
}

static void init_eal(const std::vector<std::string>& eal_args) {
  if (!has_arg(eal_args, "--no-huge") && free_hugepages() == 0)
    throw UsageError(
        "DPDK needs hugepages and none are free: reserve some (echo 512 > /proc/sys/vm/nr_hugepages; "
        "scripts/setup does) or run with --no-huge");
  check_prefix_free(eal_args);
  std::vector<std::string> args{"logpbench", "--log-level=error"};
  args.insert(args.end(), eal_args.begin(), eal_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    const int e = rte_errno;
    std::string advice = "check the EAL arguments given with --eal";
    if (e == EALREADY)
      advice = "EAL was already initialised in this process";
    else if (e == EACCES)
      advice = "permissions or hugepages: run as root; reserve hugepages or use --no-huge";
    else if (e == EAGAIN || e == EBUSY)
      advice =
          "another DPDK process holds this file prefix: give each process its own --file-prefix, or use --in-memory";
    else if (e == ENODEV || e == EINVAL)
      advice = "no such device or bad vdev arguments: check --eal \"--vdev ...\"";
    // Arguments EAL cannot parse (an unknown option: it printed its usage above) are the user's input: exit 2.
    if (e == EINVAL) {
      std::string given;
      for (const auto& a : eal_args) given += (given.empty() ? "" : " ") + a;
      throw UsageError("--eal: DPDK's EAL refused its arguments (rte_eal_init: EINVAL; its own message is above): " +
                       given);
    }
    throw dpdk_error("rte_eal_init", e, advice);
  }
}

void Port::setup(const PortOptions& opt) {
  const std::uint16_t n = rte_eth_dev_count_avail();
  if (n == 0)
    throw UsageError(
        "no DPDK port: give a virtual device (e.g. --eal \"--vdev net_memif0,role=server\") or bind a NIC "
        "to vfio-pci and allow it with --eal \"-a PCI_ADDRESS\"");
  if (!opt.device.empty()) {
    std::uint16_t p = 0;
    if (rte_eth_dev_get_port_by_name(opt.device.c_str(), &p) != 0)
      throw UsageError("no DPDK port named " + opt.device + " (" + std::to_string(n) +
                       " ports: check the --vdev arguments)");
    port_ = p;
  } else if (opt.port_id < 0) {
    if (n != 1) throw UsageError(std::to_string(n) + " DPDK ports exist: choose one with --dpdk-port");
    std::uint16_t p = 0;
    RTE_ETH_FOREACH_DEV(p) { port_ = p; }
  } else {
    if (!rte_eth_dev_is_valid_port(static_cast<std::uint16_t>(opt.port_id)))
      throw UsageError("--dpdk-port " + std::to_string(opt.port_id) + ": no such port (" + std::to_string(n) +
                       " available)");
    port_ = static_cast<std::uint16_t>(opt.port_id);
  }

  rte_eth_dev_info info{};
  if (int r = rte_eth_dev_info_get(port_, &info); r != 0) throw dpdk_error("rte_eth_dev_info_get", r, "");
  socket_ = rte_eth_dev_socket_id(port_);
  if (socket_ < 0) socket_ = 0;
  const int mtu = opt.mtu > 0 ? opt.mtu : RTE_ETHER_MTU;
  const auto max_mtu =
      std::min<std::uint32_t>(info.max_mtu, info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
  if (mtu > static_cast<int>(max_mtu) || mtu < static_cast<int>(info.min_mtu) || mtu < 128)
    throw UsageError("--mtu " + std::to_string(mtu) + " outside what " + info.driver_name + " allows [" +
                     std::to_string(std::max<int>(info.min_mtu, 128)) + ", " + std::to_string(max_mtu) + "]");
  const std::uint32_t room = RTE_PKTMBUF_HEADROOM + std::max<std::uint32_t>(2048, static_cast<std::uint32_t>(mtu) + 64);

  rte_eth_conf conf{};
  conf.rxmode.mtu = static_cast<std::uint32_t>(mtu);
  if (int r = rte_eth_dev_configure(port_, 1, 1, &conf); r != 0) throw dpdk_error("rte_eth_dev_configure", r, "");
  std::uint16_t nrx = static_cast<std::uint16_t>(opt.rx_ring), ntx = static_cast<std::uint16_t>(opt.tx_ring);
  if (int r = rte_eth_dev_adjust_nb_rx_tx_desc(port_, &nrx, &ntx); r != 0)
    throw dpdk_error("rte_eth_dev_adjust_nb_rx_tx_desc", r, "");

  // The pool holds every mbuf that can be out at once: a full rx ring (a NIC keeps it stocked), a full
  // tx ring, an rx burst being consumed, tracked sends awaiting tx completion (transport.hpp),
  // the per-lcore caches, and slack. Never fewer than 8191, a size known to work.
  const unsigned cache = 256;
  const unsigned need = nrx + ntx + 512 + 1024 + cache * (rte_lcore_count() + 1) + 1024;
  unsigned pool_n = 8191;
  while (pool_n < need) pool_n = pool_n * 2 + 1;
  const std::string pool_name = "logpb_pool_" + std::to_string(port_);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), pool_n, cache, 0, static_cast<std::uint16_t>(room), socket_);
  if (!pool_)
    throw dpdk_error("rte_pktmbuf_pool_create", rte_errno,
                     "not enough hugepage memory for " + std::to_string(pool_n) +
                         " mbufs? lower --rx-ring/--tx-ring, try -m or --no-huge");
  if (int r = rte_eth_rx_queue_setup(port_, 0, nrx, static_cast<unsigned>(socket_), nullptr, pool_); r != 0)
    throw dpdk_error("rte_eth_rx_queue_setup", r, "--rx-ring too large for this device?");
  if (int r = rte_eth_tx_queue_setup(port_, 0, ntx, static_cast<unsigned>(socket_), nullptr); r != 0)
    throw dpdk_error("rte_eth_tx_queue_setup", r, "--tx-ring too large for this device?");
  if (int r = rte_eth_dev_start(port_); r != 0) throw dpdk_error("rte_eth_dev_start", r, "");
  rte_eth_promiscuous_enable(port_);  // some vdevs ignore it; frames carry our EtherType anyway

  rte_ether_addr a{};
  rte_eth_macaddr_get(port_, &a);
  std::copy(a.addr_bytes, a.addr_bytes + 6, mac_);

  max_payload_ = static_cast<std::uint32_t>(mtu);
  // The ring the PMD really built, where it says (memif sizes its rings from its own devargs).
  rte_eth_rxq_info qi{};
  rx_ring_ = nrx;
  if (rte_eth_rx_queue_info_get(port_, 0, &qi) == 0 && qi.nb_desc > 0) rx_ring_ = qi.nb_desc;
  desc_ = {{"kind", "dpdk"},      {"driver", info.driver_name},    {"port", port_},
           {"mac", mac_string()}, {"numa_socket", socket_},        {"mtu", mtu},
           {"rx_ring", nrx},      {"rx_ring_effective", rx_ring_}, {"mbuf_pool", pool_n},
           {"tx_ring", ntx},      {"eal_args", opt.eal_args}};
}

void Port::wait_link(double timeout_s, const std::function<bool()>& peer_alive) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  rte_eth_link link{};
  for (;;) {
    rte_eth_link_get_nowait(port_, &link);
    if (link.link_status == RTE_ETH_LINK_UP) break;
    throw_if_interrupted();
    if (peer_alive && !peer_alive())
      throw PeerError("a rank of the job is gone while DPDK port " + std::to_string(port_) + " (" +
                      desc_.value("driver", "?") + ") waited for its link");
    if (std::chrono::steady_clock::now() > deadline)
      throw PeerError("link of DPDK port " + std::to_string(port_) + " (" + desc_.value("driver", "?") +
                      ") still down after " + std::to_string(timeout_s) +
                      " s: is the other end up (memif needs both processes), the cable in, "
                      "the interface up?");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  desc_["link_speed_mbps"] = link.link_speed;
  if (desc_.value("driver", "") == "net_memif") {
    guard_memif_port(port_);
    const long populated = populate_memif_regions();
    if (populated >= 0)
      desc_["memif_regions_populated_bytes"] = populated;
    else
      desc_["memif_regions_populated_error"] = std::string("madvise(MADV_POPULATE_WRITE): ") +
                                               std::strerror(static_cast<int>(-populated)) +
                                               " (the first pass round the rings pays a page fault per buffer)";
  }
}

Port::~Port() {
  unguard_memif_port(port_);
  rte_eth_dev_stop(port_);
  rte_eth_dev_close(port_);
  // memif's close leaves work to the EAL interrupt thread (the control channel's teardown, and the
  // other end's disconnect where it lives in this process). Freeing the pool and cleaning the EAL up
  // under that thread crashed dpdk_pair_test (both ends in one process) in 3 to 4 of 80 runs; that
  // thread gets a moment first.
  if (desc_.value("driver", "") == "net_memif") usleep(kMemifCloseSettleUs);
  rte_mempool_free(pool_);
  if (--eal_users == 0) rte_eal_cleanup();
}

std::string Port::mac_string() const {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", mac_[0], mac_[1], mac_[2], mac_[3], mac_[4], mac_[5]);
  return b;
}

nlohmann::json Port::describe() const { return desc_; }

}  // namespace logpb::dpdk
