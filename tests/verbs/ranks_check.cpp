// A verbs job of N ranks (default 4) on one device, through the connect step (verbs/connect.hpp) over
// Ranks::local: every rank sends to every other rank, interleaved and all at once, small one-way AMs,
// medium and bulk one-way stores (their buffers rewritten as soon as local completion says so), small
// requests, medium and bulk stores (request + reply) and gets, then asks each peer what it received.
// Checked on every rank, per peer: counts and checksums equal what was sent, every request answered,
// every get byte-exact, credits returned by every peer, no frame refused (AM) and no bad_imm, bad_medium
// or bad_src (transport), local completion never ahead of what was posted and complete at the end.
// --kill: the ranks exchange requests until rank 0 kills the last one; every other rank must stop with a
// PeerError within seconds.
//
// usage: verbs_ranks_check DEVICE [--event] [--ranks N] [--messages M] [--kill]
//        exit 0 ok, 1 failure, 77 no device
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/am.hpp"
#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/ranks.hpp"
#include "verbs/connect.hpp"
#include "verbs/transport.hpp"

using namespace logpb;
using Steady = std::chrono::steady_clock;

namespace {

enum : std::uint16_t { kData = 1, kAck = 2, kGot = 3, kFinal = 4, kTotals = 5, kDone = 6 };
constexpr std::uint32_t kKiB = 1024;
constexpr std::uint32_t kPatternBytes = 64 * kKiB;  // [0, 64K): what peers get from us
constexpr std::uint32_t kRegion = 4 * kKiB;         // each inbound message in its own region
constexpr std::uint32_t kRegions = 32;              // per source: more than window + credits in flight
constexpr int kWindow = 8, kCredits = 16;
constexpr int kBuffers = 16;                  // rewritable one-way store sources
constexpr std::uint32_t kStatic = 64 * kKiB;  // static random bytes request-stores are taken from
constexpr std::uint32_t kGetSlots = 16;       // landing regions per peer: more than the window

struct Layout {
  std::uint32_t inbound, buffers, stat, land, total;
  explicit Layout(int n) {
    inbound = kPatternBytes;
    buffers = inbound + static_cast<std::uint32_t>(n) * kRegions * kRegion;
    stat = buffers + kBuffers * kRegion;
    land = stat + kStatic;
    total = land + static_cast<std::uint32_t>(n) * kGetSlots * kRegion;
  }
};

std::uint8_t pattern(int rank, std::uint32_t k) {
  return static_cast<std::uint8_t>(k * 131u + static_cast<unsigned>(rank) * 29u + 7u);
}

std::uint64_t fnv(const std::byte* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::to_integer<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

struct Tally {
  std::uint64_t count = 0, sum = 0;
  bool operator==(const Tally&) const = default;
};

struct State {
  int size = 0;
  std::vector<Tally> rx, tx, peer_rx;  // by rank: what came from it; what we sent it; what it says it got
  std::vector<std::uint64_t> acks, acks_expected, gets_ok, gets_bad, gets_expected;
  int totals = 0, dones = 0;
  explicit State(int n)
      : size(n), rx(n), tx(n), peer_rx(n), acks(n), acks_expected(n), gets_ok(n), gets_bad(n), gets_expected(n) {}
};

struct Args {
  std::string dev;
  bool events = false, kill = false;
  int ranks = 4, messages = 2400;
};

// What one rank sends, and the state its sends need: the segment, the rewritable buffers' last operations,
// the next inbound region and get landing slot per peer, the random source of the buffers' bytes.
struct Sender {
  const Layout& lay;
  std::byte* seg;
  std::uint32_t medium, bulk;
  std::mt19937_64& rng;
  std::vector<std::uint64_t> op;                      // by buffer
  std::vector<std::uint32_t> next_region, next_land;  // by peer
};

template <class EP>
void install_handlers(EP& ep) {
  ep.on(kData, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<State*>(e.user);
    ++s->rx[f.src].count;
    s->rx[f.src].sum += f.bulk_len ? fnv(e.transport().segment().data() + f.bulk_off, f.bulk_len) : f.args[0];
    if (f.kind == am::Kind::request) e.reply(f, kAck);
  });
  ep.on(kAck, [](EP& e, const am::Frame& f) { ++static_cast<State*>(e.user)->acks[f.src]; });
  ep.on(kGot, [](EP& e, const am::Frame& f) {  // a get's completion: the bytes are f.src's pattern
    auto* s = static_cast<State*>(e.user);
    const std::byte* p = e.transport().segment().data() + f.bulk_off;
    bool ok = true;
    for (std::uint32_t k = 0; k < f.bulk_len; ++k)
      ok = ok && std::to_integer<std::uint8_t>(p[k]) == pattern(f.src, static_cast<std::uint32_t>(f.args[0]) + k);
    ++(ok ? s->gets_ok : s->gets_bad)[f.src];
  });
  ep.on(kFinal, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<State*>(e.user);
    e.reply(f, kTotals, s->rx[f.src].count, s->rx[f.src].sum);
  });
  ep.on(kTotals, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<State*>(e.user);
    s->peer_rx[f.src] = {f.args[0], f.args[1]};
    ++s->totals;
  });
  ep.on(kDone, [](EP& e, const am::Frame&) { ++static_cast<State*>(e.user)->dones; });
}

