#include "dpdk/floor.hpp"

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/frame.hpp"
#include "common/results.hpp"
#include "dpdk/wire.hpp"

namespace logpb::dpdk {
namespace {

// The small AM's frame on the wire: Ethernet header, the transport's header, one AM frame.
constexpr std::uint32_t kFrameBytes = sizeof(rte_ether_hdr) + sizeof(WireHdr) + sizeof(am::Frame);
constexpr std::uint8_t kRequest = 0, kStop = 1;  // the first byte after the Ethernet header

rte_mbuf* floor_frame(Port& port, const std::uint8_t peer_mac[6], std::uint8_t kind) {
  rte_mbuf* m = rte_pktmbuf_alloc(port.pool());
  if (!m) return nullptr;
  auto* b = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, kFrameBytes));
  if (!b) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  auto* eth = reinterpret_cast<rte_ether_hdr*>(b);
  std::memcpy(eth->dst_addr.addr_bytes, peer_mac, 6);
  std::memcpy(eth->src_addr.addr_bytes, port.mac(), 6);
  eth->ether_type = rte_cpu_to_be_16(kFloorEtherType);
  std::memset(b + sizeof(rte_ether_hdr), 0, kFrameBytes - sizeof(rte_ether_hdr));
  b[sizeof(rte_ether_hdr)] = kind;
  return m;
}

bool is_floor(rte_mbuf* m) {
  return rte_pktmbuf_data_len(m) >= sizeof(rte_ether_hdr) + 1 &&
         rte_pktmbuf_mtod(m, rte_ether_hdr*)->ether_type == rte_cpu_to_be_16(kFloorEtherType);
}

void send_one(Port& port, rte_mbuf* m) {
  while (rte_eth_tx_burst(port.id(), 0, &m, 1) != 1) {
  }
}

// Reflects the requester's frames, each with its addresses swapped, until its stop frame or the deadline.
void reflect(Port& port, std::uint64_t deadline) {
  rte_mbuf* rx[32];
  rte_mbuf* tx[32];
  for (std::uint64_t idle = 0;; ++idle) {
    const std::uint16_t n = rte_eth_rx_burst(port.id(), 0, rx, 32);
    if (n == 0) {
      if ((idle & 1023) == 1023 && __rdtsc() > deadline) return;
      continue;
    }
    bool stop = false;
    std::uint16_t out = 0;
    for (std::uint16_t i = 0; i < n; ++i) {
      if (!is_floor(rx[i]) || rte_pktmbuf_mtod_offset(rx[i], std::uint8_t*, sizeof(rte_ether_hdr))[0] == kStop) {
        stop |= is_floor(rx[i]);
        rte_pktmbuf_free(rx[i]);
        continue;
      }
      auto* eth = rte_pktmbuf_mtod(rx[i], rte_ether_hdr*);
      std::swap(eth->dst_addr, eth->src_addr);
      tx[out++] = rx[i];
    }
    std::uint16_t sent = 0;
    while (sent < out) sent += rte_eth_tx_burst(port.id(), 0, tx + sent, static_cast<std::uint16_t>(out - sent));
    if (stop) return;
  }
}

}  // namespace

nlohmann::json measure_floor(Port& port, const std::uint8_t peer_mac[6], bool requester, const Clock& clock,
                             const FloorOptions& opt) {
  if (!requester) {
    reflect(port, __rdtsc() + clock.cycles(opt.replier_wait_s * 1e9));
    return nullptr;
  }
  const int warmup = opt.iterations / 10 + 100, total = warmup + opt.iterations;
  std::vector<std::uint64_t> cyc;
  cyc.reserve(static_cast<std::size_t>(total));
  const std::uint64_t start = __rdtsc(), budget = clock.cycles(opt.budget_ms * 1e6);
  std::string why;
  rte_mbuf* rx[32];
  for (int k = 0; k < total && why.empty(); ++k) {
    if (k > warmup && __rdtsc() - start > budget) break;
    const std::uint64_t wait = clock.cycles(k == 0 ? 1e9 : opt.reply_wait_ms * 1e6);
    const std::uint64_t t0 = tsc::now();
    rte_mbuf* m = floor_frame(port, peer_mac, kRequest);
    if (!m) {
      why = "rte_pktmbuf_alloc failed";
      break;
    }
    send_one(port, m);
    bool answered = false;
    for (std::uint64_t spins = 0; !answered;) {
      const std::uint16_t n = rte_eth_rx_burst(port.id(), 0, rx, 32);
      for (std::uint16_t i = 0; i < n; ++i) {
        answered |= is_floor(rx[i]);
        rte_pktmbuf_free(rx[i]);
      }
      if (!answered && (++spins & 1023) == 1023 && __rdtsc() - t0 > wait) {
        why = "no reply within " + std::to_string(static_cast<int>(k == 0 ? 1000 : opt.reply_wait_ms)) +
              " ms (a lost frame)";
        break;
      }
    }
    if (answered) cyc.push_back(tsc::now_end() - t0);
  }
  if (rte_mbuf* stop = floor_frame(port, peer_mac, kStop)) send_one(port, stop);
  const std::string loop =
      "a bare DPDK ping-pong between ranks 0 and 1 before the transport exists: one mbuf of the small AM's "
      "size, rte_eth_tx_burst, rte_eth_rx_burst until it returns; the replier swaps the addresses and sends it "
      "back; no AM layer, this job's ports and cores";
  return transport_floor_json(clock, cyc, static_cast<std::size_t>(warmup), loop, static_cast<int>(kFrameBytes), why);
}

}  // namespace logpb::dpdk
