// The DPDK transport's datapath without the AM layer or a second process: both ends of a memif pair in
// one process (one EAL, two ports), plus net_ring, whose tx ring is its own rx ring (a loopback that
// keeps sent mbufs until they are received). Checks:
//  - medium stores (one frame) land byte for byte at sizes around the medium/chunked switch;
//  - a medium frame whose data would fall outside the receiver's segment is counted and dropped, and
//    nothing of it is copied;
//  - local completion: memif (copy mode) completes inside tx_burst; net_ring only once the frame has
//    been received and freed, and tx_completed() must not claim it earlier;
//  - max_credits(): the receiver's ring bounds the credits, an impossible window is refused by name;
//  - Transport<Plain> refuses injection (Transport<Rigged> has it).
// Prints what each PMD's local completion meant. Exit 0: all held; 1: a check failed.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "dpdk/port.hpp"
#include "dpdk/transport.hpp"

using namespace logpb;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

struct Received {
  std::vector<am::Frame> frames;
  void operator()(const void* p, std::size_t n) {
    am::Frame f;
    std::memcpy(&f, p, std::min(n, sizeof f));
    frames.push_back(f);
  }
};

am::Frame frame(std::uint32_t session, std::uint16_t handler) {
  am::Frame f{};
  f.magic = am::kMagic;
  f.version = am::kVersion;
  f.kind = am::Kind::oneway;
  f.session = session;
  f.handler = handler;
  f.src = 0;  // every frame here goes from rank 0 (ta, or the loopback) to rank 1
  f.dst = 1;
  return f;
}

// Polls rx until `want` more frames were delivered (or a generous number of empty polls).
template <class Rig>
void receive(dpdk::Transport<Rig>& t, Received& r, std::size_t want) {
  const std::size_t goal = r.frames.size() + want;
  for (long i = 0; i < 50000000L && r.frames.size() < goal; ++i) t.poll(r);
}

