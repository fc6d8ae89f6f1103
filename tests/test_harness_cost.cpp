// The null NI and the harness-cost measurement built on it (common/harness_cost.hpp).
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/am.hpp"
#include "common/harness_cost.hpp"
#include "common/null_transport.hpp"

using namespace logpb;

namespace {
const Clock& clock_once() {
  static const Clock c;
  return c;
}
using NullEP = am::Endpoint<NullTransport>;
struct Seen {
  int frames = 0;
  std::uint64_t sum = 0;
};
void seen(NullEP& ep, const am::Frame& f) {
  auto* s = static_cast<Seen*>(ep.user);
  ++s->frames;
  s->sum += f.args[0];
}
am::EndpointOptions options() {
  am::EndpointOptions o;
  o.session = 77;
  o.rank = 0;
  o.size = 2;
  o.window = 8;
  o.credits = 16;
  o.stall_timeout_s = 1;
  return o;
}
// An endpoint on the null NI whose handler 3 counts what it sees.
struct Rig {
  NullTransport net;
  NullEP ep{net, clock_once(), options()};
  Seen s;
  Rig() {
    ep.user = &s;
    ep.on(3, seen);
  }
};
}  // namespace

TEST_CASE("the null NI hands requests back as replies the endpoint accepts", "[harness]") {
  Rig r;
  auto& [net, ep, s] = r;
  net.hold(true);
  for (int i = 1; i <= 8; ++i) ep.request(1, 3, static_cast<std::uint64_t>(i));
  CHECK(net.queued() == 8);
  CHECK(ep.poll() == 0);  // held: nothing arrives
  CHECK(ep.outstanding(1) == 8);
  net.hold(false);
  int polled = 0;
  while (int n = ep.poll()) polled += n;
  CHECK(polled == 8);
  CHECK(s.frames == 8);
  CHECK(s.sum == 36);
  CHECK(ep.outstanding(1) == 0);
  const am::Counters c = ep.counters();
  CHECK(c.requests_sent == 8);
  CHECK(c.received == 8);
  CHECK(c.rejected_total() == 0);
}

TEST_CASE("one-way requests and their credits go round the null NI", "[harness]") {
  Rig r;
  auto& [net, ep, s] = r;
  // More than the 16 credits: the sender stalls until the credit frame it asked for comes back, so the
  // round only completes if the endpoint took the null NI's frames as the peer's own.
  for (int i = 0; i < 100; ++i) ep.oneway(1, 3, 1);
  while (ep.poll()) {
  }
  const am::Counters c = ep.counters();
  CHECK(s.frames == 100);
  CHECK(c.oneway_sent == 100);
  CHECK(c.oneway_received == 100);
  CHECK(c.credit_frames > 0);
  CHECK(c.credit_frames == c.credit_frames_sent);
  CHECK(c.rejected_total() == 0);
}

TEST_CASE("a frame through the null NI is validated, not trusted", "[harness]") {
  Rig r;
  auto& [net, ep, s] = r;
  am::Frame f{};
  f.magic = am::kMagic;
  f.version = am::kVersion;
  f.kind = am::Kind::oneway;
  f.session = 78;  // not the endpoint's
  f.src = 0;
  f.dst = 1;
  f.handler = 3;
  REQUIRE(net.try_send(f));
  CHECK(ep.poll() == 1);
  CHECK(s.frames == 0);
  CHECK(ep.counters().rejected[static_cast<int>(am::Reject::foreign_session)] == 1);
}

TEST_CASE("the harness cost is finite and positive, and every frame is accounted for", "[harness]") {
  HarnessCostOptions opt;
  opt.batch = 16;
  opt.batches = 60;
  opt.warmup_batches = 5;
  const HarnessCost h = measure_harness_cost(clock_once(), opt);
  REQUIRE(h.error.empty());
  CHECK(h.frames == 2u * 16u * 65u);
  for (const CostFigure* c : {&h.send, &h.recv, &h.oneway_send, &h.oneway_recv, &h.ni_send, &h.ni_recv}) {
    CHECK(std::isfinite(c->value_ns));
    CHECK(c->value_ns > 0);
    CHECK(std::isfinite(c->ci95_ns));
    CHECK(c->ci95_ns >= 0);
  }
  const nlohmann::json j = harness_cost_json(h);
  CHECK(j.at("send_ns").at("value_ns").get<double>() == h.send.value_ns);
  CHECK(j.at("recv_ns").at("value_ns").get<double>() == h.recv.value_ns);
  CHECK(j.at("batches").get<int>() == 60);
  CHECK(j.at("batch").get<int>() == 16);
  CHECK_FALSE(j.contains("error"));
}

TEST_CASE("the harness cost refuses a batch its null NI cannot hold", "[harness]") {
  HarnessCostOptions opt;
  opt.batch = static_cast<int>(NullTransport::kSlots);
  CHECK_THROWS(measure_harness_cost(clock_once(), opt));
  opt.batch = 0;
  CHECK_THROWS(measure_harness_cost(clock_once(), opt));
}