// --kill: requests to everyone until a rank dies; rank 0 kills the last rank after 2 s. Returns the exit code.
template <class EP>
int until_a_rank_dies(EP& ep, Ranks& ranks, const std::vector<int>& peers) {
  const int me = ranks.rank(), n = ranks.size();
  const auto start = Steady::now();
  Steady::time_point killed{};
  std::uint64_t i = 0;
  try {
    for (;; ++i) {
      ep.request(peers[i % peers.size()], kData, i);
      if (me == 0 && killed == Steady::time_point{} && (i & 63) == 0 &&
          Steady::now() - start > std::chrono::seconds(2)) {
        ::kill(ranks.child_pids().back(), SIGKILL);
        killed = Steady::now();
        std::printf("rank 0: killed rank %d after %llu requests\n", n - 1, static_cast<unsigned long long>(i));
        std::fflush(stdout);
      }
    }
  } catch (const PeerError& e) {
    const double took = me == 0 ? std::chrono::duration<double>(Steady::now() - killed).count() : -1;
    std::printf("rank %d: PeerError%s: %s\n", me,
                me == 0 ? (" " + std::to_string(took) + " s after the kill").c_str() : "", e.what());
    std::fflush(stdout);
    return me == 0 ? (killed != Steady::time_point{} && took < 10 ? 3 : 1) : 3;
  }
}

// Message i of the mix to dst: its kind cycles through one-way AM, one-way medium and bulk stores, request,
// request-store and get; sizes alternate medium and bulk.
template <class EP>
void send_one(EP& ep, State& st, Sender& s, int me, int i, int dst, int kind) {
  const Layout& lay = s.lay;
  std::byte* seg = s.seg;
  const std::uint32_t medium = s.medium, bulk = s.bulk;
  const std::uint32_t region =
      lay.inbound + (static_cast<std::uint32_t>(me) * kRegions + s.next_region[dst]++ % kRegions) * kRegion;
  const std::uint32_t size = (i / 6) % 2 ? medium : bulk;
  switch (kind) {
    case 0:
      ep.oneway(dst, kData, static_cast<std::uint64_t>(i), 0, 0, 0, true);
      st.tx[dst].count++, st.tx[dst].sum += static_cast<std::uint64_t>(i);
      break;
    case 1:
    case 2: {
      const int b = i % kBuffers;
      if (s.op[b]) ep.wait_local(s.op[b]);  // the NI is done with it: rewrite it
      std::byte* src = seg + lay.buffers + static_cast<std::uint32_t>(b) * kRegion;
      const std::uint32_t len = kind == 1 ? medium - (i % 7) : bulk + (i % 5);
      for (std::uint32_t k = 0; k < len; ++k) src[k] = static_cast<std::byte>(s.rng());
      s.op[b] = ep.oneway_store(dst, kData, src, len, region, 0, 0, true);
      st.tx[dst].count++, st.tx[dst].sum += fnv(src, len);
      break;
    }
    case 3:
      ep.request(dst, kData, static_cast<std::uint64_t>(i));
      st.tx[dst].count++, st.tx[dst].sum += static_cast<std::uint64_t>(i), st.acks_expected[dst]++;
      break;
    case 4: {
      const std::uint32_t off = static_cast<std::uint32_t>(i * 61) % (kStatic - size);
      ep.store(dst, kData, seg + lay.stat + off, size, region);
      st.tx[dst].count++, st.tx[dst].sum += fnv(seg + lay.stat + off, size), st.acks_expected[dst]++;
      break;
    }
    case 5: {
      const std::uint32_t off = static_cast<std::uint32_t>(i * 37) % (kPatternBytes - size);
      const std::uint32_t land =
          lay.land + (static_cast<std::uint32_t>(dst) * kGetSlots + s.next_land[dst]++ % kGetSlots) * kRegion;
      ep.get(dst, kGot, off, size, land, off);
      st.gets_expected[dst]++;
      break;
    }
  }
}

