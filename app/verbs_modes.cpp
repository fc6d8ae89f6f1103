// --transport verbs. `local -d DEV` runs both ends on one device (loopback, as perftest allows): the
// peer is forked, and the two exchange QP addresses over a socketpair; `server`/`client HOST` exchange
// them over the TCP bootstrap. Both sides post their receives and say "ready" before anything is sent.
// --event picks verbs::EventTransport (the AM layer may sleep in its idle_wait); busy polling keeps
// verbs::Transport, which has no idle_wait, so its waiting loops never read the clock per empty poll.
#include <cstdio>

#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "verbs/connect.hpp"
#include "verbs/transport.hpp"

namespace logpb::app {
namespace {

verbs::DeviceOptions device_options(const Options& o, bool remote_read, std::uint32_t segment_bytes) {
  verbs::DeviceOptions d;
  d.device = o.ib_dev;
  d.port = o.ib_port;
  d.gid_index = o.gid_index;
  d.segment_bytes = segment_bytes;
  d.remote_read = remote_read;
  d.sq_depth = o.sq_depth;
  d.rq_depth = o.rq_depth;
  d.recv_batch = o.recv_batch;
  d.inline_bytes = o.inline_bytes;
  d.mtu = o.ib_mtu;
  d.events = o.event_mode;
  d.ud = o.ud;
  return d;
}

verbs::TransportOptions transport_options(const Options& o) {
  verbs::TransportOptions t;
  t.signal_every = o.signal_every;
  return t;
}

// UD may drop datagrams: re-measure after 50 ms of silence. RC retransmits, so it never loses one.
double loss_timeout(const Options& o) { return o.ud ? 0.05 : 0; }

bool needs_get(const Options& o) { return o.bench == "verify" || o.bench == "bulk"; }

// A pair over the bootstrap channel (client rank 0, server rank 1): the verbs connect step with the
// channel as its address exchange, then the ready handshake. (Interim: the Job runner's Ranks replace it.)
template <class T>
std::unique_ptr<T> connect(int rank, const verbs::DeviceOptions& d, Channel& ch, const Options& o, double timeout) {
  auto q = verbs::connect_qps(d, rank, 2, [&](const nlohmann::json& mine) {
    ch.send({{"verbs_address", mine}});
    nlohmann::json all = nlohmann::json::array({nullptr, nullptr});
    all[static_cast<std::size_t>(rank)] = mine;
    all[static_cast<std::size_t>(1 - rank)] = ch.receive(timeout).at("verbs_address");
    return all;
  });
  const Channel* chp = &ch;
  auto t = std::make_unique<T>(std::move(q.context), std::move(q.peers), transport_options(o),
                               [chp] { return chp->peer_alive(); });
  ch.send({{"ready", true}});
  ch.receive(timeout);
  return t;
}

template <class T>
void run_on(T& t, const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress, std::uint32_t session) {
  am::Endpoint<T> ep(t, clock, endpoint_options(o, session, t.segment().size(), false, loss_timeout(o)));
  doc.j["meta"]["numa_placement"] = numa_placement(o.cpu, t.context().numa_node());
  run_connected(ep, o, clock, doc, progress, session);
}

template <class T>
void run_verbs_as(const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress) {
  const std::uint32_t session = new_session();
  if (o.mode == "local") {
    check_cpu(o.cpu, "--cpu");
    check_cpu(o.peer_cpu, "--peer-cpu");
    LocalPeer peer("verbs peer", [&](Channel& ch) {
      pin_to_cpu(o.peer_cpu, "--peer-cpu");
      auto t = connect<T>(1, device_options(o, needs_get(o), o.segment_bytes), ch, o, o.connect_timeout_s);
      am::Endpoint<T> ep(*t, clock, endpoint_options(o, session, o.segment_bytes, true, loss_timeout(o)));
      methods::serve(ep);
    });
    pin_to_cpu(o.cpu, "--cpu");
    doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", o.peer_cpu}};
    peer.run([&] {
      auto t = connect<T>(0, device_options(o, false, o.segment_bytes), peer.channel(), o, o.connect_timeout_s);
      run_on(*t, o, clock, doc, progress, session);
      peer.finish(o.timeout_s);
    });
    return;
  }

  if (o.mode == "server") {
    pin_to_cpu(o.cpu, "--cpu");
    nlohmann::json hello;
    Channel ch = accept_client(o, "verbs", hello);
    Options so = o;
    so.window = hello.at("window").get<int>();
    so.credits = hello.value("credits", so.credits);
    const auto segment = hello.at("segment_bytes").get<std::uint32_t>();
    const auto peer_session = hello.at("session").get<std::uint32_t>();
    so.ud = hello.value("ud", false);
    auto t = connect<T>(1, device_options(so, hello.value("remote_read", false), segment), ch, so, o.connect_timeout_s);
    am::Endpoint<T> ep(*t, clock, endpoint_options(so, peer_session, segment, true, loss_timeout(so)));
    methods::serve(ep);
    ch.send({{"bye", true}});
    std::fprintf(stderr, "logpbench server: client done\n");
    return;
  }

  pin_to_cpu(o.cpu, "--cpu");
  doc.j["meta"]["pinning"] = {{"client_cpu", o.cpu}, {"server_cpu", "set on the server"}};
  Channel ch = Channel::connect_to(o.host, o.port, o.connect_timeout_s);
  ch.send({{"transport", "verbs"}, {"window", o.window}, {"credits", o.credits}, {"segment_bytes", o.segment_bytes}, {"session", session},
           {"remote_read", needs_get(o)}, {"ud", o.ud}});
  auto t = connect<T>(0, device_options(o, false, o.segment_bytes), ch, o, o.connect_timeout_s);
  run_on(*t, o, clock, doc, progress, session);
  ch.receive(o.timeout_s);
}

}  // namespace

void run_verbs(const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress) {
  if (o.event_mode) run_verbs_as<verbs::EventTransport>(o, clock, doc, progress);
  else run_verbs_as<verbs::Transport>(o, clock, doc, progress);
}

}  // namespace logpb::app
