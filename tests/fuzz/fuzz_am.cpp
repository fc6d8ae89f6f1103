// libFuzzer target: AM frame validation (common/am.hpp, Endpoint::deliver) over the real shm transport.
//
// Rank 0's endpoint of a 3-rank job reads frames from the shm rings of ranks 1 and 2. The fuzzer plays
// those peers at the level a peer process really has: it writes whole 64-byte slots into the shared
// rings (any bytes, including a dst, src, kind or bulk range no honest transport would send) and
// publishes them by their sequence word, as ShmTransport::publish does. Between frames the input may make
// rank 0 issue requests, so replies have a window to land in. Input: records of one op byte, then for
// op "frame" 64 bytes of frame.
//
// What must hold, checked here (a failure aborts, which libFuzzer reports as a crash):
//  - a handler only ever sees a frame that passes every check of the AM layer (docs/design.md §4): magic, version,
//    session, addressed to rank 0 from a rank of the job, registered handler, a known kind, and a bulk
//    range inside the segment; a reply only while a request to that peer is outstanding;
//  - every frame written is accounted for exactly once: dispatched, a credit frame, one rejection, or
//    dropped by the transport for naming a source other than the ring's writer;
//  - no more replies are taken from a peer than requests were sent to it; the window stays within
//    0..window, and nothing hangs (replies and credit frames rank 0
//    sends are drained by ranks 1 and 2's own transports).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>

#include "common/am.hpp"
#include "shm/transport.hpp"

using namespace logpb;
using Shm = shm::ShmTransport<shm::Wire>;
using EP = am::Endpoint<Shm>;

