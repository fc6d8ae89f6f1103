// The DPDK transport in a job of four ranks (Ranks::local(4): four processes, one memif per pair of
// ranks, built by dpdk::connect), through the AM layer.
//
//  traffic: every rank sends every other rank, interleaved, small requests (echoed, checked), stores
//           around and past the medium/chunked switch (byte-exact, checked by the receiving handler),
//           gets (the data comes back from the rank asked, checked) and one-way floods (in order per
//           source, checked). Then, per ordered pair of ranks: frames sent = frames received, no loss and
//           no reorder counted, one-way requests sent = received, credit frames sent = received and
//           enough of them; and the credit limit of a shared rx ring is divided among its senders.
//  kill:    the same traffic, endless; rank 3 kills itself (SIGKILL) at an agreed time. Every other
//           rank must end with PeerError within kKillDetect seconds, although the AM stall timeout is
//           far longer: the memif link and the Ranks liveness must say it, not a timeout.
// Exit 0: every check held; 1: a check failed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/am.hpp"
#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/ranks.hpp"
#include "dpdk/connect.hpp"

using namespace logpb;
using EP = am::Endpoint<dpdk::Transport<>>;

namespace {

constexpr int kRanks = 4;
constexpr int kWindow = 8;
constexpr int kCredits = 64;       // well below the floods' length: credits must come back many times
constexpr int kFloodPerRound = 4;  // one-way requests per destination per round
constexpr double kKillDetect = 5;  // seconds; the stall timeout is 60
constexpr std::uint32_t kSegment = 1 << 20;
// The segment: stores from rank s land in [s * kStoreRegion, ...); [kGetSource, +kRegion) holds this
// rank's pattern for others to get; gets from rank d land at kGetLanding + d * kGetRegion.
constexpr std::uint32_t kStoreRegion = 128 << 10;
constexpr std::uint32_t kGetSource = 512 << 10;
constexpr std::uint32_t kGetLanding = 768 << 10;
constexpr std::uint32_t kGetRegion = 64 << 10;

enum : std::uint16_t { kEcho = 2, kEchoReply, kStore, kStoreReply, kFlood, kGetDone, kFinished, kAck };

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser: a checkable word from (src, dst, i)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
std::uint8_t pattern(std::uint64_t key, std::uint32_t i) {
  return static_cast<std::uint8_t>(mix(key + i / 8) >> (8 * (i % 8)));
}
std::uint64_t key(int src, int dst, std::uint64_t i) {
  return (static_cast<std::uint64_t>(src) << 56) ^ (static_cast<std::uint64_t>(dst) << 48) ^ i;
}

struct State {
  int rank = 0;
  std::uint64_t bad_echo = 0, bad_store = 0, bad_get = 0, bad_order = 0;
  std::uint64_t echo_replies[kRanks] = {}, store_replies[kRanks] = {}, gets_done[kRanks] = {};
  std::uint64_t flood_next[kRanks] = {};  // the next one-way number expected from each source
  int finished_from = 0;
};
State& st(EP& e) { return *static_cast<State*>(e.user); }

void handlers(EP& ep) {
  ep.on(kEcho, [](EP& e, const am::Frame& f) {
    if (f.args[0] != f.src || f.args[2] != mix(key(f.src, e.rank(), f.args[1]))) ++st(e).bad_echo;
    e.reply(f, kEchoReply, e.rank(), f.args[1], mix(key(e.rank(), f.src, f.args[1])));
  });
  ep.on(kEchoReply, [](EP& e, const am::Frame& f) {
    if (f.args[0] != f.src || f.args[2] != mix(key(f.src, e.rank(), f.args[1]))) ++st(e).bad_echo;
    ++st(e).echo_replies[f.src];
  });
  ep.on(kStore, [](EP& e, const am::Frame& f) {
    const auto* d = reinterpret_cast<const std::uint8_t*>(e.transport().segment().data()) + f.bulk_off;
    const std::uint64_t k = key(f.src, e.rank(), f.args[0]);
    bool ok = f.bulk_off >= f.src * kStoreRegion && f.bulk_off + f.bulk_len <= (f.src + 1u) * kStoreRegion &&
              f.bulk_len == f.args[1];
    for (std::uint32_t i = 0; ok && i < f.bulk_len; ++i) ok = d[i] == pattern(k, i);
    if (!ok) ++st(e).bad_store;
    e.reply(f, kStoreReply);
  });
  ep.on(kStoreReply, [](EP& e, const am::Frame& f) { ++st(e).store_replies[f.src]; });
  ep.on(kFlood, [](EP& e, const am::Frame& f) {
    std::uint64_t& next = st(e).flood_next[f.src];
    if (f.args[0] != next || f.args[1] != mix(key(f.src, e.rank(), f.args[0]))) ++st(e).bad_order;
    next = f.args[0] + 1;
  });
  ep.on(kGetDone, [](EP& e, const am::Frame& f) {  // a get's completion, as a reply from the rank read
    const auto* d = reinterpret_cast<const std::uint8_t*>(e.transport().segment().data()) + f.bulk_off;
    bool ok = f.bulk_off == kGetLanding + f.src * kGetRegion && f.bulk_len == f.args[0];
    for (std::uint32_t i = 0; ok && i < f.bulk_len; ++i) ok = d[i] == pattern(key(f.src, f.src, 0), i);
    if (!ok) ++st(e).bad_get;
    ++st(e).gets_done[f.src];
  });
  ep.on(kFinished, [](EP& e, const am::Frame& f) {
    ++st(e).finished_from;
    e.reply(f, kAck);
  });
  ep.on(kAck, [](EP&, const am::Frame&) {});
}

// One round: to every other rank, starting at a different one on each rank so the streams interleave.
void round(EP& ep, std::uint64_t i, std::vector<std::uint8_t>& buf, std::uint64_t flood_sent[kRanks]) {
  const int me = ep.rank();
  const std::uint32_t mm = ep.transport().medium_max();
  const std::uint32_t sizes[] = {8, 256, mm, mm + 1, 4000};
  for (int k = 1; k < kRanks; ++k) {
    const int dst = (me + 1 + static_cast<int>((static_cast<std::uint64_t>(k) - 1 + i) % (kRanks - 1))) % kRanks;
    ep.request(dst, kEcho, static_cast<std::uint64_t>(me), i, mix(key(me, dst, i)));
    const std::uint32_t n = sizes[i % 5];
    const std::uint64_t kk = key(me, dst, i);
    buf.resize(n);
    for (std::uint32_t b = 0; b < n; ++b) buf[b] = pattern(kk, b);
    const std::uint32_t off =
        static_cast<std::uint32_t>(me) * kStoreRegion + static_cast<std::uint32_t>((i % 8) * 8192);
    ep.store(dst, kStore, buf.data(), n, off, i, n);
    for (int f = 0; f < kFloodPerRound; ++f) {
      const std::uint64_t s = flood_sent[dst]++;
      ep.oneway(dst, kFlood, s, mix(key(me, dst, s)));
    }
    if (i % 16 == 0) {
      const std::uint32_t g = (i / 16) % 2 ? 3000 : 100;
      ep.get(dst, kGetDone, kGetSource, g, kGetLanding + static_cast<std::uint32_t>(dst) * kGetRegion, g);
    }
  }
}

dpdk::ConnectOptions connect_options(const Ranks& ranks, std::uint32_t session) {
  dpdk::ConnectOptions o;
  o.cpu = ranks.rank() % static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.local = true;
  o.link_timeout_s = 20;
  o.transport.session = session;
  o.transport.segment_bytes = kSegment;
  o.transport.yield_when_idle = true;  // four ranks on this machine's cores
  return o;
}

am::EndpointOptions endpoint_options(const Ranks& ranks, std::uint32_t session, double stall) {
  am::EndpointOptions e;
  e.session = session;
  e.rank = ranks.rank();
  e.size = ranks.size();
  e.window = kWindow;
  e.credits = kCredits;
  e.segment_bytes = kSegment;
  e.stall_timeout_s = stall;
  return e;
}

void fill_get_source(EP& ep) {
  auto* d = reinterpret_cast<std::uint8_t*>(ep.transport().segment().data()) + kGetSource;
  for (std::uint32_t i = 0; i < kGetRegion; ++i) d[i] = pattern(key(ep.rank(), ep.rank(), 0), i);
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// The rounds of traffic, then the finish: a request to every rank (its reply means it has handled all our
// frames, and sent every credit frame they asked for), and serve until every rank has said the same.
void run_rounds(EP& ep, State& s, int rounds) {
  std::vector<std::uint8_t> buf;
  std::uint64_t flood_sent[kRanks] = {};
  for (int i = 0; i < rounds; ++i) round(ep, static_cast<std::uint64_t>(i), buf, flood_sent);
  for (int d = 0; d < kRanks; ++d)
    if (d != ep.rank()) ep.request(d, kFinished);
  if (!ep.wait_until([&] { return ep.total_outstanding() == 0 && s.finished_from == kRanks - 1; }))
    throw std::runtime_error("requests declared lost");
}

// This rank's counts per peer (null for itself): the transport's and the AM layer's.
nlohmann::json peer_counts(dpdk::Transport<>& t, EP& ep, const State& s) {
  nlohmann::json peers = nlohmann::json::array();
  for (int d = 0; d < kRanks; ++d) {
    if (d == ep.rank()) {
      peers.push_back(nullptr);
      continue;
    }
    const auto& tc = t.counters(d);
    const auto& ac = ep.counters(d);
    peers.push_back({{"tx", tc.tx},
                     {"rx", tc.rx},
                     {"lost", tc.lost},
                     {"reordered", tc.reordered},
                     {"bulk_incomplete", tc.bulk_incomplete},
                     {"oneway_sent", ac.oneway_sent},
                     {"oneway_received", ac.oneway_received},
                     {"flood_next", s.flood_next[d]},
                     {"credit_frames_received", ac.credit_frames},
                     {"credit_frames_sent", ac.credit_frames_sent},
                     {"echo_replies", s.echo_replies[d]},
                     {"store_replies", s.store_replies[d]},
                     {"gets_done", s.gets_done[d]},
                     {"rejected", ac.rejected_total()}});
  }
  return peers;
}

// The peers as a port every peer shares would address them: its ring divided among the three senders.
std::vector<dpdk::PeerAddress> sharing_peers(dpdk::Connection& conn, int rank) {
  std::vector<dpdk::PeerAddress> shared;
  for (int d = 0; d < kRanks; ++d)
    if (d != rank)
      shared.push_back({.rank = d,
                        .port = 0,
                        .mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(d)},
                        .rx_ring = conn.ports()[0]->rx_ring(),
                        .rx_ring_sources = kRanks - 1});
  return shared;
}

// Rank 0's checks of one rank's figures `r`, and of each of its links against what the peer saw.
void check_rank(const nlohmann::json& r, const nlohmann::json& all, std::uint64_t R) {
  const int me = r["rank"];
  const std::string who = "rank " + std::to_string(me);
  check(r["bad_echo"] == 0 && r["bad_store"] == 0 && r["bad_get"] == 0 && r["bad_order"] == 0,
        who + ": every echo, store and get byte-exact, every flood in order (" +
            std::to_string(r["bad_echo"].get<int>()) + "/" + std::to_string(r["bad_store"].get<int>()) + "/" +
            std::to_string(r["bad_get"].get<int>()) + "/" + std::to_string(r["bad_order"].get<int>()) + " bad)");
  const auto& c = r["counters"];
  check(c["lost"] == 0 && c["reordered"] == 0 && c["foreign_rank"] == 0 && c["malformed"] == 0 &&
            c["medium_rejected"] == 0 && c["bulk_incomplete"] == 0 && r["unattributed_rejects"] == 0,
        who + ": no loss, reorder, foreign rank or malformed frame counted: " + c.dump());
  check(r["ports"] == kRanks - 1, who + ": one memif port per peer (" + std::to_string(r["ports"].get<int>()) + ")");
  check(r["max_credits"] == r["expected_max_credits"] &&
            r["credit_limit"] == std::min(kCredits, r["max_credits"].get<int>()),
        who + ": credit limit per peer from its own ring: " + std::to_string(r["max_credits"].get<int>()));
  check(r["shared_max_credits"] == r["expected_shared"],
        who + ": a ring shared by 3 senders gives each a third: " + std::to_string(r["shared_max_credits"].get<int>()));
  for (int d = 0; d < kRanks; ++d) {
    if (d == me) continue;
    const auto& out = r["peers"][d];
    const auto& in = all[static_cast<std::size_t>(d)]["peers"][me];
    const std::string pair = std::to_string(me) + "->" + std::to_string(d);
    check(out["tx"] == in["rx"] && in["lost"] == 0 && in["reordered"] == 0 && in["bulk_incomplete"] == 0,
          pair + ": frames sent " + out["tx"].dump() + " = received " + in["rx"].dump() + ", none lost or reordered");
    check(out["oneway_sent"] == R * kFloodPerRound && in["oneway_received"] == R * kFloodPerRound &&
              in["flood_next"] == R * kFloodPerRound,
          pair + ": one-way requests sent = received = " + in["oneway_received"].dump());
    const std::uint64_t cr = out["credit_frames_received"], cs = in["credit_frames_sent"];
    // Each credit frame returns at most kCredits, and at the end at most kCredits are unreturned.
    const std::uint64_t least = (R * kFloodPerRound - kCredits) / kCredits;
    check(cr == cs && cr >= least && cr > 0, pair + ": credit frames returned " + std::to_string(cs) + " = received " +
                                                 std::to_string(cr) + " (at least " + std::to_string(least) + ")");
    check(out["echo_replies"] == R && out["store_replies"] == R && out["gets_done"] == (R + 15) / 16 &&
              out["rejected"] == 0,
          pair + ": every request answered (echo " + out["echo_replies"].dump() + ", store " +
              out["store_replies"].dump() + ", get " + out["gets_done"].dump() + ")");
  }
}

// Every rank: traffic, a finish handshake, then its figures to rank 0, which checks them all.
void traffic(Ranks& ranks, const Clock& clock, int rounds) {
  const auto session = ranks.broadcast(static_cast<std::uint32_t>(0x70000000u ^ static_cast<std::uint32_t>(getpid())))
                           .get<std::uint32_t>();
  auto conn = dpdk::connect(ranks, connect_options(ranks, session));
  dpdk::Transport<>& t = conn->transport();
  EP ep(t, clock, endpoint_options(ranks, session, 60));
  State s;
  s.rank = ranks.rank();
  ep.user = &s;
  handlers(ep);
  fill_get_source(ep);
  ranks.barrier();  // every rank's get source is filled
  run_rounds(ep, s, rounds);

  const auto desc = t.describe();
  const int burst = desc["burst"].get<int>();
  // The credit limit of a port every peer shares (kept to the end, as the job's own transport is).
  dpdk::TransportOptions so;
  so.rank = ep.rank();
  so.size = kRanks;
  so.segment_bytes = 4096;
  dpdk::Transport<> one_port(std::vector<dpdk::Port*>{conn->ports()[0].get()}, sharing_peers(*conn, ep.rank()), so,
                             [] { return true; });
  const int ring = conn->ports()[0]->rx_ring();
  nlohmann::json mine = {{"rank", ep.rank()},
                         {"bad_echo", s.bad_echo},
                         {"bad_store", s.bad_store},
                         {"bad_get", s.bad_get},
                         {"bad_order", s.bad_order},
                         {"peers", peer_counts(t, ep, s)},
                         {"counters", desc["counters"]},
                         {"ports", desc["ports"].size()},
                         {"credit_limit", ep.credit_limit()},
                         {"max_credits", t.max_credits(kWindow)},
                         {"expected_max_credits", ring - burst - 2 * kWindow - 4},
                         {"shared_max_credits", one_port.max_credits(kWindow)},
                         {"expected_shared", (ring - burst) / (kRanks - 1) - 2 * kWindow - 4},
                         {"unattributed_rejects", ep.counters().rejected_total()}};
  const nlohmann::json all = ranks.allgather(mine);
  ranks.barrier();  // nobody tears its ports down while another may still read the last frames
  if (ranks.rank() != 0) return;
  for (const auto& r : all) check_rank(r, all, static_cast<std::uint64_t>(rounds));
}

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Every rank floods; rank 3 dies at kill_at. Returns the seconds from kill_at to the PeerError (rank 3
// never returns), or -1 when none came.
double kill_test(Ranks& ranks, const Clock& clock) {
  const auto session = ranks.broadcast(static_cast<std::uint32_t>(0x71000000u ^ static_cast<std::uint32_t>(getpid())))
                           .get<std::uint32_t>();
  auto conn = dpdk::connect(ranks, connect_options(ranks, session));
  EP ep(conn->transport(), clock, endpoint_options(ranks, session, 60));
  State s;
  ep.user = &s;
  handlers(ep);
  fill_get_source(ep);
  const double kill_at = ranks.broadcast(now_s() + 1.5).get<double>();
  std::vector<std::uint8_t> buf;
  std::uint64_t flood_sent[kRanks] = {};
  try {
    for (std::uint64_t i = 0;; ++i) {
      if (ranks.rank() == kRanks - 1 && now_s() >= kill_at) raise(SIGKILL);
      round(ep, i, buf, flood_sent);
      if (now_s() > kill_at + 60) return -1;
    }
  } catch (const PeerError& e) {
    const double took = now_s() - kill_at;
    std::printf("rank %d: PeerError %.3f s after the kill: %s\n", ranks.rank(), took, e.what());
    return took;
  }
}

}  // namespace

// usage: dpdk_ranks_test [traffic ROUNDS | kill]
int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "traffic";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 400;
  Clock clock;
  Ranks ranks = Ranks::local(kRanks, 60);
  const bool root = ranks.rank() == 0;
  int code = 0;
  try {
    if (mode == "kill") {
      const double took = kill_test(ranks, clock);
      code = took >= 0 && took < kKillDetect ? 3 : 1;  // 3: the PeerError came in time
    } else {
      traffic(ranks, clock, rounds);
    }
  } catch (const std::exception& e) {
    std::printf("rank %d: FAIL: %s\n", ranks.rank(), e.what());
    code = 1;
  }
  if (!root) {
    std::fflush(stdout);
    _exit(mode == "kill" ? code : (code ? 1 : 0));
  }
  // Rank 0: reap the children and judge.
  const auto pids = ranks.child_pids();
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (waitpid(pids[i], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status, 0);
        check(false, "rank " + std::to_string(i + 1) + " did not end within 30 s (killed)");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int rank = static_cast<int>(i) + 1;
    if (mode == "kill") {
      if (rank == kRanks - 1)
        check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "rank 3 was killed");
      else
        check(WIFEXITED(status) && WEXITSTATUS(status) == 3,
              "rank " + std::to_string(rank) + " ended with PeerError within " + std::to_string(kKillDetect) + " s");
    } else {
      check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank " + std::to_string(rank) + " ended cleanly");
    }
  }
  if (mode == "kill")
    check(code == 3, "rank 0 ended with PeerError within " + std::to_string(kKillDetect) + " s");
  else
    check(code == 0, "rank 0 ended cleanly");
  std::printf(failures ? "%d check(s) failed\n" : "all checks held\n", failures);
  return failures ? 1 : 0;
}
