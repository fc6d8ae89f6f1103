// --transport verbs. `local -d DEV` runs both ends on one device (loopback, as perftest allows): the
// peer is forked, and the two exchange QP addresses over a socketpair; `server`/`client HOST` exchange
// them over the TCP bootstrap. Both sides post their receives and say "ready" before anything is sent.
#include <numa.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <random>

#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "verbs/device.hpp"
#include "verbs/transport.hpp"

namespace logpb::app {
namespace {

using VerbsEndpoint = am::Endpoint<verbs::Transport>;

verbs::DeviceOptions device_options(const Options& o, bool remote_read, std::uint32_t segment_bytes) {
  verbs::DeviceOptions d;
  d.device = o.ib_dev;
  d.port = o.ib_port;
  d.gid_index = o.gid_index;
  d.segment_bytes = segment_bytes;
  d.remote_read = remote_read;
  d.sq_depth = o.sq_depth;
  d.rq_depth = o.rq_depth;
  d.inline_bytes = o.inline_bytes;
  d.mtu = o.ib_mtu;
  d.events = o.event_mode;
  return d;
}

verbs::TransportOptions transport_options(const Options& o) {
  verbs::TransportOptions t;
  t.signal_every = o.signal_every;
  t.recv_batch = o.recv_batch;
  return t;
}

am::EndpointOptions endpoint_options(const Options& o, std::uint32_t session, std::uint32_t segment, bool server) {
  am::EndpointOptions e;
  e.session = session;
  e.window = o.window;
  e.stall_timeout_s = server ? 0 : o.timeout_s;
  e.segment_bytes = segment;
  return e;
}

std::uint32_t new_session() {
  std::random_device rd;
  std::uint32_t s = 0;
  while (s == 0) s = rd();
  return s;
}

bool needs_get(const Options& o) { return o.bench == "verify"; }

nlohmann::json placement(int cpu, int nic_node) {
  const int cpu_node = numa_available() >= 0 ? numa_node_of_cpu(cpu) : -1;
  if (nic_node >= 0 && cpu_node >= 0 && cpu_node != nic_node)
    std::fprintf(stderr, "logpbench: warning: core %d is on NUMA node %d, the RDMA device on node %d: choose a core of "
                         "node %d with --cpu\n", cpu, cpu_node, nic_node, nic_node);
  return {{"cpu", cpu}, {"cpu_numa_node", cpu_node}, {"nic_numa_node", nic_node},
          {"local", nic_node < 0 || cpu_node == nic_node}};
}

// Address exchange and the ready handshake, the same on both sides of every mode.
std::unique_ptr<verbs::Transport> connect(verbs::Device& dev, Channel& ch, const Options& o, double timeout) {
  ch.send({{"verbs_address", to_json(dev.local_address())}});
  const auto peer = verbs::address_from_json(ch.receive(timeout).at("verbs_address"));
  dev.connect(peer);
  const Channel* chp = &ch;
  auto t = std::make_unique<verbs::Transport>(dev, peer, transport_options(o), [chp] { return chp->peer_alive(); });
  ch.send({{"ready", true}});
  ch.receive(timeout);
  return t;
}

[[noreturn]] void local_peer(const Options& o, const Clock& clock, Channel ch, std::uint32_t session) {
  int code = 0;
  try {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    pin_to_cpu(o.peer_cpu, "--peer-cpu");
    verbs::Device dev(device_options(o, needs_get(o), o.segment_bytes));
    auto t = connect(dev, ch, o, o.connect_timeout_s);
    VerbsEndpoint ep(*t, clock, endpoint_options(o, session, o.segment_bytes, true));
    methods::serve(ep);
  } catch (const Interrupted&) {
    code = 130;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logpbench (verbs peer): %s\n", e.what());
    code = dynamic_cast<const PeerError*>(&e) ? 3 : (dynamic_cast<const UsageError*>(&e) ? 2 : 1);
  }
  std::fflush(stderr);
  _exit(code);
}

void run_on(verbs::Transport& t, const verbs::Device& dev, const Options& o, const Clock& clock, ResultsDoc& doc,
            Progress& progress, std::uint32_t session) {
  VerbsEndpoint ep(t, clock, endpoint_options(o, session, static_cast<std::uint32_t>(t.segment().size()), false));
  doc.j["meta"]["transport"] = t.describe();
  doc.j["meta"]["session"] = session;
  doc.j["meta"]["am"] = {{"window", o.window}, {"frame_bytes", sizeof(am::Frame)}};
  doc.j["meta"]["numa_placement"] = placement(o.cpu, dev.numa_node());
  doc.save();
  struct Describe {
    const verbs::Transport& t;
    ResultsDoc& doc;
    ~Describe() { doc.j["meta"]["transport"] = t.describe(); }
  } describe{t, doc};
  run_client_bench(ep, clock, o, doc, progress);
  ep.request(methods::kQuit);
}

}  // namespace

void run_verbs(const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress) {
  const std::uint32_t session = new_session();
  if (o.mode == "local") {
    check_cpu(o.cpu, "--cpu");
    check_cpu(o.peer_cpu, "--peer-cpu");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair failed");
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
      ::close(sv[0]);
      local_peer(o, clock, Channel::adopt(sv[1]), session);
    }
    ::close(sv[1]);
    struct Reaper {
      pid_t pid;
      bool reaped = false;
      ~Reaper() {
        if (!reaped) {
          kill(pid, SIGTERM);
          waitpid(pid, nullptr, 0);
        }
      }
    } reaper{child};
    Channel ch = Channel::adopt(sv[0]);
    pin_to_cpu(o.cpu, "--cpu");
    doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", o.peer_cpu}};
    try {
      verbs::Device dev(device_options(o, false, o.segment_bytes));
      auto t = connect(dev, ch, o, o.connect_timeout_s);
      run_on(*t, dev, o, clock, doc, progress, session);
    } catch (const PeerError&) {
      int status = 0;
      pid_t r = 0;
      for (int i = 0; i < 100 && (r = waitpid(child, &status, WNOHANG)) == 0; ++i) usleep(10000);
      reaper.reaped = r == child;
      if (r == child && WIFEXITED(status) && WEXITSTATUS(status) == 2)
        throw UsageError("the verbs peer process refused its configuration (its message is above)");
      throw;
    }
    int status = 0;
    waitpid(child, &status, 0);
    reaper.reaped = true;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw PeerError("the local verbs peer ended abnormally (status " + std::to_string(status) + ")");
    return;
  }

