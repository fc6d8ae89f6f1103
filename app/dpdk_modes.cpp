// --transport dpdk. `local` forks a peer and joins the two processes with a memif pair (each process
// has its own in-memory EAL); `server`/`client HOST` run over whatever port the EAL arguments give
// (af_xdp on a veth pair, a real NIC) and exchange MAC addresses over the TCP bootstrap; `local
// --reflector` measures against a reflector nobody here wrote (testpmd in macswap mode).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "dpdk/dpdk_port.hpp"
#include "dpdk/dpdk_transport.hpp"

namespace logpb::app {
namespace {

using DpdkEndpoint = am::Endpoint<dpdk::Transport>;

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

// EAL arguments for one process: the user's, plus a core list from --cpu, an in-memory EAL (so two
// processes never share a file prefix) and --no-huge when asked, unless the user chose otherwise.
std::vector<std::string> eal_args(const Options& o, int cpu, const std::vector<std::string>& extra) {
  std::vector<std::string> a = extra;
  const auto user = split_words(o.eal);
  if (!has_prefix_arg(user, {"-l", "-c", "--lcores"})) {
    a.push_back("-l");
    a.push_back(std::to_string(cpu));
  }
  if (!has_prefix_arg(user, {"--file-prefix", "--in-memory"})) {
    // --no-huge implies legacy memory, which --in-memory refuses: a private file prefix instead.
    if (o.no_huge || has_prefix_arg(user, {"--no-huge"})) a.push_back("--file-prefix=logpbench-" + std::to_string(getpid()));
    else a.push_back("--in-memory");
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

dpdk::PortOptions port_options(const Options& o, std::vector<std::string> eal) {
  dpdk::PortOptions p;
  p.eal_args = std::move(eal);
  p.port_id = o.dpdk_port;
  p.rx_ring = o.rx_ring;
  p.tx_ring = o.tx_ring;
  p.mtu = o.mtu;
  return p;
}

// peer_rx_ring: the other side's rx ring as it reported it (0: unknown, taken as ours); the one-way
// credit limit must fit the smaller of the two.
dpdk::TransportOptions transport_options(const Options& o, std::uint32_t session, bool server, int peer_rx_ring = 0) {
  dpdk::TransportOptions t;
  t.session = session;
  t.rank = server ? 1 : 0;  // as endpoint_options: the client is rank 0, the server rank 1
  t.burst = o.burst;
  // Loss is injected on the client's side only, so the figures say exactly how much was dropped.
  t.drop_rate = server ? 0 : o.drop_rate;
  t.reflector = o.reflector;
  t.reflector_reply_handler = methods::kAck;
  t.segment_bytes = o.segment_bytes;
  t.seed = session;
  t.peer_rx_ring = peer_rx_ring;
  return t;
}

std::string memif_socket(std::uint32_t session) {
  // An abstract socket (memif's default): nothing is left in the file system.
  return "/run/logpbench-memif-" + std::to_string(getpid()) + "-" + std::to_string(session) + ".sock";
}

constexpr double kEthernetLossTimeout = 0.05;  // an Ethernet may drop frames: re-measure after 50 ms of silence

// Runs the bench on a connected transport and records where it ran.
void run_on(dpdk::Transport& t, const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress,
            std::uint32_t session) {
  DpdkEndpoint ep(t, clock, endpoint_options(o, session, o.segment_bytes, false, kEthernetLossTimeout));
  doc.j["meta"]["numa_placement"] = numa_placement(o.cpu, t.describe().value("numa_socket", 0));
  doc.j["meta"]["no_huge"] = o.no_huge;
  run_connected(ep, o, clock, doc, progress, session);
}

// testpmd's memif (DPDK 22.11) can crash when its peer disconnects while it forwards: its forwarding
// lcore reads a ring the control thread has just unmapped (SIGSEGV in eth_memif_rx, seen here under
// load). With LOGPB_REFLECTOR_LINGER_S set, the client says when it is done measuring and keeps the link
// up until the reflector closes it (or that many seconds pass), so the reflector stops forwarding before
// anything is unmapped. scripts/dpdk-vs-testpmd uses it.
void linger_for_reflector(dpdk::Port& port) {
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

void run_dpdk(const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress) {
  const std::uint32_t session = new_session();
  if (o.mode == "local" && o.reflector) {
    // The peer is a reflector (testpmd macswap): it echoes our frames, so no bootstrap and no handlers.
    doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", "the reflector's"}};
    dpdk::Port port(port_options(o, eal_args(o, o.cpu, {})));
    port.wait_link(o.link_timeout_s);
    const std::uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x01};  // macswap turns it into our source
    dpdk::Port* pp = &port;
    dpdk::Transport t(port, peer_mac, transport_options(o, session, false), [pp] {
      rte_eth_link l{};
      rte_eth_link_get_nowait(pp->id(), &l);
      return l.link_status == RTE_ETH_LINK_UP;
    });
    run_on(t, o, clock, doc, progress, session);
    linger_for_reflector(port);
    return;
  }

  if (o.mode == "local") {
    check_cpu(o.cpu, "--cpu");
    check_cpu(o.peer_cpu, "--peer-cpu");
    const std::string sock = memif_socket(session);
    // The peer takes memif's server role; its socket must listen before this side connects as client.
    LocalPeer peer("dpdk peer", [&](Channel& ch) {
      dpdk::Port port(port_options(o, eal_args(o, o.peer_cpu, {"--no-pci", "--vdev=net_memif0,role=server,socket=" + sock})));
      ch.send({{"mac", port.mac_string()}, {"rx_ring", port.rx_ring()}});
      std::uint8_t peer_mac[6];
      const auto their = ch.receive(o.connect_timeout_s);
      dpdk::parse_mac(their.at("mac").get<std::string>(), peer_mac);
      port.wait_link(o.link_timeout_s);
      const Channel* chp = &ch;
      dpdk::Transport t(port, peer_mac, transport_options(o, session, true, their.value("rx_ring", 0)),
                        [chp] { return chp->peer_alive(); });
      DpdkEndpoint ep(t, clock, endpoint_options(o, session, o.segment_bytes, true, kEthernetLossTimeout));
      methods::serve(ep);
    });
    doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", o.peer_cpu}};
    peer.run([&] {
      Channel& ch = peer.channel();
      std::uint8_t peer_mac[6];
      const auto their = ch.receive(o.connect_timeout_s);
      dpdk::parse_mac(their.at("mac").get<std::string>(), peer_mac);
      dpdk::Port port(port_options(o, eal_args(o, o.cpu, {"--no-pci", "--vdev=net_memif0,role=client,socket=" + sock})));
      ch.send({{"mac", port.mac_string()}, {"rx_ring", port.rx_ring()}});
      port.wait_link(o.link_timeout_s);
      const Channel* chp = &ch;
      dpdk::Transport t(port, peer_mac, transport_options(o, session, false, their.value("rx_ring", 0)),
                        [chp] { return chp->peer_alive(); });
      run_on(t, o, clock, doc, progress, session);
      peer.finish(o.timeout_s);  // memif must stay up until the peer has read the quit
    });
    return;
  }

  if (o.mode == "server") {
    dpdk::Port port(port_options(o, eal_args(o, o.cpu, {})));
    std::fprintf(stderr, "logpbench server: DPDK port %u (%s)\n", port.id(), port.mac_string().c_str());
    nlohmann::json hello;
    Channel ch = accept_client(o, "dpdk", hello);
    Options so = o;
    so.window = hello.at("window").get<int>();
    so.credits = hello.value("credits", so.credits);
    so.segment_bytes = hello.at("segment_bytes").get<std::uint32_t>();
    const auto peer_session = hello.at("session").get<std::uint32_t>();
    std::uint8_t peer_mac[6];
    dpdk::parse_mac(hello.at("mac").get<std::string>(), peer_mac);
    ch.send({{"mac", port.mac_string()}, {"rx_ring", port.rx_ring()}});
    port.wait_link(o.link_timeout_s);
    const Channel* chp = &ch;
    dpdk::Transport t(port, peer_mac, transport_options(so, peer_session, true, hello.value("rx_ring", 0)),
                      [chp] { return chp->peer_alive(); });
    DpdkEndpoint ep(t, clock, endpoint_options(so, peer_session, so.segment_bytes, true, kEthernetLossTimeout));
    methods::serve(ep);
    ch.send({{"bye", true}});
    std::fprintf(stderr, "logpbench server: client done\n");
    return;
  }

  // client
  doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", "set on the server"}};
  dpdk::Port port(port_options(o, eal_args(o, o.cpu, {})));
  Channel ch = Channel::connect_to(o.host, o.port, o.connect_timeout_s);
  ch.send({{"transport", "dpdk"}, {"window", o.window}, {"credits", o.credits}, {"segment_bytes", o.segment_bytes}, {"session", session},
           {"mac", port.mac_string()}, {"rx_ring", port.rx_ring()}});
  std::uint8_t peer_mac[6];
  const auto their = ch.receive(o.connect_timeout_s);
  dpdk::parse_mac(their.at("mac").get<std::string>(), peer_mac);
  port.wait_link(o.link_timeout_s);
  const Channel* chp = &ch;
  dpdk::Transport t(port, peer_mac, transport_options(o, session, false, their.value("rx_ring", 0)),
                    [chp] { return chp->peer_alive(); });
  run_on(t, o, clock, doc, progress, session);
  ch.receive(o.timeout_s);  // the server's goodbye: it has read the quit
}

}  // namespace logpb::app
