// The floor under the shm transport: a bare cache-line ping-pong between two processes on two cores. The
// ratio of logpbench's shm ping-pong RTT to this one, measured in the same run on the same cores, is what
// the AM layer and transport add. Two layouts:
//  - counter (the default): nothing but one 8-byte counter per direction, each on its own line, stored once;
//  - frames: the shm transport's own layout with nothing else of it: a ring of 1024 64-byte slots per
//    direction, each message a new slot, its other 60 bytes copied in first and its 4-byte sequence number
//    stored last (shm/transport.hpp's publish), the receiver spinning on that number and copying the slot
//    out. What logpbench adds over this loop is its code; what this loop adds over counter is the layout.
// With `timed`, the server reads the TSC before each poll and after the reply's store, and reports the median
// of the polls that found a request (the ping-pong's replier_turnaround, timed alike).
//
// usage: shm_bare_pingpong [iterations] [client_cpu] [server_cpu] [counter|frames] [timed]
//   -> prints JSON with the RTT summary (and with `timed`, the server's turnaround)
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pin.hpp"
#include "common/clock.hpp"
#include "common/stats.hpp"

namespace {
struct alignas(64) Line {
  std::atomic<std::uint64_t> v;
};
// One message of the frames layout: a 64-byte slot, published by its sequence number (stored last).
struct alignas(64) Slot {
  std::uint32_t seq;
  std::byte rest[60];
};
constexpr std::uint64_t kSlots = 1024;
struct Shared {
  Line ping, pong;
  Slot to_server[kSlots], to_client[kSlots];
  std::atomic<std::uint64_t> turnaround_cycles;  // timed: the server's median, written before it exits
};
using logpb::bench::pin;

// The two layouts' send and wait; `msg` is the caller's copy of the slot (frames).
struct Counter {
  static void send(Line& l, Slot*, std::uint64_t i, const Slot&) { l.v.store(i, std::memory_order_release); }
  static bool ready(const Line& l, const Slot*, std::uint64_t i) { return l.v.load(std::memory_order_acquire) == i; }
  static void take(const Slot*, std::uint64_t, Slot&) {}
};
struct Frames {
  static void send(Line&, Slot* ring, std::uint64_t i, const Slot& msg) {
    Slot& s = ring[(i - 1) % kSlots];
    std::memcpy(s.rest, msg.rest, sizeof s.rest);
    std::atomic_ref<std::uint32_t>(s.seq).store(static_cast<std::uint32_t>(i), std::memory_order_release);
  }
  static bool ready(const Line&, const Slot* ring, std::uint64_t i) {
    return std::atomic_ref<const std::uint32_t>(ring[(i - 1) % kSlots].seq).load(std::memory_order_acquire) ==
           static_cast<std::uint32_t>(i);
  }
  static void take(const Slot* ring, std::uint64_t i, Slot& msg) {
    std::memcpy(&msg, &ring[(i - 1) % kSlots], sizeof msg);
  }
};

template <class Layout, bool Timed>
void serve(Shared* sh, std::uint64_t total) {
  Slot msg{};
  std::vector<std::uint64_t> turn;
  if (Timed) turn.reserve(total);
  for (std::uint64_t i = 1; i <= total; ++i) {
    for (;;) {
      const std::uint64_t t0 = Timed ? logpb::tsc::now() : 0;
      if (Layout::ready(sh->ping, sh->to_server, i)) {
        Layout::take(sh->to_server, i, msg);
        Layout::send(sh->pong, sh->to_client, i, msg);
        if (Timed) turn.push_back(logpb::tsc::now_end() - t0);
        break;
      }
      _mm_pause();
    }
  }
  if (Timed) {
    std::nth_element(turn.begin(), turn.begin() + static_cast<std::ptrdiff_t>(turn.size() / 2), turn.end());
    sh->turnaround_cycles.store(turn[turn.size() / 2], std::memory_order_release);
  }
}

template <class Layout>
void client(Shared* sh, long warm, std::vector<std::uint64_t>& cyc) {
  Slot msg{};
  std::uint64_t i = 0;
  for (long k = 0; k < warm; ++k) {
    ++i;
    Layout::send(sh->ping, sh->to_server, i, msg);
    while (!Layout::ready(sh->pong, sh->to_client, i)) _mm_pause();
    Layout::take(sh->to_client, i, msg);
  }
  for (auto& c : cyc) {
    ++i;
    const std::uint64_t t0 = logpb::tsc::now();
    Layout::send(sh->ping, sh->to_server, i, msg);
    while (!Layout::ready(sh->pong, sh->to_client, i)) _mm_pause();
    Layout::take(sh->to_client, i, msg);
    c = logpb::tsc::now_end() - t0;
  }
}
}  // namespace

int main(int argc, char** argv) {
  const long iters = argc > 1 ? std::atol(argv[1]) : 100000;
  const int ccpu = argc > 2 ? std::atoi(argv[2]) : 0, scpu = argc > 3 ? std::atoi(argv[3]) : 1;
  const std::string layout = argc > 4 ? argv[4] : "counter";
  const bool timed = argc > 5 && std::string(argv[5]) == "timed";
  if (iters < 1 || (layout != "counter" && layout != "frames") || (argc > 5 && !timed) || argc > 6) {
    std::fprintf(stderr,
                 "usage: shm_bare_pingpong [iterations>0] [client_cpu] [server_cpu] [counter|frames] [timed]\n");
    return 2;
  }
  const bool frames = layout == "frames";
  const logpb::Clock clock;
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  auto* sh = new (p) Shared{};
  const long warm = iters / 10 + 100;
  const auto total = static_cast<std::uint64_t>(warm + iters);
  const pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!pin(scpu)) _exit(2);
    if (frames)
      timed ? serve<Frames, true>(sh, total) : serve<Frames, false>(sh, total);
    else
      timed ? serve<Counter, true>(sh, total) : serve<Counter, false>(sh, total);
    _exit(0);
  }
  if (!pin(ccpu)) {
    std::fprintf(stderr, "shm_bare_pingpong: cannot pin to cpu %d\n", ccpu);
    kill(child, SIGKILL);
    return 2;
  }
  std::vector<std::uint64_t> cyc(static_cast<std::size_t>(iters));
  frames ? client<Frames>(sh, warm, cyc) : client<Counter>(sh, warm, cyc);
  int st = 0;
  waitpid(child, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "shm_bare_pingpong: the server process failed (status %d)\n", st);
    return 1;
  }
  std::vector<double> ns;
  for (auto c : cyc) ns.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  const auto s = logpb::summarize(ns);
  nlohmann::json j = {{"bench", "shm_bare_pingpong"}, {"iterations", iters}, {"client_cpu", ccpu},
                      {"server_cpu", scpu},           {"layout", layout},    {"rtt", s}};
  // The server's two reads are inside its turnaround, as the ping-pong's replier_turnaround holds them.
  if (timed) j["server_turnaround_median_ns"] = clock.ns(static_cast<double>(sh->turnaround_cycles.load()));
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
