// The DPDK connect step (control path, never timed): from a job's Ranks to this rank's port(s) and
// transport, ready to send. Apart from the datapath (transport.hpp) and from the run modes (app/),
// so every way of launching a job (local fork, server/client, mpirun, srun) connects the same way.
//
//  - Local jobs (every rank on one host): one memif interface per pair of ranks, the lower rank its
//    memif server; each process gives all its vdevs to its one EAL init, starts its server ports, and
//    after a barrier (every server listens) its client ports. The transport polls them all.
//  - Other jobs (a NIC, af_xdp): one port per rank; the switch (or Linux bridge) routes by MAC, and the
//    rank -> MAC table comes from an allgather.
//  - Reflector (testpmd macswap): a job of one rank whose transport sees the reflector as rank 1.
// Every rank reports its MAC(s) and rx ring(s) (for the credit limit), waits for its links, and the step
// ends with a barrier: nobody sends before everyone can receive.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/ranks.hpp"
#include "dpdk/port.hpp"
#include "dpdk/transport.hpp"

namespace logpb::dpdk {

struct ConnectOptions {
  std::string eal;       // the user's EAL arguments (--eal), split on spaces, appended last
  bool no_huge = false;  // --no-huge: EAL without hugepages (and a private file prefix)
  int cpu = 0;           // this rank's lcore (-l), unless the user's EAL arguments name cores
  int port_id = -1;      // --dpdk-port (jobs over one port)
  int rx_ring = 1024, tx_ring = 1024, mtu = 0;
  double link_timeout_s = 10;
  bool local = false;          // every rank on this host: one memif interface per pair of ranks
  bool reflector = false;      // a job of one rank against a reflector (testpmd macswap) on the one port
  TransportOptions transport;  // session, burst, drop rate, segment, ...; rank and size are the job's
  const Clock* floor_clock = nullptr;  // given: a job of two ranks times its bare loop first (floor.hpp)
  int floor_requester = 0;             // the rank that times it (the job's leader: the client of server/client)
};

// What connect() built. Its destructor frees the transport but leaves the ports open and the EAL up
// until the process ends: DPDK 22.11's memif handles a peer's disconnect on the EAL interrupt thread,
// and closing our devices or cleaning the EAL up meanwhile crashed it (SIGSEGV in rte_free on that
// thread, seen in 4-rank jobs whose ranks leave at slightly different times). A job's process ends
// right after its connection; the kernel closes the sockets.
class Connection {
 public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
  // body(transport) with the transport connect() built: Transport<Plain>, or Transport<Rigged> when the
  // options asked for injection or a reflector (rigged()). The one branch between the two, at the top.
  template <class Body>
  decltype(auto) with_transport(Body&& body) {
    if (rigged_) return body(*rigged_);
    return body(*plain_);
  }
  // The transport as a known policy (tests that built their options themselves); a logic error if
  // connect() built the other one.
  template <class Rig = Plain>
  Transport<Rig>& transport() {
    if constexpr (Rig::rigged) {
      if (!rigged_) throw std::logic_error("dpdk::Connection: the transport is Transport<Plain>, not Rigged");
      return *rigged_;
    } else {
      if (!plain_) throw std::logic_error("dpdk::Connection: the transport is Transport<Rigged>, not Plain");
      return *plain_;
    }
  }
  const std::vector<std::unique_ptr<Port>>& ports() const { return ports_; }
  // The size the AM endpoint must have: the job's, or 2 with a reflector (it is rank 1).
  int endpoint_size() const { return endpoint_size_; }
  // How the job was wired: mode, EAL arguments, memif sockets, the rank -> MAC table.
  const nlohmann::json& describe() const { return desc_; }
  // The bare loop under the transport (meta.transport_floor; floor.hpp): null on every rank but the
  // requester of a job of two that was given a floor_clock; floor_ms() what it took.
  const nlohmann::json& floor() const { return floor_; }
  double floor_ms() const { return floor_ms_; }

 private:
  friend std::unique_ptr<Connection> connect(Ranks& ranks, const ConnectOptions& o);
  friend struct ConnectSteps;  // connect()'s steps (connect.cpp)
  std::unique_ptr<Eal> eal_;
  std::vector<std::unique_ptr<Port>> ports_;
  // Builds the transport the options ask for (rigged()) over the connection's ports.
  void make_transport(std::vector<Port*> ports, const std::vector<PeerAddress>& peers, const TransportOptions& opt,
                      std::function<bool()> peer_alive);
  std::unique_ptr<Transport<Plain>> plain_;  // exactly one of the two
  std::unique_ptr<Transport<Rigged>> rigged_;
  int endpoint_size_ = 0;
  nlohmann::json desc_, floor_;
  double floor_ms_ = 0;
};

// Builds this rank's ports and transport, exchanges MACs and rx rings with ranks.allgather, waits for
// the links and ends with ranks.barrier(). Every rank of the job calls it. peer_alive() is
// ranks.all_alive() (and, over memif, every link still up: a dead rank's memif peers see it at once).
// Throws UsageError for a configuration that cannot work, PeerError when a rank or link fails.
std::unique_ptr<Connection> connect(Ranks& ranks, const ConnectOptions& o);

// The EAL argument policy: the user's arguments, plus a core list from o.cpu, an in-memory EAL (so two
// processes never share a file prefix; a private prefix under --no-huge, which refuses --in-memory),
// no telemetry and --no-huge -m 512 when asked, unless the user's arguments chose otherwise. `extra`
// (vdevs, --no-pci) comes first.
std::vector<std::string> eal_args(const ConnectOptions& o, const std::vector<std::string>& extra);

// The memif socket of the pair (lo, hi) of a job: an abstract socket (memif's default), so nothing is
// left in the file system; `job` (rank 0's pid and the session) keeps two jobs apart.
std::string memif_socket(const std::string& job, int lo, int hi);

}  // namespace logpb::dpdk
