// --transport shm: `local` forks the peer onto --peer-cpu; `server`/`client` meet over the TCP bootstrap
// and share a named region in /dev/shm (so both must run on one host).
#include <sched.h>
#include <unistd.h>

#include <cstdio>

#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "common/shm_transport.hpp"

namespace logpb::app {

void check_cpu(int cpu, const char* what) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) return;
  std::string have;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &allowed)) have += (have.empty() ? "" : ",") + std::to_string(i);
  throw UsageError(std::string(what) + " " + std::to_string(cpu) + ": cannot run there (cores allowed: " + have + ")");
}

void pin_to_cpu(int cpu, const char* what) {
  check_cpu(cpu, what);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::runtime_error(std::string("sched_setaffinity to core ") + std::to_string(cpu) + " failed (" + what + ")");
}

namespace {

using ShmEndpoint = am::Endpoint<ShmTransport>;

}  // namespace

void run_shm(const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress) {
  const ShmOptions so{o.ring, o.segment_bytes};
  if (o.mode == "local") {
    check_cpu(o.cpu, "--cpu");  // before the fork, so a bad core is one clear error, not a silent peer
    check_cpu(o.peer_cpu, "--peer-cpu");
    const std::uint32_t session = new_session();
    ShmRegion region = ShmRegion::create_anonymous(so);  // before the fork: both processes map it
    LocalPeer peer("peer", [&](Channel&) {
      pin_to_cpu(o.peer_cpu, "--peer-cpu");
      ShmTransport t(region, 1, clock, o.emulation);
      ShmEndpoint ep(t, clock, endpoint_options(o, session, t.segment().size(), true));
      methods::serve(ep);
    });
    pin_to_cpu(o.cpu, "--cpu");
    doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", o.peer_cpu}};
    peer.run([&] {
      ShmTransport t(region, 0, clock, o.emulation);
      ShmEndpoint ep(t, clock, endpoint_options(o, session, t.segment().size(), false));
      run_connected(ep, o, clock, doc, progress, session);
      peer.finish(o.timeout_s);
    });
    return;
  }

  if (o.mode == "server") {
    pin_to_cpu(o.cpu, "--cpu");
    nlohmann::json hello;
    Channel ch = accept_client(o, "shm", hello);
    Options so2 = o;
    so2.window = hello.at("window").get<int>();
    so2.credits = hello.value("credits", so2.credits);
    const std::string spec = hello.value("emulate", "");
    so2.emulation = spec.empty() ? Emulation{} : parse_emulation(spec);
    const ShmOptions ring{hello.at("ring").get<int>(), hello.at("segment_bytes").get<std::uint32_t>()};
    const auto session = hello.at("session").get<std::uint32_t>();
    const std::string name = "/logpbench." + std::to_string(getpid()) + "." + std::to_string(session);
    ShmRegion region = ShmRegion::create_named(name, ring);
    ch.send({{"shm", name}, {"pid", getpid()}});
    ShmTransport t(region, 1, clock, so2.emulation, o.connect_timeout_s);
    region.unlink();
    ShmEndpoint ep(t, clock, endpoint_options(so2, session, t.segment().size(), true));
    methods::serve(ep);
    ch.send({{"bye", true}});
    std::fprintf(stderr, "logpbench server: client done\n");
    return;
  }

  // client
  pin_to_cpu(o.cpu, "--cpu");
  doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", "set on the server"}};
  Channel ch = Channel::connect_to(o.host, o.port, o.connect_timeout_s);
  const std::uint32_t session = new_session();
  ch.send({{"transport", "shm"}, {"window", o.window}, {"credits", o.credits}, {"emulate", o.emulate_spec}, {"ring", o.ring},
           {"segment_bytes", o.segment_bytes}, {"session", session}});
  const auto answer = ch.receive(o.connect_timeout_s);
  ShmRegion region = ShmRegion::open_named(answer.at("shm").get<std::string>());
  ShmTransport t(region, 0, clock, o.emulation, o.connect_timeout_s);
  ShmEndpoint ep(t, clock, endpoint_options(o, session, t.segment().size(), false));
  run_connected(ep, o, clock, doc, progress, session);
  ch.receive(o.timeout_s);  // the server's goodbye: it has read the quit
}

}  // namespace logpb::app
