// libFuzzer target: the DPDK transport's receive path (dpdk/transport.cpp, Transport::accept): Ethernet
// framing, the wire header, per-source sequence numbers, bulk chunks reassembled into the segment, medium
// AMs, get requests served from inside poll().
//
// Real mbufs through a real PMD, in one process with an in-memory EAL without hugepages: a net_ring port,
// whose tx ring is its own rx ring. The fuzzer's frames are written into mbufs from the port's pool and
// sent into the ring; the transport (rank 1 of a 3-rank job, both peers behind that port) takes them with
// rte_eth_rx_burst as it would from a NIC. Whatever it sends itself (get data and completions for ranks 0
// and 2) comes back through the loopback and must be refused as not addressed to it.
// Input: records of a 2-byte little-endian length (bit 15: split the frame over two chained mbufs) and
// that many bytes of Ethernet frame.
//
// What must hold (a failure aborts, reported by libFuzzer as a crash):
//  - no byte is written outside the segment: built with ASan, the cache line on either side of the segment
//    is poisoned, so a chunk or medium AM copied past it is a report;
//  - every frame put into the ring is taken out again (nothing stuck, no hang), and the transport
//    counts at least as many received frames as it delivers AMs.
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dpdk/port.hpp"
#include "dpdk/transport.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define LOGPB_ASAN 1
#endif
#endif

using namespace logpb;