  if (o.mode == "server") {
    pin_to_cpu(o.cpu, "--cpu");
    std::fprintf(stderr, "logpbench server: verbs, waiting for a client on TCP port %u\n", o.port);
    Channel ch = Channel::accept_one(o.port, 0);
    const auto hello = ch.receive(o.connect_timeout_s);
    if (hello.value("transport", "") != "verbs")
      throw PeerError("the client asked for transport '" + hello.value("transport", "?") + "', this server runs verbs");
    Options so = o;
    so.window = hello.at("window").get<int>();
    const auto segment = hello.at("segment_bytes").get<std::uint32_t>();
    const auto peer_session = hello.at("session").get<std::uint32_t>();
    verbs::Device dev(device_options(so, hello.value("remote_read", false), segment));
    auto t = connect(dev, ch, so, o.connect_timeout_s);
    VerbsEndpoint ep(*t, clock, endpoint_options(so, peer_session, segment, true));
    methods::serve(ep);
    ch.send({{"bye", true}});
    std::fprintf(stderr, "logpbench server: client done\n");
    return;
  }

  pin_to_cpu(o.cpu, "--cpu");
  doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", "set on the server"}};
  Channel ch = Channel::connect_to(o.host, o.port, o.connect_timeout_s);
  ch.send({{"transport", "verbs"}, {"window", o.window}, {"segment_bytes", o.segment_bytes}, {"session", session},
           {"remote_read", needs_get(o)}});
  verbs::Device dev(device_options(o, false, o.segment_bytes));
  auto t = connect(dev, ch, o, o.connect_timeout_s);
  run_on(*t, dev, o, clock, doc, progress, session);
  ch.receive(o.timeout_s);
}

}  // namespace logpb::app