// Rank `me`'s verdict on what it and its peers counted, in words ("" when every check held).
template <class EP>
std::string verdict(EP& ep, const State& st, const std::vector<int>& peers, bool ok, const nlohmann::json& d) {
  const nlohmann::json& c = d["counters"];
  const auto cnt = [&](const char* k) { return c[k].template get<std::uint64_t>(); };
  std::string why;
  const auto check = [&](bool cond, const std::string& what) {
    if (!cond) why += (why.empty() ? "" : "; ") + what;
  };
  check(ok, "tx_completed ran ahead of tx_posted");
  for (int p : peers) {
    const std::string r = " (peer " + std::to_string(p) + ")";
    check(st.peer_rx[p] == st.tx[p], "peer counted " + std::to_string(st.peer_rx[p].count) + " of " +
                                         std::to_string(st.tx[p].count) +
                                         (st.peer_rx[p].sum == st.tx[p].sum ? "" : ", checksum differs") + r);
    check(st.acks[p] == st.acks_expected[p],
          "acks " + std::to_string(st.acks[p]) + "/" + std::to_string(st.acks_expected[p]) + r);
    check(st.gets_ok[p] == st.gets_expected[p] && st.gets_bad[p] == 0,
          "gets ok " + std::to_string(st.gets_ok[p]) + ", bad " + std::to_string(st.gets_bad[p]) + r);
    check(ep.counters(p).credit_frames > 0, "no credit returned" + r);
    check(ep.counters(p).rejected_total() == 0, "frames refused" + r);
  }
  for (const auto& q : d["per_peer"])
    check(q["ops_posted"].template get<std::uint64_t>() > 0 && q["ops_completed"] == q["ops_posted"],
          "QP of rank " + q["rank"].dump() + ": ops " + q["ops_completed"].dump() + "/" + q["ops_posted"].dump());
  check(cnt("ops_completed") == cnt("ops_posted"),
        "ops completed " + std::to_string(cnt("ops_completed")) + " of " + std::to_string(cnt("ops_posted")));
  check(cnt("bad_imm") == 0 && cnt("bad_medium") == 0 && cnt("bad_src") == 0, "bad_imm/bad_medium/bad_src");
  check(cnt("medium_stores") > 0 && cnt("stores") > 0 && cnt("gets") > 0, "not every protocol ran");
  return why;
}

