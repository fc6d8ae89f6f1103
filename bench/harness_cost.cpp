// The AM layer's own cost per send and per receive (common/harness_cost.hpp), in several rounds on one
// pinned core, against the null NI alone: a bare store of one frame into its ring and a bare load back.
// The target is at most kGoalNs per send and per receive, AM layer and null NI together, so that on a
// real NI (a ConnectX post costs 100-300 ns of CPU) logpbench's share of o stays small.
//
// usage: harness_cost [rounds] [cpu] [batch] [batches]   -> a line per round, the medians, then JSON
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pin.hpp"
#include "common/harness_cost.hpp"
#include "common/stats.hpp"

namespace {
constexpr double kGoalNs = 15;
using logpb::bench::pin;
}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int cpu = argc > 2 ? std::atoi(argv[2]) : 0;
  logpb::HarnessCostOptions opt;
  if (argc > 3) opt.batch = std::atoi(argv[3]);
  if (argc > 4) opt.batches = std::atoi(argv[4]);
  if (rounds < 1 || opt.batch < 1 || opt.batches < 1) {
    std::fprintf(stderr, "usage: harness_cost [rounds>0] [cpu] [batch>0] [batches>0]\n");
    return 2;
  }
  if (!pin(cpu)) {
    std::fprintf(stderr, "harness_cost: cannot pin to cpu %d\n", cpu);
    return 2;
  }
  const logpb::Clock clock;
  logpb::set_ci_floor_ns(clock.resolution_ns());
  std::vector<double> send, recv, ow_send, ow_recv, ni_send, ni_recv;
  std::printf("round  send  recv  oneway_send  oneway_recv  null_ni_send  null_ni_recv   (ns per operation)\n");
  for (int r = 0; r < rounds; ++r) {
    const logpb::HarnessCost h = logpb::measure_harness_cost(clock, opt);
    if (!h.error.empty()) {
      std::fprintf(stderr, "harness_cost: %s\n", h.error.c_str());
      return 1;
    }
    send.push_back(h.send.value_ns);
    recv.push_back(h.recv.value_ns);
    ow_send.push_back(h.oneway_send.value_ns);
    ow_recv.push_back(h.oneway_recv.value_ns);
    ni_send.push_back(h.ni_send.value_ns);
    ni_recv.push_back(h.ni_recv.value_ns);
    std::printf("%5d %5.1f %5.1f %12.1f %12.1f %13.1f %13.1f   (%.3f s)\n", r, h.send.value_ns, h.recv.value_ns,
                h.oneway_send.value_ns, h.oneway_recv.value_ns, h.ni_send.value_ns, h.ni_recv.value_ns, h.seconds);
  }
  const double s = logpb::median_of(send), v = logpb::median_of(recv);
  const double ns = logpb::median_of(ni_send), nr = logpb::median_of(ni_recv);
  std::printf(
      "median of %d rounds: send %.1f ns (%.1fx a bare frame store of %.1f ns), "
      "receive %.1f ns (%.1fx a bare frame load of %.1f ns)\n",
      rounds, s, s / ns, ns, v, v / nr, nr);
  std::printf("one-way: send %.1f ns, receive %.1f ns\n", logpb::median_of(ow_send), logpb::median_of(ow_recv));
  const bool met = s <= kGoalNs && v <= kGoalNs;
  std::printf("goal: at most %.0f ns per send and per receive: %s\n", kGoalNs, met ? "met" : "NOT met");
  nlohmann::json j = {{"bench", "harness_cost"},
                      {"rounds", rounds},
                      {"cpu", cpu},
                      {"batch", opt.batch},
                      {"batches", opt.batches},
                      {"send_ns", s},
                      {"recv_ns", v},
                      {"oneway_send_ns", logpb::median_of(ow_send)},
                      {"oneway_recv_ns", logpb::median_of(ow_recv)},
                      {"null_ni_send_ns", ns},
                      {"null_ni_recv_ns", nr},
                      {"goal_ns", kGoalNs},
                      {"goal_met", met}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