namespace {

constexpr std::uint32_t kSession = 0x5eed1234;
constexpr std::uint32_t kSegment = 4096;
constexpr int kRanks = 3, kWindow = 4, kMaxFrames = 256;         // kMaxFrames < ring slots: never a full ring
enum : std::uint16_t { kRequest = 1, kReply = 2, kOneway = 3 };  // 4..31: never registered

[[noreturn]] void fail(const char* what, const am::Frame& f) {
  std::fprintf(stderr, "fuzz_am: %s (kind %d src %u dst %u handler %u bulk %u@%u session %x)\n", what,
               static_cast<int>(f.kind), f.src, f.dst, f.handler, f.bulk_len, f.bulk_off, f.session);
  std::abort();
}

struct World {
  Clock clock{Clock::Options{10, true}};
  shm::ShmRegion region = shm::ShmRegion::create_anonymous(kRanks, {1024, kSegment});
  std::unique_ptr<Shm> t[kRanks];
  std::uint64_t tail[kRanks] = {};  // frames written into ring (r -> 0)
  World() {
    // Each constructor waits for the others' pids: build them side by side.
    auto f1 = std::async(std::launch::async, [&] {
      return std::make_unique<Shm>(region, 1, clock, shm::Emulation{}, shm::ShmOptions{}, 5);
    });
    auto f2 = std::async(std::launch::async, [&] {
      return std::make_unique<Shm>(region, 2, clock, shm::Emulation{}, shm::ShmOptions{}, 5);
    });
    t[0] = std::make_unique<Shm>(region, 0, clock, shm::Emulation{}, shm::ShmOptions{}, 5);
    t[1] = f1.get();
    t[2] = f2.get();
  }
  // What a peer process can do to the ring it writes: any 64 bytes, published by the sequence word last.
  void write_raw(int from, const std::uint8_t* bytes) {
    const auto ring = region.ring(from, 0);
    am::Frame* s = &ring.slots[tail[from] & 1023];
    std::memcpy(reinterpret_cast<char*>(s) + 4, bytes + 4, sizeof(am::Frame) - 4);
    std::atomic_ref<std::uint32_t>(s->seq).store(static_cast<std::uint32_t>(tail[from] + 1), std::memory_order_release);
    ++tail[from];
  }
  // Ranks 1 and 2 read (and discard) whatever rank 0 sent them, so its rings never fill.
  void drain() {
    for (int r = 1; r < kRanks; ++r)
      while (t[r]->poll([](const void*, std::size_t) {}) > 0) {
      }
  }
};

struct Seen {
  std::uint64_t dispatched = 0;
  std::uint64_t requests[kRanks] = {}, replies[kRanks] = {};  // rank 0's requests to each peer, replies taken from it
};
Seen* seen = nullptr;

void check_valid(EP& e, const am::Frame& f) {
  if (f.magic != am::kMagic || f.version != am::kVersion || f.session != kSession)
    fail("dispatched a foreign frame", f);
  if (f.dst != e.rank() || f.src >= e.size()) fail("dispatched a frame of a rank outside the job", f);
  if (f.src == e.rank())
    fail("dispatched a frame from itself (only a get's completion may be, and none was issued)", f);
  if (f.kind != am::Kind::request && f.kind != am::Kind::reply && f.kind != am::Kind::oneway)
    fail("dispatched a frame of no known kind", f);
  if (f.handler != kRequest && f.handler != kReply && f.handler != kOneway)
    fail("dispatched to a handler never registered", f);
  if (f.bulk_len != 0 && (std::uint64_t{f.bulk_off} + f.bulk_len > kSegment))
    fail("dispatched a bulk range outside the segment", f);
  ++seen->dispatched;
}

// Seeds (tests/fuzz/corpus/am): frames as a real endpoint of rank 1 sends them (a request, a reply to a
// request of rank 0, a one-way request asking for credits, a credit frame), read from the ring they
// were published in. Written when LOGPB_FUZZ_SEEDS names a directory, before any fuzzing.
void write_seeds(World& w, const std::string& dir) {
  am::EndpointOptions o;
  o.session = kSession;
  o.size = kRanks;
  o.window = kWindow;
  o.segment_bytes = kSegment;
  o.credits = 4;
  o.rank = 1;
  EP one(*w.t[1], w.clock, o);
  o.rank = 0;
  EP zero(*w.t[0], w.clock, o);
  one.on(kRequest, [](EP& e, const am::Frame& f) { e.reply(f, kReply, 7); });
  auto frame_of = [&](std::uint64_t i) {
    std::string b(sizeof(am::Frame), '\0');
    std::memcpy(b.data(), &w.region.ring(1, 0).slots[i & 1023], sizeof(am::Frame));
    return b;
  };
  auto save = [&](const std::string& name, const std::string& bytes) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
    std::fclose(f);
  };
  std::uint64_t n = 0;  // frames rank 1 published toward rank 0
  one.request(0, kRequest, 1, 2, 3, 4);
  save("request", std::string(1, '\0') + frame_of(n++));
  zero.request(1, kRequest, 5);
  while (one.poll() == 0) {
  }
  save("reply", std::string(1, '\2') + std::string(1, '\0') + frame_of(n++));
  std::string ask;
  for (int i = 0; i < 3; ++i, ++n) {  // one of them asks for credits (once half or fewer are left)
    one.oneway(0, kOneway, i);
    if (w.region.ring(1, 0).slots[n & 1023].flags & am::kCreditAsk) ask = frame_of(n);
  }
  if (ask.empty()) std::abort();
  std::string credit;
  zero.on(kOneway, [](EP&, const am::Frame&) {});
  while (zero.poll() > 0) {  // rank 0 takes the request, the reply and the one-way requests, returns credits
  }
  w.drain();
  save("oneway_credit_ask", std::string(1, '\0') + ask);
  // A credit frame from rank 1: rank 1 returns credits for one-way requests rank 0 sent it.
  for (int i = 0; i < 3; ++i) zero.oneway(1, kOneway, i);
  one.on(kOneway, [](EP&, const am::Frame&) {});
  for (int i = 0; i < 3; ++i)
    while (one.poll() == 0) {
    }
  credit = frame_of(n++);
  save("credit", std::string(1, '\0') + credit);
  w.tail[1] = n;  // the harness writes after what rank 1's transport published
  w.drain();
  while (zero.poll() > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("LOGPB_FUZZ_SEEDS")) {
    World w;
    write_seeds(w, dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World* w = new World;  // one job for the whole run; each input gets a fresh endpoint
  am::EndpointOptions o;
  o.session = kSession;
  o.rank = 0;
  o.size = kRanks;
  o.window = kWindow;
  o.stall_timeout_s = 2;  // a hang becomes a PeerError, reported below
  o.segment_bytes = kSegment;
  o.credits = 16;
  EP ep(*w->t[0], w->clock, o);
  Seen s;
  seen = &s;
  // Handler ids name no kind: any registered one may be named by a request, a reply or a one-way request.
  // Every one checks what reached it, answers a request (the reply is routed on the frame's src) and
  // checks that a reply took a window slot that was held.
  auto handler = [](EP& e, const am::Frame& f) {
    check_valid(e, f);
    if (f.kind == am::Kind::request) e.reply(f, kReply, f.args[0]);
    // A reply is taken only against a request of ours to that peer still waiting for one.
    if (f.kind == am::Kind::reply && ++seen->replies[f.src] > seen->requests[f.src])
      fail("more replies taken than requests sent", f);
  };
  ep.on(kRequest, handler);
  ep.on(kReply, handler);
  ep.on(kOneway, handler);

  std::uint64_t written = 0;
  int frames = 0;
  const std::uint64_t forged_before = w->t[0]->forged_src();
  try {
    for (std::size_t i = 0; i < size && frames < kMaxFrames;) {
      const std::uint8_t op = data[i++];
      switch (op % 4) {
        case 0:
        case 1: {  // a frame from rank 1 (op 0) or rank 2 (op 1); a short tail is zero-padded
          std::uint8_t f[64] = {};
          std::memcpy(f, data + i, std::min<std::size_t>(64, size - i));
          i += std::min<std::size_t>(64, size - i);
          w->write_raw(1 + op % 2, f);
          ++written;
          ++frames;
          while (ep.poll() > 0) {
          }
          break;
        }
        case 2: {  // rank 0 asks rank 1 or 2 something: a window slot the next reply may fill
          const int to = 1 + (op >> 2) % 2;
          if (ep.outstanding(to) < kWindow) {
            ep.request(to, kRequest, op);
            ++s.requests[to];
          }
          break;
        }
        case 3:
          ep.poll();
          break;
      }
      w->drain();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_am: the endpoint threw: %s\n", e.what());
    std::abort();
  }
  while (ep.poll() > 0) {
  }
  w->drain();
  const am::Counters c = ep.counters();
  // A frame whose src is not the ring's writer is dropped by the transport (ShmTransport::poll) before the
  // endpoint sees it: accounted for there.
  const std::uint64_t forged = w->t[0]->forged_src() - forged_before;
  const std::uint64_t accounted = s.dispatched + c.credit_frames + c.rejected_total() + forged;
  if (accounted != written) {
    std::fprintf(stderr, "fuzz_am: %llu frames written, %llu dispatched + %llu credit + %llu rejected + %llu forged\n",
                 static_cast<unsigned long long>(written), static_cast<unsigned long long>(s.dispatched),
                 static_cast<unsigned long long>(c.credit_frames), static_cast<unsigned long long>(c.rejected_total()),
                 static_cast<unsigned long long>(forged));
    std::abort();
  }
  for (int r = 1; r < kRanks; ++r)
    if (ep.outstanding(r) < 0 || ep.outstanding(r) > kWindow) std::abort();
  return 0;
}
