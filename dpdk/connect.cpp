#include "dpdk/connect.hpp"

#include <rte_ethdev.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "dpdk/floor.hpp"

namespace logpb::dpdk {
namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

bool has_prefix_arg(const std::vector<std::string>& v, std::initializer_list<const char*> names) {
  for (const auto& a : v)
    for (const char* n : names)
      if (a == n || a.rfind(std::string(n) + "=", 0) == 0) return true;
  return false;
}

PortOptions port_options(const ConnectOptions& o, std::vector<std::string> eal, const std::string& device = {}) {
  PortOptions p;
  p.eal_args = std::move(eal);
  p.port_id = o.port_id;
  p.device = device;
  p.rx_ring = o.rx_ring;
  p.tx_ring = o.tx_ring;
  p.mtu = o.mtu;
  return p;
}

bool link_up(std::uint16_t port) {
  rte_eth_link l{};
  rte_eth_link_get_nowait(port, &l);
  return l.link_status == RTE_ETH_LINK_UP;
}

// A --vdev naming a memif in the client role (memif's default role is the server).
bool memif_client(const std::vector<std::string>& eal) {
  for (const std::string& a : eal)
    if (a.find("net_memif") != std::string::npos && a.find("role=client") != std::string::npos) return true;
  return false;
}

std::string memif_name(int peer) { return "net_memif" + std::to_string(peer); }

// A memif client that finds no started server gives up for good (memif clients do not retry). So every
// rank first starts its ports that are not memif clients, then all meet at a barrier, then each starts
// its memif clients. Where no memif is involved (a NIC, af_xdp) the barrier only orders the starts.
void start_ports(Ranks& ranks, const std::function<void()>& servers, const std::function<void()>& clients) {
  servers();
  ranks.barrier();
  clients();
}

}  // namespace

std::vector<std::string> eal_args(const ConnectOptions& o, const std::vector<std::string>& extra) {
  std::vector<std::string> a = extra;
  const auto user = split_words(o.eal);
  if (!has_prefix_arg(user, {"-l", "-c", "--lcores"})) {
    a.push_back("-l");
    a.push_back(std::to_string(o.cpu));
  }
  if (!has_prefix_arg(user, {"--file-prefix", "--in-memory"})) {
    // --no-huge implies legacy memory, which --in-memory refuses: a private file prefix instead.
    if (o.no_huge || has_prefix_arg(user, {"--no-huge"}))
      a.push_back("--file-prefix=logpbench-" + std::to_string(getpid()));
    else
      a.push_back("--in-memory");
  }
  if (!has_prefix_arg(user, {"--telemetry", "--no-telemetry"})) a.push_back("--no-telemetry");
  if (o.no_huge && !has_prefix_arg(user, {"--no-huge"})) {
    a.push_back("--no-huge");
    a.push_back("-m");
    a.push_back("512");
  }
  a.insert(a.end(), user.begin(), user.end());
  return a;
}

std::string memif_socket(const std::string& job, int lo, int hi) {
  return "/run/logpbench-memif-" + job + "-" + std::to_string(lo) + "-" + std::to_string(hi) + ".sock";
}

Connection::~Connection() {
  plain_.reset();
  rigged_.reset();
  for (auto& p : ports_) static_cast<void>(p.release());  // see connect.hpp: left open on purpose
  static_cast<void>(eal_.release());
}

void Connection::make_transport(std::vector<Port*> ports, const std::vector<PeerAddress>& peers,
                                const TransportOptions& opt, std::function<bool()> peer_alive) {
  if (rigged(opt))
    rigged_ = std::make_unique<Transport<Rigged>>(std::move(ports), peers, opt, std::move(peer_alive));
  else
    plain_ = std::make_unique<Transport<Plain>>(std::move(ports), peers, opt, std::move(peer_alive));
}

