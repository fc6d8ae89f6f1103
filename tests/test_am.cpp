// The AM layer over the real shm transport: a pair in this process (the server on a thread), and jobs
// of several ranks as forked processes joined by the connect step (shm/connect.hpp).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <numeric>
#include <thread>

#include "common/am.hpp"
#include "methods/protocol.hpp"
#include "common/ranks.hpp"
#include "shm/connect.hpp"

using namespace logpb;
using Shm = shm::ShmTransport<shm::Wire>;
using EP = am::Endpoint<Shm>;

namespace {

const Clock& test_clock() {
  static const Clock c;
  return c;
}

struct Pair {
  shm::ShmRegion region = shm::ShmRegion::create_anonymous(2, {64, 1 << 16});
  std::unique_ptr<Shm> a, b;
  Pair() {
    auto fb = std::async(std::launch::async, [&] {
      return std::make_unique<Shm>(region, 1, test_clock(), shm::Emulation{}, shm::ShmOptions{}, 5);
    });
    a = std::make_unique<Shm>(region, 0, test_clock(), shm::Emulation{}, shm::ShmOptions{}, 5);
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
  f.src = 5;  // no such rank in a job of two: the transport drops it (rank 1's ring carried it)
  send(f);
  f = good;
  f.src = 0;  // from itself: only a get's local completion may be; dropped by the transport as well
  f.kind = am::Kind::request;
  f.handler = methods::kEcho;
  send(f);
  send(good);  // a reply nobody asked for

  for (int i = 0; i < 11; ++i) CHECK(client.poll() == 1);
  CHECK(p.a->forged_src() == 2);
  const auto c = client.counters();
  using am::Reject;
  CHECK(c.rejected[int(Reject::bad_magic)] == 1);
  CHECK(c.rejected[int(Reject::bad_version)] == 1);
  CHECK(c.rejected[int(Reject::foreign_session)] == 1);
  CHECK(c.rejected[int(Reject::bad_handler)] == 2);
  CHECK(c.rejected[int(Reject::bad_kind)] == 1);
  CHECK(c.rejected[int(Reject::bad_bulk)] == 2);
  CHECK(c.rejected[int(Reject::bad_rank)] == 0);  // never reaches the endpoint over shm
  CHECK(c.rejected[int(Reject::unexpected_reply)] == 1);
  CHECK(st.acks == 0);
  CHECK(c.received == 0);

  // The transport routes on f.dst: a frame for itself or for a rank outside the region has no ring.
  f = good;
  f.dst = 1;
  CHECK_THROWS_AS(p.b->try_send(f), std::logic_error);
  f.dst = 7;
  CHECK_THROWS_AS(p.b->try_send(f), std::logic_error);
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

// ---- jobs of several ranks: forked processes, the connect step, every rank talking to every other ----

namespace {

enum : std::uint16_t { kJobEcho = 10, kJobAck, kJobStore, kJobStoreAck, kJobGot, kJobOneway, kJobDone };
constexpr int kJobRanks = 4;
constexpr int kEchoes = 200, kOneways = 300;
constexpr std::uint32_t kStoreBytes = 3000, kGetBytes = 4096;
constexpr std::uint32_t kStoreBase = 16384, kGetBase = 32768;  // where peers' stores / our gets land, 4 KiB per rank

std::uint8_t store_byte(int from, int to, std::uint32_t i) { return static_cast<std::uint8_t>(from * 31 + to * 7 + i); }
std::uint8_t own_byte(int rank, std::uint32_t i) { return static_cast<std::uint8_t>(rank * 13 + i * 5); }

// What one rank saw, by peer: replies that came back to the right requester from the right replier,
// stores that landed intact, gets that read the right rank's bytes, one-way requests in order.
struct JobState {
  int me = 0;
  std::vector<int> acks, wrong, store_ok, got_ok, oneways, oneway_order_bad, done;
  explicit JobState(int me_, int n)
      : me(me_), acks(n), wrong(n), store_ok(n), got_ok(n), oneways(n), oneway_order_bad(n), done(n) {}
};

template <class T>
nlohmann::json exchange(Ranks& ranks, T& t) {
  using JEP = am::Endpoint<T>;
  const int me = ranks.rank(), n = ranks.size();
  am::EndpointOptions o = opts(77, 8, 30, me);
  o.size = n;
  JEP ep(t, test_clock(), o);
  JobState st(me, n);
  ep.user = &st;
  auto S = [](JEP& e) -> JobState& { return *static_cast<JobState*>(e.user); };
  ep.on(kJobEcho, [](JEP& e, const am::Frame& f) { e.reply(f, kJobAck, e.rank(), f.src, f.args[2]); });
  ep.on(kJobAck, [](JEP& e, const am::Frame& f) {
    auto& s = *static_cast<JobState*>(e.user);
    (f.args[0] == f.src && f.args[1] == static_cast<std::uint64_t>(s.me) ? s.acks : s.wrong)[f.src]++;
  });
  ep.on(kJobStore, [](JEP& e, const am::Frame& f) {
    const auto seg = e.transport().segment();
    bool ok = f.bulk_len == kStoreBytes && f.bulk_off == kStoreBase + f.src * 4096u;
    for (std::uint32_t i = 0; ok && i < f.bulk_len; ++i)
      ok = std::to_integer<std::uint8_t>(seg[f.bulk_off + i]) == store_byte(f.src, e.rank(), i);
    e.reply(f, kJobStoreAck, ok);
  });
  ep.on(kJobStoreAck,
        [](JEP& e, const am::Frame& f) { static_cast<JobState*>(e.user)->store_ok[f.src] += f.args[0] == 1; });
  ep.on(kJobGot, [](JEP& e, const am::Frame& f) {
    const auto seg = e.transport().segment();
    bool ok = f.bulk_off == kGetBase + f.src * 4096u && f.bulk_len == kGetBytes;
    for (std::uint32_t i = 0; ok && i < kGetBytes; ++i)
      ok = std::to_integer<std::uint8_t>(seg[f.bulk_off + i]) == own_byte(f.src, i);
    static_cast<JobState*>(e.user)->got_ok[f.src] += ok;
  });
  ep.on(kJobOneway, [](JEP& e, const am::Frame& f) {
    auto& s = *static_cast<JobState*>(e.user);
    if (f.args[0] != static_cast<std::uint64_t>(s.oneways[f.src])) ++s.oneway_order_bad[f.src];  // in order per sender
    ++s.oneways[f.src];
  });
  ep.on(kJobDone, [](JEP& e, const am::Frame& f) { ++static_cast<JobState*>(e.user)->done[f.src]; });

  // Our own bytes, for the others' gets, in place before anyone reads them.
  auto seg = t.segment();
  for (std::uint32_t i = 0; i < kGetBytes; ++i) seg[i] = std::byte{own_byte(me, i)};
  ranks.barrier();

  std::vector<int> peers;
  for (int p = 0; p < n; ++p)
    if (p != me) peers.push_back(p);
  for (int i = 0; i < kEchoes; ++i)
    for (int p : peers) ep.request(p, kJobEcho, 0, 0, static_cast<std::uint64_t>(i));
  std::vector<std::uint8_t> data(kStoreBytes);
  for (int p : peers) {
    for (std::uint32_t i = 0; i < kStoreBytes; ++i) data[i] = store_byte(me, p, i);
    ep.store(p, kJobStore, data.data(), kStoreBytes, kStoreBase + static_cast<std::uint32_t>(me) * 4096);
  }
  for (int p : peers) ep.get(p, kJobGot, 0, kGetBytes, kGetBase + static_cast<std::uint32_t>(p) * 4096);
  for (int i = 0; i < kOneways; ++i)
    for (int p : peers) ep.oneway(p, kJobOneway, static_cast<std::uint64_t>(i));
  REQUIRE(ep.wait_all());
  for (int p : peers) ep.oneway(p, kJobDone);
  // Done once every peer is: it needs nothing more from us (its requests are answered, its gets copied).
  ep.wait_until([&] {
    for (int p : peers)
      if (S(ep).done[p] == 0) return false;
    return true;
  });
  nlohmann::json per_peer = nlohmann::json::object();
  for (int p : peers) {
    const auto& c = ep.counters(p);
    per_peer[std::to_string(p)] = {{"acks", st.acks[p]},
                                   {"wrong", st.wrong[p]},
                                   {"store_ok", st.store_ok[p]},
                                   {"got_ok", st.got_ok[p]},
                                   {"oneways", st.oneways[p]},
                                   {"order_bad", st.oneway_order_bad[p]},
                                   {"requests_sent", c.requests_sent},
                                   {"replies_sent", c.replies_sent},
                                   {"received", c.received},
                                   {"oneway_sent", c.oneway_sent},
                                   {"oneway_received", c.oneway_received},
                                   {"rejected", c.rejected_total()}};
  }
  return {{"rank", me}, {"peers", per_peer}, {"transport", t.describe()}};
}

// Rank 0 (this process) reaps the forked ranks and returns their exit codes (-1: a signal).
std::vector<int> reap(const Ranks& ranks) {
  std::vector<int> codes;
  for (pid_t pid : ranks.child_pids()) {
    int st = 0;
    waitpid(pid, &st, 0);
    codes.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  return codes;
}

}  // namespace

TEST_CASE("four ranks: every rank requests, stores, gets and sends one-way to every other") {
  std::fflush(nullptr);
  Ranks ranks = Ranks::local(kJobRanks, 60);
  shm::ShmOptions so{64, 1 << 16};
  so.yield_when_idle = true;  // four busy ranks on fewer cores
  nlohmann::json all;
  if (ranks.rank() != 0) {
    int code = 0;
    try {
      shm::connect_shm(ranks, so, test_clock(), shm::Emulation{},
                       [&](auto& t) { ranks.allgather(exchange(ranks, t)); });
      ranks.barrier();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", ranks.rank(), e.what());
      code = 1;
    }
    _exit(code);
  }
  shm::connect_shm(ranks, so, test_clock(), shm::Emulation{},
                   [&](auto& t) { all = ranks.allgather(exchange(ranks, t)); });
  ranks.barrier();
  CHECK(reap(ranks) == std::vector<int>(kJobRanks - 1, 0));
  REQUIRE(all.size() == kJobRanks);
  for (int r = 0; r < kJobRanks; ++r) {
    INFO("rank " << r << ": " << all[r]["peers"].dump());
    CHECK(all[r]["transport"]["ranks"] == kJobRanks);
    CHECK(all[r]["transport"]["yield_when_idle"] == true);
    CHECK(all[r]["peers"].size() == kJobRanks - 1);
    for (int p = 0; p < kJobRanks; ++p) {
      if (p == r) continue;
      const auto& c = all[r]["peers"][std::to_string(p)];
      CHECK(c["acks"] == kEchoes);  // every reply came back to this requester, from the rank asked
      CHECK(c["wrong"] == 0);
      CHECK(c["store_ok"] == 1);
      CHECK(c["got_ok"] == 1);
      CHECK(c["oneways"] == kOneways);
      CHECK(c["order_bad"] == 0);
      CHECK(c["requests_sent"] == kEchoes + 2);  // echoes, a store, a get
      CHECK(c["replies_sent"] == kEchoes + 1);   // echoes and the store; a get needs no CPU on p
      CHECK(c["oneway_sent"] == kOneways + 1);   // and the done
      CHECK(c["oneway_received"] == kOneways + 1);
      // In: its echoes and store, our replies (echo acks, store ack, the get's completion), its one-ways.
      CHECK(c["received"] == (kEchoes + 1) + (kEchoes + 2) + (kOneways + 1));
      CHECK(c["rejected"] == 0);
    }
  }
}

TEST_CASE("a rank that dies is seen by every other rank, and a wait on it ends in PeerError") {
  std::fflush(nullptr);
  Ranks ranks = Ranks::local(3, 60);
  auto watch = [&](auto& t) {
    using JEP = am::Endpoint<std::decay_t<decltype(t)>>;
    ranks.barrier();                  // everyone is connected
    if (ranks.rank() == 2) _exit(0);  // rank 2 goes, without a word
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (t.peer_alive() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (t.peer_alive()) throw std::runtime_error("rank 2's death went unseen");
    am::EndpointOptions o = opts(5, 2, 30, ranks.rank());
    o.size = 3;
    JEP ep(t, test_clock(), o);
    ep.request(2, methods::kEcho);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      ep.wait_all();
    } catch (const PeerError&) {
      if (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        return;  // the liveness check, not the stall timeout
    }
    throw std::runtime_error("waiting on the dead rank did not end at once in PeerError");
  };
  shm::ShmOptions so{64, 1 << 16};
  if (ranks.rank() != 0) {
    int code = 0;
    try {
      shm::connect_shm(ranks, so, test_clock(), shm::Emulation{}, watch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", ranks.rank(), e.what());
      code = 1;
    }
    _exit(code);
  }
  CHECK_NOTHROW(shm::connect_shm(ranks, so, test_clock(), shm::Emulation{}, watch));
  CHECK(reap(ranks) == std::vector<int>{0, 0});
}

TEST_CASE("the connect step builds the emulated NI when asked, and refuses a job it cannot shape") {
  std::fflush(nullptr);
  Ranks ranks = Ranks::local(2, 60);
  const shm::Emulation emu = shm::parse_emulation("os=100ns,g=200ns");
  bool emulated = false, connected = false, refused = false;
  try {
    shm::connect_shm(ranks, shm::ShmOptions{64, 1 << 16}, test_clock(), emu, [&](auto& t) {
      emulated = std::decay_t<decltype(t)>::ni_emulated;
      ranks.barrier();
    });
    connected = true;
    // A ring that is not a power of two: rank 0 cannot create the region, and every rank hears why.
    shm::connect_shm(ranks, shm::ShmOptions{100, 1 << 16}, test_clock(), shm::Emulation{}, [](auto&) {});
  } catch (const UsageError& e) {
    refused = std::string(e.what()).find("power of two") != std::string::npos;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", ranks.rank(), e.what());
  }
  if (ranks.rank() != 0) _exit(connected && emulated && refused ? 0 : 1);
  CHECK(connected);
  CHECK(emulated);
  CHECK(refused);
  CHECK(reap(ranks) == std::vector<int>{0});
}