template <class T>
int run(Ranks& ranks, const Args& a) {
  Clock::Options co;
  co.allow_variant_tsc = true;
  co.calibrate_ms = 20;
  const Clock clock(co);
  const int me = ranks.rank(), n = ranks.size();
  const Layout lay(n);
  verbs::DeviceOptions o;
  o.device = a.dev;
  o.events = a.events;
  o.remote_read = true;
  o.segment_bytes = (lay.total + 0xfffff) & ~0xfffffu;
  auto t = verbs::connect<T>(ranks, o, verbs::TransportOptions{});

  am::EndpointOptions eo;
  eo.session = 0x5eed;
  eo.rank = me;
  eo.size = n;
  eo.window = kWindow;
  eo.credits = kCredits;
  eo.segment_bytes = static_cast<std::uint32_t>(t->segment().size());
  eo.stall_timeout_s = 30;
  using EP = am::Endpoint<T>;
  EP ep(*t, clock, eo);
  State st(n);
  ep.user = &st;
  install_handlers(ep);

  std::byte* seg = t->segment().data();
  for (std::uint32_t k = 0; k < kPatternBytes; ++k) seg[k] = static_cast<std::byte>(pattern(me, k));
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(me + 1));
  for (std::uint32_t k = 0; k < kStatic; ++k) seg[lay.stat + k] = static_cast<std::byte>(rng());
  ranks.barrier();  // every pattern in place before anyone gets it

  std::vector<int> peers;  // staggered: rank r starts with r+1
  for (int k = 1; k < n; ++k) peers.push_back((me + k) % n);
  if (a.kill) return until_a_rank_dies(ep, ranks, peers);

  const nlohmann::json d0 = t->describe();
  const auto medium = d0["medium_max_bytes"].get<std::uint32_t>();
  const std::uint32_t bulk = 3000;
  if (bulk <= medium || medium < 16) throw std::runtime_error("this test expects a path MTU of 1024 to 2048");
  const auto by_peer = static_cast<std::size_t>(n);
  Sender sender{lay,
                seg,
                medium,
                bulk,
                rng,
                std::vector<std::uint64_t>(kBuffers, 0),
                std::vector<std::uint32_t>(by_peer, 0),
                std::vector<std::uint32_t>(by_peer, 0)};
  bool ok = true;
  for (int i = 0; i < a.messages; ++i) {
    const int dst = peers[static_cast<std::size_t>(i) % peers.size()];
    send_one(ep, st, sender, me, i, dst, (i / static_cast<int>(peers.size())) % 6);
    if (t->tx_completed() > t->tx_posted()) ok = false;
  }
  ep.wait_local(t->tx_posted());  // every QP's tail, flushed where needed
  ep.wait_all();
  for (int p : peers) ep.request(p, kFinal);
  ep.wait_until([&] { return st.totals == n - 1; });
  std::uint64_t last = 0;
  for (int p : peers) last = ep.oneway(p, kDone, 0, 0, 0, 0, true);
  ep.wait_local(last);
  ep.wait_until([&] { return st.dones == n - 1; });
  ep.wait_local(t->tx_posted());  // the replies and credit frames sent since, too: every QP drained

  const nlohmann::json d = t->describe();
  const nlohmann::json& c = d["counters"];
  const auto cnt = [&](const char* k) { return c[k].template get<std::uint64_t>(); };
  const std::string why = verdict(ep, st, peers, ok, d);
  std::uint64_t credits = 0;
  for (int p : peers) credits += ep.counters(p).credit_frames;
  std::printf(
      "rank %d/%d (%s): %d messages to %d peers; credit frames %llu, WRs %llu (signaled %llu, flushes %llu), "
      "medium %llu, bulk %llu, gets %llu, sleeps %llu: %s\n",
      me, n, a.events ? "event" : (n > sysconf(_SC_NPROCESSORS_ONLN) ? "busy, yielding" : "busy"), a.messages, n - 1,
      static_cast<unsigned long long>(credits), static_cast<unsigned long long>(cnt("sends")),
      static_cast<unsigned long long>(cnt("signaled")), static_cast<unsigned long long>(cnt("flushes")),
      static_cast<unsigned long long>(cnt("medium_stores")), static_cast<unsigned long long>(cnt("stores")),
      static_cast<unsigned long long>(cnt("gets")), static_cast<unsigned long long>(cnt("sleeps")),
      why.empty() ? "ok" : ("FAILED: " + why).c_str());
  std::fflush(stdout);
  ranks.barrier();  // nobody tears its QPs down while another still waits for a completion
  return why.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--event")
      a.events = true;
    else if (s == "--kill")
      a.kill = true;
    else if (s == "--ranks" && i + 1 < argc)
      a.ranks = std::atoi(argv[++i]);
    else if (s == "--messages" && i + 1 < argc)
      a.messages = std::atoi(argv[++i]);
    else if (a.dev.empty() && s[0] != '-')
      a.dev = s;
    else {
      std::fprintf(stderr, "usage: %s DEVICE [--event] [--ranks N] [--messages M] [--kill]\n", argv[0]);
      return 2;
    }
  }
  if (a.dev.empty() || a.ranks < 2) return 2;
  if (access(("/sys/class/infiniband/" + a.dev).c_str(), F_OK) != 0) {
    std::printf("SKIP: no RDMA device %s\n", a.dev.c_str());
    return 77;
  }
  std::optional<Ranks> ranks(Ranks::local(a.ranks, 60));
  const int me = ranks->rank();
  const std::vector<pid_t> kids = ranks->child_pids();
  int rc = 1;
  // More ranks than cores: waits yield (as the job runner does), or rxe's kernel work and the ranks
  // sharing a core would progress only a time slice at a time.
  const bool yield = a.ranks > static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  try {
    rc = a.events ? run<verbs::EventTransport>(*ranks, a)
         : yield  ? run<verbs::YieldingTransport>(*ranks, a)
                  : run<verbs::Transport>(*ranks, a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", me, e.what());
    rc = 1;
  }
  if (me != 0) {
    std::fflush(stdout);
    _exit(rc);
  }
  ranks.reset();  // rank 0 closes its connections: the members' liveness checks see it at once
  const auto kill_end = Steady::now() + std::chrono::seconds(15);
  bool all = rc == (a.kill ? 3 : 0);
  for (std::size_t k = 0; k < kids.size(); ++k) {
    int st = 0;
    pid_t w = 0;
    while ((w = waitpid(kids[k], &st, a.kill ? WNOHANG : 0)) == 0 && Steady::now() < kill_end) usleep(10000);
    const bool killed_one = a.kill && k + 1 == kids.size();
    const bool good = w == kids[k] && (killed_one ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
                                                  : WIFEXITED(st) && WEXITSTATUS(st) == (a.kill ? 3 : 0));
    if (!good) {
      std::fprintf(stderr, "rank %zu: %s (status %d)\n", k + 1, w == 0 ? "still running 15 s after the kill" : "failed",
                   st);
      if (w == 0) ::kill(kids[k], SIGKILL), waitpid(kids[k], &st, 0);
      all = false;
    }
  }
  std::printf("ranks_check%s%s: %s\n", a.kill ? " --kill" : "", a.events ? " --event" : "", all ? "ok" : "FAILED");
  return all ? 0 : 1;
}