// connect()'s steps, each on the Connection it builds (a friend of it).
struct ConnectSteps {
  // The reflector echoes our frames with the MACs swapped: the address we send to comes back as the
  // source, so any will do; it is rank 1 of a job of two as the transport and endpoint see it.
  static void reflector(Connection& c, int n, const ConnectOptions& o, TransportOptions topt) {
    if (n != 1)
      throw UsageError("--reflector is a job of one rank (the reflector is its peer), not of " + std::to_string(n));
    auto args = eal_args(o, {});
    c.ports_.push_back(std::make_unique<Port>(port_options(o, args)));
    Port& port = *c.ports_[0];
    port.wait_link(o.link_timeout_s);
    const std::uint8_t reflector_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
    topt.size = 2;
    const std::uint16_t id = port.id();
    PeerAddress reflector{.rank = 1};
    std::memcpy(reflector.mac, reflector_mac, 6);
    c.make_transport({&port}, {reflector}, topt, [id] { return link_up(id); });
    c.endpoint_size_ = 2;
    c.desc_ = {{"mode", "reflector"}, {"eal_args", args}};
  }

  // One memif per pair. Socket names are agreed from rank 0's pid and the session. Returns what this rank
  // tells the others: each link's MAC and rx ring, by peer.
  static nlohmann::json memif_per_pair(Connection& c, Ranks& ranks, const ConnectOptions& o,
                                       std::vector<PeerAddress>& peers, const std::function<bool()>& ranks_alive) {
    const int me = ranks.rank(), n = ranks.size();
    const std::string job =
        ranks.broadcast(std::to_string(getpid()) + "-" + std::to_string(o.transport.session)).get<std::string>();
    std::vector<std::string> extra{"--no-pci"};
    nlohmann::json sockets = nlohmann::json::object();
    for (int j = 0; j < n; ++j) {
      if (j == me) continue;
      const int lo = std::min(me, j), hi = std::max(me, j);
      const std::string sock = memif_socket(job, lo, hi);
      extra.push_back("--vdev=" + memif_name(j) + ",role=" + (me == lo ? "server" : "client") + ",id=0,socket=" + sock);
      sockets[std::to_string(j)] = sock;
    }
    const auto args = eal_args(o, extra);
    c.eal_ = std::make_unique<Eal>(args);  // probes every vdev: the server sockets listen from here on
    // We serve the memifs to higher ranks and are the client of lower ones. Ports are kept in rank order
    // of their peers.
    std::vector<std::unique_ptr<Port>> by_peer(static_cast<std::size_t>(n));
    const auto start = [&](int j) {
      by_peer[static_cast<std::size_t>(j)] = std::make_unique<Port>(port_options(o, args, memif_name(j)));
    };
    start_ports(
        ranks,
        [&] {
          for (int j = me + 1; j < n; ++j) start(j);
        },
        [&] {
          for (int j = 0; j < me; ++j) start(j);
        });
    nlohmann::json links = nlohmann::json::object();
    for (int j = 0; j < n; ++j) {
      if (j == me) continue;
      Port& p = *by_peer[static_cast<std::size_t>(j)];
      p.wait_link(o.link_timeout_s, ranks_alive);
      links[std::to_string(j)] = {{"mac", p.mac_string()}, {"rx_ring", p.rx_ring()}};
      PeerAddress a;
      a.rank = j;
      a.port = static_cast<int>(c.ports_.size());
      peers.push_back(a);
      c.ports_.push_back(std::move(by_peer[static_cast<std::size_t>(j)]));
    }
    c.desc_ = {{"mode", "memif per pair of ranks (local job)"}, {"eal_args", args}, {"memif_sockets", sockets}};
    return {{"links", links}};
  }

  // One port per rank, routed by MAC. Returns what this rank tells the others: its MAC and rx ring.
  static nlohmann::json port_per_rank(Connection& c, Ranks& ranks, const ConnectOptions& o,
                                      std::vector<PeerAddress>& peers, const std::function<bool()>& ranks_alive) {
    const int me = ranks.rank(), n = ranks.size();
    const auto args = eal_args(o, {});
    // The EAL arguments may name a memif (server/client on one host, testpmd's arrangement).
    const bool client = memif_client(split_words(o.eal));
    const auto start = [&] { c.ports_.push_back(std::make_unique<Port>(port_options(o, args))); };
    start_ports(
        ranks,
        [&] {
          if (!client) start();
        },
        [&] {
          if (client) start();
        });
    Port& p = *c.ports_[0];
    p.wait_link(o.link_timeout_s, ranks_alive);
    for (int j = 0; j < n; ++j)
      if (j != me) peers.push_back(PeerAddress{.rank = j});
    c.desc_ = {{"mode", "one port per rank, routed by MAC"}, {"eal_args", args}};
    // Our one rx ring receives from every other rank.
    return {{"mac", p.mac_string()}, {"rx_ring", p.rx_ring()}, {"rx_ring_sources", n - 1}};
  }

