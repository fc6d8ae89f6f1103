// The DPDK floor for logpbench's ping-pong: a bare request/reply loop over the same port set-up
// (dpdk::Port: same rings, pool and MTU), with nothing but bursts in it. The client allocates a frame of
// the size of logpbench's small AM (Ethernet + wire header + 64-byte AM frame), sends it with a burst of
// one and spins on rx bursts for the answer; the server sends every received mbuf straight back, as
// testpmd's macswap does. RTT per iteration by the TSC read as logpbench's ping-pong reads it (the same
// Clock, tsc::now / now_end, the timer's own cost taken off), the median printed as JSON (what
// scripts/dpdk-vs-testpmd compares logpbench's ping-pong against, alternated in one run).
//
// usage: dpdk_bare_pingpong server|client CPU ITERATIONS "EAL ARGS" [WORK [timed]]
//   server: reflects until it receives the client's stop frame (or its link goes down);
//   client: WARMUP = ITERATIONS / 10 untimed round trips, then ITERATIONS timed ones, then the stop frame.
//   WORK (server only, default 0): a chain of WORK dependent adds (about WORK cycles) between a burst's
//   arrival and its reflection: a stand-in for what a real server does there (validate, dispatch, build
//   the reply), to show what a few nanoseconds in that place cost the round trip (scripts/dpdk-vs-testpmd
//   prints it each round; one lab's figures are in docs/results/lab-notes.md).
//   timed (server only): the server stamps the TSC before each rx burst and after the tx burst of every
//   burst that held a frame, as logpbench's replier times its service (Endpoint::time_service), and prints
//   the median and 90th percentile per frame as JSON when it stops: its turnaround beside logpbench's
//   (the ping-pong's replier_turnaround), with the same two TSC reads in the same places.
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "bench/pin.hpp"
#include "common/clock.hpp"
#include "common/frame.hpp"
#include "dpdk/port.hpp"
#include "dpdk/wire.hpp"

namespace {

using logpb::dpdk::Port;
using logpb::dpdk::PortOptions;

constexpr std::uint16_t kStopType = logpb::dpdk::kEtherType + 1;  // the client's last frame
constexpr std::uint32_t kFrameBytes = sizeof(rte_ether_hdr) + sizeof(logpb::dpdk::WireHdr) + sizeof(logpb::am::Frame);

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

rte_mbuf* request(Port& port, std::uint16_t type) {
  rte_mbuf* m = rte_pktmbuf_alloc(port.pool());
  if (!m) return nullptr;
  auto* b = rte_pktmbuf_mtod(m, std::uint8_t*);
  rte_pktmbuf_append(m, kFrameBytes);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(b);
  std::memset(eth->dst_addr.addr_bytes, 0xff, 6);
  std::memcpy(eth->src_addr.addr_bytes, port.mac(), 6);
  eth->ether_type = rte_cpu_to_be_16(type);
  std::memset(b + sizeof(rte_ether_hdr), 0, kFrameBytes - sizeof(rte_ether_hdr));
  return m;
}

// The timed server's turnaround per frame (TSC cycles) as JSON.
void print_service(const std::vector<float>& cycles, long work) {
  const logpb::Clock clock;
  std::vector<float> v = cycles;
  std::sort(v.begin(), v.end());
  auto ns = [&](double q) {
    return v.empty()
               ? 0.0
               : clock.ns(static_cast<double>(v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]));
  };
  std::printf(
      "{\"bench\":\"dpdk_bare_pingpong\",\"role\":\"server\",\"work\":%ld,\"service\":{\"median_ns\":%.1f,"
      "\"p90_ns\":%.1f,\"bursts\":%zu}}\n",
      work, ns(0.5), ns(0.9), v.size());
}

