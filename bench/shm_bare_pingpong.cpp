// The floor under the shm transport: a bare cache-line ping-pong between two processes on two cores,
// with nothing but one counter per direction. The ratio of logpbench's shm ping-pong RTT to this one,
// measured in the same run on the same cores, is what the AM layer and transport add.
//
// usage: shm_bare_pingpong [iterations] [client_cpu] [server_cpu]   -> prints JSON with the RTT summary
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pin.hpp"
#include "common/clock.hpp"
#include "common/stats.hpp"

namespace {
struct alignas(64) Line {
  std::atomic<std::uint64_t> v;
};
struct Shared {
  Line ping, pong;
};
using logpb::bench::pin;
}  // namespace

int main(int argc, char** argv) {
  const long iters = argc > 1 ? std::atol(argv[1]) : 100000;
  const int ccpu = argc > 2 ? std::atoi(argv[2]) : 0, scpu = argc > 3 ? std::atoi(argv[3]) : 1;
  if (iters < 1) {
    std::fprintf(stderr, "usage: shm_bare_pingpong [iterations>0] [client_cpu] [server_cpu]\n");
    return 2;
  }
  const logpb::Clock clock;
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  auto* sh = new (p) Shared{};
  const long warm = iters / 10 + 100;
  const pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!pin(scpu)) _exit(2);
    for (std::uint64_t i = 1; i <= static_cast<std::uint64_t>(warm + iters); ++i) {
      while (sh->ping.v.load(std::memory_order_acquire) != i) _mm_pause();
      sh->pong.v.store(i, std::memory_order_release);
    }
    _exit(0);
  }
  if (!pin(ccpu)) {
    std::fprintf(stderr, "shm_bare_pingpong: cannot pin to cpu %d\n", ccpu);
    kill(child, SIGKILL);
    return 2;
  }
  std::vector<std::uint64_t> cyc(static_cast<std::size_t>(iters));
  std::uint64_t i = 0;
  for (long k = 0; k < warm; ++k) {
    ++i;
    sh->ping.v.store(i, std::memory_order_release);
    while (sh->pong.v.load(std::memory_order_acquire) != i) _mm_pause();
  }
  for (auto& c : cyc) {
    ++i;
    const std::uint64_t t0 = logpb::tsc::now();
    sh->ping.v.store(i, std::memory_order_release);
    while (sh->pong.v.load(std::memory_order_acquire) != i) _mm_pause();
    c = logpb::tsc::now_end() - t0;
  }
  int st = 0;
  waitpid(child, &st, 0);
  std::vector<double> ns;
  for (auto c : cyc) ns.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  const auto s = logpb::summarize(ns);
  nlohmann::json j = {
      {"bench", "shm_bare_pingpong"}, {"iterations", iters}, {"client_cpu", ccpu}, {"server_cpu", scpu}, {"rtt", s}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