  // Every rank's addresses, gathered: fills in each peer's MAC and rx ring, refuses malformed rings and
  // (routed by MAC) shared MACs, and records the rank -> MAC table.
  static void exchange_addresses(Connection& c, Ranks& ranks, const ConnectOptions& o, nlohmann::json mine,
                                 std::vector<PeerAddress>& peers) {
    const int me = ranks.rank(), n = ranks.size();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    mine["host"] = host;
    const nlohmann::json all = ranks.allgather(mine);
    nlohmann::json table = nlohmann::json::array();
    std::set<std::string> macs;
    for (PeerAddress& a : peers) {
      const nlohmann::json& theirs = all.at(static_cast<std::size_t>(a.rank));
      const nlohmann::json& link = o.local ? theirs.at("links").at(std::to_string(me)) : theirs;
      const std::string mac = link.at("mac").get<std::string>();
      parse_mac(mac, a.mac);
      a.rx_ring = link.at("rx_ring").get<int>();
      a.rx_ring_sources = link.value("rx_ring_sources", 1);
      if (a.rx_ring < 1 || a.rx_ring_sources < 1 || a.rx_ring_sources >= n + 1)
        throw PeerError("rank " + std::to_string(a.rank) + " reported a malformed rx ring: " + link.dump());
      if (!o.local && !macs.insert(mac).second)
        throw UsageError("ranks share the MAC " + mac +
                         ": a switch cannot route between them (give every rank its own port)");
      table.push_back({{"rank", a.rank},
                       {"mac", mac},
                       {"host", theirs.value("host", "?")},
                       {"rx_ring", a.rx_ring},
                       {"rx_ring_sources", a.rx_ring_sources}});
    }
    if (!o.local && macs.count(c.ports_[0]->mac_string()))
      throw UsageError("another rank has this rank's MAC " + c.ports_[0]->mac_string() +
                       ": give every rank its own port");
    c.desc_["peers"] = table;
  }

  // The transport over every port, with its test of the peers' liveness.
  static void make_transport(Connection& c, const ConnectOptions& o, const std::vector<PeerAddress>& peers,
                             const TransportOptions& topt, const std::function<bool()>& ranks_alive) {
    std::vector<Port*> ports;
    std::vector<std::uint16_t> ids;
    for (auto& p : c.ports_) {
      ports.push_back(p.get());
      ids.push_back(p->id());
    }
    std::function<bool()> alive = ranks_alive;
    if (o.local)  // a dead rank's memif links go down: its direct peers see it without rank 0's word
      alive = [ranks_alive, ids] {
        for (std::uint16_t id : ids)
          if (!link_up(id)) return false;
        return ranks_alive();
      };
    c.make_transport(std::move(ports), peers, topt, std::move(alive));
  }
};

std::unique_ptr<Connection> connect(Ranks& ranks, const ConnectOptions& o) {
  auto c = std::make_unique<Connection>();
  const int n = ranks.size();
  TransportOptions topt = o.transport;
  topt.rank = ranks.rank();
  topt.size = n;
  if (o.reflector) {
    ConnectSteps::reflector(*c, n, o, topt);
    return c;
  }
  if (n < 2) throw UsageError("a DPDK job needs two ranks or more (or --reflector: a reflector as the peer)");

  std::vector<PeerAddress> peers;
  const std::function<bool()> ranks_alive = [&ranks] { return ranks.all_alive(); };
  nlohmann::json mine = o.local ? ConnectSteps::memif_per_pair(*c, ranks, o, peers, ranks_alive)
                                : ConnectSteps::port_per_rank(*c, ranks, o, peers, ranks_alive);
  ConnectSteps::exchange_addresses(*c, ranks, o, std::move(mine), peers);
  if (o.floor_clock && n == 2) {
    ranks.barrier();  // both ends are up and know each other's address
    const auto t0 = std::chrono::steady_clock::now();
    c->floor_ = measure_floor(*c->ports_[0], peers[0].mac, ranks.rank() == o.floor_requester, *o.floor_clock);
    c->floor_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  ConnectSteps::make_transport(*c, o, peers, topt, ranks_alive);
  c->endpoint_size_ = n;
  ranks.barrier();  // everyone's transport exists: nobody sends before everyone can receive
  return c;
}

}  // namespace logpb::dpdk