namespace {

constexpr std::uint32_t kSession = 0x5eed1234;
constexpr std::uint32_t kSegment = 8192;
// The segment's neighbours in DPDK's heap are malloc element headers (one cache line), touched only by
// DPDK's own (uninstrumented) allocator: a write there from the transport is an overflow.
constexpr std::size_t kGuard = 64;
constexpr int kMaxFrames = 64;

struct World {
  std::unique_ptr<dpdk::Port> port;
  World() {
    dpdk::PortOptions po;
    // --no-huge implies legacy memory, which --in-memory refuses: a private prefix and no shared config.
    po.eal_args = {"-l",
                   "0",
                   "--no-huge",
                   "--no-shconf",
                   "--file-prefix=logpb-fuzz-" + std::to_string(::getpid()),
                   "--no-pci",
                   "--no-telemetry",
                   "--vdev=net_ring0"};
    po.port_id = 0;
    po.rx_ring = 1024;
    po.tx_ring = 1024;
    port = std::make_unique<dpdk::Port>(po);
    port->wait_link(5);
    // The EAL is never torn down (libFuzzer exits from inside a run): remove its empty runtime directory.
    std::atexit([] { ::rmdir(rte_eal_get_runtime_dir()); });
  }
};

// Puts one frame into the loopback ring, as a wire would hand it to the port. False if the pool or the
// ring is full (never, at these sizes: a failure of the harness, not of the transport).
bool inject(dpdk::Port& port, const std::uint8_t* b, std::size_t n, bool split) {
  rte_mbuf* m = rte_pktmbuf_alloc(port.pool());
  if (!m) return false;
  const std::size_t first = split ? n / 2 : n;
  auto* p = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(first)));
  if (!p && first) {
    rte_pktmbuf_free(m);
    return false;
  }
  if (first) std::memcpy(p, b, first);
  if (split) {
    rte_mbuf* m2 = rte_pktmbuf_alloc(port.pool());
    auto* p2 =
        m2 ? reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m2, static_cast<std::uint16_t>(n - first))) : nullptr;
    if (!m2 || (!p2 && n > first) || rte_pktmbuf_chain(m, m2) != 0) {
      if (m2) rte_pktmbuf_free(m2);
      rte_pktmbuf_free(m);
      return false;
    }
    if (n > first) std::memcpy(p2, b + first, n - first);
  }
  if (rte_eth_tx_burst(port.id(), 0, &m, 1) != 1) {
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

struct Sink {
  std::uint64_t delivered = 0;
  void operator()(const void*, std::size_t n) {
    if (n != sizeof(am::Frame)) std::abort();
    ++delivered;
  }
};

dpdk::Transport<> make_rank(dpdk::Port& port, int rank, int a, int b) {
  std::vector<dpdk::PeerAddress> peers(2);
  peers[0].rank = a;
  peers[1].rank = b;
  for (auto& p : peers) {
    const std::uint8_t mac[6] = {0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(0x10 + p.rank)};
    std::memcpy(p.mac, mac, 6);
    p.rx_ring_sources = 2;
  }
  dpdk::TransportOptions to;
  to.session = kSession;
  to.rank = rank;
  to.size = 3;
  to.segment_bytes = kSegment;
  return dpdk::Transport<>({&port}, peers, to, [] { return true; });
}

// Seeds (tests/fuzz/corpus/dpdk): what rank 0's transport really puts on the wire toward rank 1 (a small
// AM, a medium store, a chunked store, a get request), taken off the loopback before any transport reads
// it. Written when LOGPB_FUZZ_SEEDS names a directory, before any fuzzing.
void write_seeds(dpdk::Port& port, const std::string& dir) {
  dpdk::Transport<> zero = make_rank(port, 0, 1, 2);
  std::vector<std::uint8_t> data(3 * zero.medium_max());
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 131 + 7);
  am::Frame f{};
  f.magic = am::kMagic;
  f.version = am::kVersion;
  f.kind = am::Kind::request;
  f.session = kSession;
  f.src = 0;
  f.dst = 1;
  f.handler = 2;
  f.args[0] = 42;
  auto capture = [&](const std::string& name, auto&& send) {
    if (!send()) std::abort();
    std::string out;
    rte_mbuf* m[64];
    const std::uint16_t n = rte_eth_rx_burst(port.id(), 0, m, 64);
    for (std::uint16_t i = 0; i < n; ++i) {
      const std::uint16_t len = rte_pktmbuf_data_len(m[i]);
      out += static_cast<char>(len & 0xff);
      out += static_cast<char>(len >> 8);
      out.append(rte_pktmbuf_mtod(m[i], const char*), len);
      rte_pktmbuf_free(m[i]);
    }
    FILE* fp = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!fp || std::fwrite(out.data(), 1, out.size(), fp) != out.size()) std::abort();
    std::fclose(fp);
  };
  capture("am", [&] { return zero.try_send(f); });
  capture("medium_store", [&] { return zero.try_store(f, data.data(), 100, 64); });
  capture("chunked_store",
          [&] { return zero.try_store(f, data.data(), static_cast<std::uint32_t>(data.size()), 512); });
  am::Frame g = f;  // a get's completion: a reply from rank 1 (whose segment is read) to rank 0
  g.kind = am::Kind::reply;
  g.src = 1;
  g.dst = 0;
  g.bulk_len = 1000;
  g.bulk_off = 0;
  capture("get_request", [&] { return zero.try_get(g, 256, 1000, 0); });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("LOGPB_FUZZ_SEEDS")) {
    World w;
    write_seeds(*w.port, dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World* w = new World;
  dpdk::Port& port = *w->port;
  dpdk::Transport<> t = make_rank(port, 1, 0, 2);
  std::byte* seg = t.segment().data();
#ifdef LOGPB_ASAN
  ASAN_POISON_MEMORY_REGION(seg - kGuard, kGuard);
  ASAN_POISON_MEMORY_REGION(seg + kSegment, kGuard);
#endif
  Sink sink;
  std::uint64_t injected = 0;
  int frames = 0;
  for (std::size_t i = 0; i + 2 <= size && frames < kMaxFrames;) {
    const unsigned word = data[i] | (data[i + 1] << 8);
    i += 2;
    const std::size_t n = std::min<std::size_t>(word & 0x7ff, size - i);
    if (!inject(port, data + i, n, (word & 0x8000) != 0)) {
      std::fprintf(stderr, "fuzz_dpdk: the harness could not put a frame into the ring\n");
      std::abort();
    }
    i += n;
    ++injected;
    ++frames;
  }
  // Everything injected, and everything the transport sends (get data and completions, looped back),
  // comes out of the ring. A poll after the ring is empty returns 0 with rx unchanged.
  try {
    for (long k = 0;; ++k) {
      const std::uint64_t want = injected + t.counters().tx;
      if (t.counters().rx >= want) break;
      t.poll(sink);
      if (k > 1000000) {
        std::fprintf(stderr, "fuzz_dpdk: %llu frames never came out of the ring\n",
                     static_cast<unsigned long long>(want - t.counters().rx));
        std::abort();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_dpdk: the transport threw: %s\n", e.what());
    std::abort();
  }
  const dpdk::Counters c = t.counters();
  if (c.delivered != sink.delivered || c.delivered > c.rx) std::abort();
  if (c.rx != injected + c.tx) std::abort();
#ifdef LOGPB_ASAN
  ASAN_UNPOISON_MEMORY_REGION(seg - kGuard, kGuard);
  ASAN_UNPOISON_MEMORY_REGION(seg + kSegment, kGuard);
#endif
  return 0;
}