void fill(std::vector<std::byte>& v, std::uint32_t n, std::uint64_t seed) {
  v.resize(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
}

// Both ends of one link in this process, with their transports: ta sends (rank 0), tb receives (rank 1).
struct Ends {
  const std::string& name;
  dpdk::Transport<>& ta;
  dpdk::Transport<>& tb;
  Received& rb;
  std::uint32_t session;
};

void first_frame(const Ends& e) {
  // The memif server (a) transmits into buffers the client (b) supplies from its rx path: nothing goes
  // from a to b until b has polled once. (af_xdp: the link may take a moment to pass frames.)
  for (long i = 0; i < 10000000L; ++i) {
    if (e.ta.try_send(frame(e.session, 2))) break;
    e.tb.poll(e.rb);
  }
  receive(e.tb, e.rb, 1);
  check(e.rb.frames.size() == 1, e.name + " pair carries a frame (sent " + std::to_string(e.ta.counters().tx) +
                                     ", received " + std::to_string(e.tb.counters().rx) + ", port stats " +
                                     e.tb.describe()["port_stats"].dump() + ")");
}

// Medium stores across the switch: one frame up to medium_max, chunks beyond.
void medium_stores(const Ends& e) {
  const std::uint32_t mm = e.ta.medium_max();
  check(mm == 1500 - 20 - 64, "medium_max is MTU - wire header - AM frame: " + std::to_string(mm));
  std::vector<std::byte> data;
  std::uint32_t off = 100;
  for (std::uint32_t n : {1u, 8u, mm - 1, mm, mm + 1, 3 * mm}) {
    fill(data, n, n * 7919ull + 1);
    const auto before = e.ta.counters().tx;
    am::Frame f = frame(e.session, 3);
    f.args[0] = n;
    bool sent = false;
    for (int i = 0; i < 1000000 && !sent; ++i) sent = e.ta.try_store(f, data.data(), n, off);
    receive(e.tb, e.rb, 1);
    const std::uint64_t frames = e.ta.counters().tx - before;
    const bool landed = !e.rb.frames.empty() && e.rb.frames.back().args[0] == n && e.rb.frames.back().bulk_len == n &&
                        e.rb.frames.back().bulk_off == off &&
                        std::memcmp(e.tb.segment().data() + off, data.data(), n) == 0;
    check(sent && landed,
          "store of " + std::to_string(n) + " bytes lands exactly, in " + std::to_string(frames) + " frame(s)");
    check((n <= mm) == (frames == 1),
          "  " + std::string(n <= mm ? "medium: one frame" : "chunked: more than one frame"));
    off += n + 13;
  }
}

// A medium frame whose data would land outside the receiver's segment: counted, dropped, not copied.
void out_of_segment(const Ends& e) {
  const auto seg = e.tb.segment();
  std::vector<std::byte> snapshot(seg.begin(), seg.end());
  std::vector<std::byte> data;
  fill(data, 64, 99);
  const std::size_t delivered = e.rb.frames.size();
  for (std::uint32_t bad_off :
       {static_cast<std::uint32_t>(seg.size()) - 10, static_cast<std::uint32_t>(seg.size()) + 4096, 0xffffffc0u}) {
    am::Frame f = frame(e.session, 3);
    bool sent = false;
    for (int i = 0; i < 1000000 && !sent; ++i) sent = e.ta.try_store(f, data.data(), 64, bad_off);
  }
  // Then a good one, so we know the bad ones were processed before it.
  am::Frame f = frame(e.session, 4);
  while (!e.ta.try_send(f)) {
  }
  receive(e.tb, e.rb, 1);
  check(e.tb.counters().medium_rejected == 3,
        "3 out-of-segment medium frames rejected: " + std::to_string(e.tb.counters().medium_rejected));
  check(e.rb.frames.size() == delivered + 1 && e.rb.frames.back().handler == 4,
        "none of them delivered, the next frame is");
  check(std::memcmp(snapshot.data(), seg.data(), seg.size()) == 0, "the segment is untouched");
}

// Local completion: tracked small AM, medium and chunked stores.
void local_completion(const Ends& e) {
  std::vector<std::byte> data;
  for (std::uint32_t n : {0u, 8u, 4 * e.ta.medium_max()}) {
    e.ta.track_next();
    am::Frame f = frame(e.session, 3);
    fill(data, n ? n : 1, 5);
    bool sent = false;
    for (int i = 0; i < 1000000 && !sent; ++i) sent = n ? e.ta.try_store(f, data.data(), n, 0) : e.ta.try_send(f);
    const std::uint64_t op = e.ta.tx_posted();
    std::uint64_t done = 0;
    for (long i = 0; i < 10000000L && (done = e.ta.tx_completed()) < op; ++i) e.tb.poll(e.rb);
    check(sent && done >= op, e.name + ": tracked operation " + std::to_string(op) + " (" + std::to_string(n) +
                                  " bytes) locally complete: tx_completed " + std::to_string(done));
    receive(e.tb, e.rb, 1);
  }
  const auto lc = e.ta.describe()["local_completion"];
  std::printf("%s local completion: %s\n", e.name.c_str(), lc.dump().c_str());
  check(lc["tracked"] == 3 && lc["completed"] == 3, e.name + ": every tracked operation completed");
}

// Credits: the receiver's ring less two windows, a burst and a margin; an impossible window refused.
void credits(dpdk::Transport<>& ta, const dpdk::Port& a) {
  const int credits = ta.max_credits(32);
  check(credits == a.rx_ring() - 64 - 32 - 4,
        "max_credits(32) with a " + std::to_string(a.rx_ring()) + "-frame ring: " + std::to_string(credits));
  bool refused = false;
  try {
    ta.max_credits(a.rx_ring() / 2);
  } catch (const UsageError& e) {
    refused = std::string(e.what()).find("--rx-ring") != std::string::npos &&
              std::string(e.what()).find("--window") != std::string::npos;
    std::printf("      refused: %s\n", e.what());
  }
  check(refused, "a window of half the rx ring is refused, naming --rx-ring and --window");
}

// The plain datapath has no test machinery: injection asked of it is refused, naming the policy that has it.
void plain_refuses_injection(dpdk::Port& a, const dpdk::Port& b, const dpdk::TransportOptions& to) {
  bool plain_refused = false;
  try {
    dpdk::TransportOptions inject = to;
    inject.drop_rate = 0.1;
    dpdk::Transport<> plain(a, b.mac(), inject, [] { return true; });
  } catch (const std::logic_error& e) {
    plain_refused = std::string(e.what()).find("Rigged") != std::string::npos;
    std::printf("      refused: %s\n", e.what());
  }
  check(plain_refused, "Transport<Plain> refuses --drop-rate, naming Transport<Rigged>");
}

// net_ring: tx enqueues the mbuf itself on the ring its own rx reads, so a sent frame is complete only
// once it has been received and freed. tx_completed() must wait for that.
void ring_completion(const dpdk::PortOptions& pa, const dpdk::TransportOptions& to) {
  dpdk::PortOptions pr = pa;
  pr.port_id = 2;
  dpdk::Port r(pr);
  dpdk::TransportOptions tor = to;
  tor.reflector = true;  // a loopback: our own frames come back, as from a reflector (rank 1)
  dpdk::Transport<dpdk::Rigged> tr(r, r.mac(), tor, [] { return true; });
  Received rr;
  tr.track_next();
  am::Frame f = frame(to.session, 5);
  while (!tr.try_send(f)) {
  }
  const std::uint64_t op = tr.tx_posted();
  const std::uint64_t early = tr.tx_completed();
  check(early < op, "net_ring: not complete while the frame sits in the ring (tx_completed " + std::to_string(early) +
                        " < " + std::to_string(op) + ")");
  receive(tr, rr, 1);
  const std::uint64_t later = tr.tx_completed();
  check(rr.frames.size() == 1 && later >= op,
        "net_ring: complete once received and freed (tx_completed " + std::to_string(later) + ")");
  std::printf("net_ring local completion: %s\n", tr.describe()["local_completion"].dump().c_str());
}

// Ports 0 and 1 are the two ends of one link; port 2, if `ring`, is a net_ring loopback.
void pair_test(const std::string& name, const std::vector<std::string>& vdevs, bool ring) {
  dpdk::PortOptions pa;
  pa.eal_args = {"-l", "0", "--in-memory", "--no-pci", "--no-telemetry"};
  for (const auto& v : vdevs) pa.eal_args.push_back("--vdev=" + v);
  if (ring) pa.eal_args.push_back("--vdev=net_ring0");
  pa.port_id = 0;
  dpdk::Port a(pa);
  dpdk::PortOptions pb = pa;
  pb.port_id = 1;
  dpdk::Port b(pb);
  a.wait_link(10);
  b.wait_link(10);
  dpdk::TransportOptions to;
  to.session = 0x5eed;
  to.segment_bytes = 1 << 16;
  auto alive = [] { return true; };
  dpdk::TransportOptions tob = to;
  tob.rank = 1;
  dpdk::Transport<> ta(a, b.mac(), to, alive), tb(b, a.mac(), tob, alive);
  Received rb;
  const Ends ends{name, ta, tb, rb, to.session};
  first_frame(ends);
  medium_stores(ends);
  out_of_segment(ends);
  local_completion(ends);
  credits(ta, a);
  plain_refuses_injection(a, b, to);
  if (ring) ring_completion(pa, to);
}

}  // namespace

// usage: dpdk_pair_test                 memif pair in one process, and net_ring
//        dpdk_pair_test afxdp IF_A IF_B  af_xdp on the two ends of a veth pair (the caller makes it)
int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress stays visible if a PMD hangs
  try {
    if (argc == 4 && std::string(argv[1]) == "afxdp") {
      pair_test("af_xdp",
                {std::string("net_af_xdp0,iface=") + argv[2] + ",start_queue=0,queue_count=1",
                 std::string("net_af_xdp1,iface=") + argv[3] + ",start_queue=0,queue_count=1"},
                false);
    } else {
      const std::string sock = "/run/logpb-pairtest-" + std::to_string(getpid()) + ".sock";
      pair_test("memif", {"net_memif0,role=server,id=0,socket=" + sock, "net_memif1,role=client,id=0,socket=" + sock},
                true);
    }
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf(failures ? "%d check(s) failed\n" : "all checks held\n", failures);
  return failures ? 1 : 0;
}
