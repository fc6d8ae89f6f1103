// The AM layer over the real shm transport, both sides in this process (the server on a thread).
#include <catch2/catch.hpp>

#include <cstring>
#include <future>
#include <memory>
#include <numeric>
#include <thread>

#include "common/am.hpp"
#include "common/methods/protocol.hpp"
#include "common/shm_transport.hpp"

using namespace logpb;
using EP = am::Endpoint<ShmTransport>;

namespace {

const Clock& test_clock() {
  static const Clock c;
  return c;
}

struct Pair {
  ShmRegion region = ShmRegion::create_anonymous({64, 1 << 16});
  std::unique_ptr<ShmTransport> a, b;
  explicit Pair(const Emulation& emu = {}) {
    auto fb = std::async(std::launch::async, [&] { return std::make_unique<ShmTransport>(region, 1, test_clock(), emu, 5); });
    a = std::make_unique<ShmTransport>(region, 0, test_clock(), emu, 5);
    b = fb.get();
  }
};

am::EndpointOptions opts(std::uint32_t session, int window = 8, double timeout = 5, int rank = 0) {
  am::EndpointOptions o;
  o.session = session;
  o.rank = rank;
  o.size = 2;
  o.window = window;
  o.stall_timeout_s = timeout;
  o.segment_bytes = 1 << 16;
  return o;
}

enum : std::uint16_t { kStored = 5, kGot = 6 };

}  // namespace

TEST_CASE("request and reply carry four words both ways") {
  Pair p;
  EP client(*p.a, test_clock(), opts(42));
  EP server(*p.b, test_clock(), opts(42, 8, 5, 1));
  methods::ClientState st;
  methods::install_client(client, st);
  std::thread srv([&] { methods::serve(server); });
  client.request(1, methods::kEcho, 1, 2, 3, 0xdeadbeefcafef00dull);
  client.wait_until([&] { return st.acks == 1; });
  CHECK(st.last_args[0] == 1);
  CHECK(st.last_args[3] == 0xdeadbeefcafef00dull);
  for (int i = 0; i < 1000; ++i) client.request(1, methods::kEcho, i);
  client.wait_all();
  CHECK(st.acks == 1001);
  CHECK(client.outstanding(1) == 0);
  client.request(1, methods::kQuit);
  srv.join();
  CHECK(server.counters().replies_sent == 1001);
  CHECK(client.counters().rejected_total() == 0);
}

TEST_CASE("malformed and foreign frames are counted and dropped, never dispatched") {
  Pair p;
  EP client(*p.a, test_clock(), opts(7));
  methods::ClientState st;
  methods::install_client(client, st);
  am::Frame good{};
  good.magic = am::kMagic;
  good.version = am::kVersion;
  good.session = 7;
  good.kind = am::Kind::reply;
  good.handler = methods::kAck;
  good.src = 1;
  good.dst = 0;

  auto send = [&](am::Frame f) { REQUIRE(p.b->try_send(f)); };
  am::Frame f = good;
  f.magic = 0x1234;
  send(f);
  f = good;
  f.version = 99;
  send(f);
  f = good;
  f.session = 8;
  send(f);
  f = good;
  f.handler = am::kMaxHandlers + 3;
  send(f);
  f = good;
  f.handler = 17;  // in range, nobody registered it
  send(f);
  f = good;
  f.kind = static_cast<am::Kind>(9);
  f.handler = methods::kEcho;
  client.on(methods::kEcho, [](EP&, const am::Frame&) { FAIL("a frame of unknown kind was dispatched"); });
  send(f);
  f = good;
  f.bulk_len = 100;
  f.bulk_off = (1 << 16) - 10;  // runs past the segment
  send(f);
  f = good;
  f.bulk_len = 0xffffffffu;
  f.bulk_off = 16;  // wraps
  send(f);
  f = good;
  f.src = 5;  // no such rank in a job of two
  send(f);
  f = good;
  f.dst = 1;  // meant for another rank
  send(f);
  f = good;
  f.src = 0;  // from itself: only a get's local completion may be
  f.kind = am::Kind::request;
  f.handler = methods::kEcho;
  send(f);
  send(good);  // a reply nobody asked for

  for (int i = 0; i < 12; ++i) CHECK(client.poll() == 1);
  const auto c = client.counters();
  using am::Reject;
  CHECK(c.rejected[int(Reject::bad_magic)] == 1);
  CHECK(c.rejected[int(Reject::bad_version)] == 1);
  CHECK(c.rejected[int(Reject::foreign_session)] == 1);
  CHECK(c.rejected[int(Reject::bad_handler)] == 2);
  CHECK(c.rejected[int(Reject::bad_kind)] == 1);
  CHECK(c.rejected[int(Reject::bad_bulk)] == 2);
  CHECK(c.rejected[int(Reject::bad_rank)] == 3);
  CHECK(c.rejected[int(Reject::unexpected_reply)] == 1);
  CHECK(st.acks == 0);
  CHECK(c.received == 0);
}

TEST_CASE("bulk store and get move bytes exactly") {
  Pair p;
  EP client(*p.a, test_clock(), opts(9));
  EP server(*p.b, test_clock(), opts(9, 8, 5, 1));
  methods::ClientState st;
  methods::install_client(client, st);
  methods::ServerState ss;
  methods::install_server(server, ss);
  server.on(kStored, [](EP& e, const am::Frame& f) {  // checksum what landed, reply with it
    const auto seg = e.transport().segment();
    std::uint64_t sum = 0;
    for (std::uint32_t i = 0; i < f.bulk_len; ++i) sum = sum * 131 + std::to_integer<std::uint8_t>(seg[f.bulk_off + i]);
    e.reply(f, methods::kAck, sum, f.bulk_len, f.bulk_off);
  });
  std::thread srv([&] { server.wait_until([&] { return ss.quits > 0; }); });

  std::vector<std::uint8_t> data(40000);
  std::iota(data.begin(), data.end(), 0);
  for (auto& x : data) x = static_cast<std::uint8_t>(x * 7 + 3);
  std::uint64_t sum = 0;
  for (auto x : data) sum = sum * 131 + x;
  client.store(1, kStored, data.data(), static_cast<std::uint32_t>(data.size()), 1000);
  client.wait_until([&] { return st.acks == 1; });
  CHECK(st.last_args[0] == sum);
  CHECK(st.last_args[1] == data.size());

  static bool got = false;
  got = false;
  client.on(kGot, [](EP&, const am::Frame&) { got = true; });
  client.get(1, kGot, 1000, static_cast<std::uint32_t>(data.size()), 20000);
  client.wait_until([] { return got; });
  CHECK(std::memcmp(client.transport().segment().data() + 20000, data.data(), data.size()) == 0);
  CHECK(client.outstanding(1) == 0);

  CHECK_THROWS_AS(client.store(1, kStored, data.data(), 100, (1 << 16) - 50), UsageError);
  client.request(1, methods::kQuit);
  srv.join();
}

TEST_CASE("a silent peer ends a full window with PeerError, not a hang") {
  Pair p;
  EP client(*p.a, test_clock(), opts(3, 2, 0.2));
  methods::ClientState st;
  methods::install_client(client, st);
  client.request(1, methods::kEcho);
  client.request(1, methods::kEcho);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(client.request(1, methods::kEcho), PeerError);  // window of 2 is full, nobody replies
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
}
