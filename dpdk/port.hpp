// DPDK control path: EAL, one port with one rx and one tx queue, a NUMA-local mempool, link wait.
// Several Ports in one process share its EAL (the test that drives both ends of a memif pair).
// Everything here runs before any timed loop; the datapath is in transport.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct rte_mempool;

namespace logpb::dpdk {

struct PortOptions {
  std::vector<std::string> eal_args;  // passed to rte_eal_init as given (after argv[0])
  int port_id = -1;                   // -1: the only port there is (exactly one must exist), unless `device`
  std::string device;                 // the port of this ethdev name (e.g. "net_memif3"); overrides port_id
  int rx_ring = 1024, tx_ring = 1024;
  int mtu = 0;  // 0: leave the port's default
};

// Holds the process's EAL up: initialises it if no Port or Eal holds it yet, cleans it up when the last
// holder goes. Lets a process probe every vdev at once and start its ports later, in an order.
class Eal {
 public:
  explicit Eal(const std::vector<std::string>& eal_args);
  Eal(const Eal&) = delete;
  Eal& operator=(const Eal&) = delete;
  ~Eal();
};

class Port {
 public:
  explicit Port(const PortOptions& opt);  // EAL init + port set-up + start; throws with advice
  // Waits for the link; memif's comes up only once the other process has connected.
  // Waits for the link; PeerError after timeout_s, or as soon as peer_alive (when given) says a rank of
  // the job is gone: a peer killed before its end came up never brings the link up.
  void wait_link(double timeout_s, const std::function<bool()>& peer_alive = {});
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  ~Port();

  std::uint16_t id() const { return port_; }
  rte_mempool* pool() const { return pool_; }
  const std::uint8_t* mac() const { return mac_; }
  std::string mac_string() const;
  int socket() const { return socket_; }
  std::uint32_t max_frame_payload() const { return max_payload_; }  // bytes after the Ethernet header
  int rx_ring() const { return rx_ring_; }  // rx descriptors as built (the PMD's word where it gives one)
  nlohmann::json describe() const;

 private:
  std::uint16_t port_ = 0;
  rte_mempool* pool_ = nullptr;
  std::uint8_t mac_[6] = {};
  int socket_ = 0;
  std::uint32_t max_payload_ = 0;
  int rx_ring_ = 0;
  void setup(const PortOptions& opt);
  nlohmann::json desc_;
};

// "aa:bb:cc:dd:ee:ff" -> bytes; throws on malformed input (it comes from the peer).
void parse_mac(const std::string& s, std::uint8_t out[6]);

}  // namespace logpb::dpdk