// Timed: a template argument, so the untimed server's loop holds no test of it.
template <bool Timed>
int serve(Port& port, long work) {
  rte_mbuf* rx[32];
  rte_eth_link link{};
  std::vector<float> service;
  if constexpr (Timed) service.reserve(1 << 22);
  for (std::uint64_t idle = 0;; ++idle) {
    std::uint64_t t0 = 0;
    if constexpr (Timed) t0 = __rdtsc();
    const std::uint16_t n = rte_eth_rx_burst(port.id(), 0, rx, 32);
    if (n == 0) {
      if ((idle & 0xfffff) == 0xfffff) {  // now and then: is the client still there?
        rte_eth_link_get_nowait(port.id(), &link);
        if (link.link_status != RTE_ETH_LINK_UP) return 0;
      }
      continue;
    }
    idle = 0;
    bool stop = false;
    for (std::uint16_t i = 0; i < n; ++i)
      stop |= rte_pktmbuf_mtod(rx[i], rte_ether_hdr*)->ether_type == rte_cpu_to_be_16(kStopType);
    if (work) {
      std::uint64_t x = 0;
      for (long k = 0; k < work; ++k) asm volatile("add $1, %0" : "+r"(x));  // kept, and one add after another
      stop |= x == 0;                                                        // never: x is work here
    }
    std::uint16_t sent = 0;
    while (sent < n) sent += rte_eth_tx_burst(port.id(), 0, rx + sent, static_cast<std::uint16_t>(n - sent));
    if constexpr (Timed)
      if (service.size() < service.capacity())
        service.push_back(static_cast<float>(__rdtsc() - t0) / static_cast<float>(n));
    if (stop) {
      if constexpr (Timed) print_service(service, work);
      return 0;
    }
  }
}

int client(Port& port, long iterations) {
  const logpb::Clock clock;
  const long warmup = iterations / 10;
  std::vector<std::uint64_t> rtt(static_cast<std::size_t>(iterations));
  rte_mbuf* rx[32];
  for (long i = -warmup; i < iterations; ++i) {
    const std::uint64_t t0 = logpb::tsc::now();
    rte_mbuf* m = request(port, logpb::dpdk::kEtherType);
    if (!m) {
      std::fprintf(stderr, "dpdk_bare_pingpong: rte_pktmbuf_alloc failed\n");
      return 1;
    }
    while (rte_eth_tx_burst(port.id(), 0, &m, 1) != 1) {
    }
    std::uint16_t n;
    while ((n = rte_eth_rx_burst(port.id(), 0, rx, 32)) == 0) {
    }
    const std::uint64_t t1 = logpb::tsc::now_end();
    for (std::uint16_t k = 0; k < n; ++k) rte_pktmbuf_free(rx[k]);
    if (i >= 0) rtt[static_cast<std::size_t>(i)] = t1 - t0;
  }
  rte_mbuf* stop = request(port, kStopType);
  while (stop && rte_eth_tx_burst(port.id(), 0, &stop, 1) != 1) {
  }
  std::sort(rtt.begin(), rtt.end());
  auto pct = [&](double q) {
    return clock.ns(static_cast<double>(rtt[static_cast<std::size_t>(q * static_cast<double>(rtt.size() - 1))]) -
                    clock.timer_cost_cycles());
  };
  std::printf(
      "{\"bench\":\"dpdk_bare_pingpong\",\"iterations\":%ld,\"frame_bytes\":%u,\"rtt\":{\"median_ns\":%.1f,"
      "\"min_ns\":%.1f,\"p90_ns\":%.1f,\"p99_ns\":%.1f}}\n",
      iterations, kFrameBytes, pct(0.5), pct(0), pct(0.9), pct(0.99));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool timed = argc == 7 && std::strcmp(argv[6], "timed") == 0;
  if (argc < 5 || argc > 7 || (argc == 7 && !timed) ||
      (std::strcmp(argv[1], "server") != 0 && std::strcmp(argv[1], "client") != 0)) {
    std::fprintf(stderr, "usage: dpdk_bare_pingpong server|client CPU ITERATIONS \"EAL ARGS\" [WORK [timed]]\n");
    return 2;
  }
  const long work = argc >= 6 ? std::atol(argv[5]) : 0;
  if (work < 0 || work > 1000000) {
    std::fprintf(stderr, "dpdk_bare_pingpong: WORK %s outside 0 .. 1000000\n", argv[5]);
    return 2;
  }
  const bool is_server = std::strcmp(argv[1], "server") == 0;
  if (!logpb::bench::pin(std::atoi(argv[2]))) std::perror("dpdk_bare_pingpong: sched_setaffinity");
  const long iterations = std::max(1L, std::atol(argv[3]));
  try {
    PortOptions po;
    po.eal_args = split(argv[4]);
    Port port(po);
    // A memif client that connects before the server's port has started is turned away for good: the
    // script starts the client once the server says this.
    if (is_server) std::fprintf(stderr, "dpdk_bare_pingpong: port started\n");
    port.wait_link(20);
    if (!is_server) return client(port, iterations);
    return timed ? serve<true>(port, work) : serve<false>(port, work);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpdk_bare_pingpong: %s\n", e.what());
    return 1;
  }
}
