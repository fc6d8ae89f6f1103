// libFuzzer target: the UCX transport's receive path, what a peer's bytes go through before the AM layer
// sees them. UCT's AM handler (UctTransport::on_am: one message, its first 64 bytes the frame and the rest
// the payload) and UCP's (UcpTransport::on_am: a header and a data part of any lengths, or a rendezvous
// AM, which is refused) both hand the message to Inbox::land (ucx/transport.hpp), which checks its shape,
// copies a payload into the segment at the frame's bulk_off and queues the frame; a store's data message
// (seq kChunk) lands its bytes and is never delivered.
//
// The real callbacks of real transport objects, called as UCX calls them from its progress; no UCX runs
// (no worker: poll() is called only when frames are queued, so it never progresses).
// Input: records of a 3-byte header and message bytes. Byte 0: bit 0 picks UCP (else UCT), bit 1 marks
// a UCP message rendezvous, bit 2 sets the frame's bulk_len to the payload's true length (as a well-formed
// sender's is, so the search spends its time on bulk_off and the rest). Bytes 1-2, little-endian, modulo
// 64 + 4096 + 1: the message's length (the most one eager message of the transport carries). For UCP the
// first byte of the message, modulo 81, is the header's length and the rest is the data.
//
// What must hold (a failure aborts, reported by libFuzzer as a crash):
//  - nothing is read outside the message or written outside the segment (ASan: each is a heap allocation
//    of exactly its size);
//  - the counters and the frames delivered are what the header's contract says (ucx/transport.hpp,
//    Inbox::land): short or mismatched messages dropped and counted, data messages landed and never
//    delivered, every other frame delivered once, in order, exactly as received; a payload that fits is in
//    the segment byte for byte afterwards, one that does not leaves the segment as it was;
//  - nothing throws.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/frame.hpp"
#include "ucx/transport.hpp"
#include "ucx/ucp_transport.hpp"
#include "ucx/uct_transport.hpp"

using namespace logpb;

namespace {

constexpr std::uint32_t kSegment = 8192;
constexpr std::size_t kMaxLen = sizeof(am::Frame) + ucx::kPayloadMax;
constexpr int kMaxMessages = 64;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_ucx: %s\n", what);
  std::abort();
}
#define MUST(cond)                       \
  do {                                   \
    if (!(cond)) fail("failed: " #cond); \
  } while (0)

struct Side {
  std::unique_ptr<std::byte[]> segment{new std::byte[kSegment]};
  std::unique_ptr<ucx::UctTransport> uct;
  std::unique_ptr<ucx::UcpTransport> ucp;
  Side() {
    ucx::UctSetup us;
    us.rank = 0;
    us.size = 2;
    us.segment = segment.get();
    us.segment_bytes = kSegment;
    us.peer_alive = [] { return true; };
    uct = std::make_unique<ucx::UctTransport>(std::move(us));
    ucx::UcpSetup ps;
    ps.rank = 0;
    ps.size = 2;
    ps.segment = segment.get();
    ps.segment_bytes = kSegment;
    ps.peer_alive = [] { return true; };
    ucp = std::make_unique<ucx::UcpTransport>(std::move(ps));
  }
};

struct Expect {
  std::uint64_t messages = 0, chunks = 0, short_or_bad = 0, bad_bulk = 0, rndv = 0;
};

// What Inbox::land's contract (ucx/transport.hpp) says becomes of one message: the counters it moves in
// `e`, whether its payload lands in the segment, and how many frames it delivers (0 or 1). A frame is
// exactly 64 bytes: UCT's handler takes the message's first 64 (fewer: refused), UCP's header must be 64.
int expected(Expect& e, bool use_ucp, bool rndv, std::size_t header_len, std::size_t n, const am::Frame& f,
             bool& lands) {
  if (use_ucp && rndv) {
    ++e.rndv;
    return 0;
  }
  ++e.messages;
  const bool frame = use_ucp ? header_len == sizeof(am::Frame) : header_len >= sizeof(am::Frame);
  if (!frame || ((n != 0 || f.seq == ucx::kChunk) && n != f.bulk_len)) {
    ++e.short_or_bad;
    return 0;
  }
  if (n != 0 || f.seq == ucx::kChunk) {
    if (std::uint64_t{f.bulk_off} + n <= kSegment)
      lands = true;
    else
      ++e.bad_bulk;
  }
  if (f.seq == ucx::kChunk) {
    ++e.chunks;
    return 0;
  }
  return 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One pair of transports for the whole run (as a job keeps its own); the checks are on differences.
  static Side side;
  static Expect uct_seen, ucp_seen;
  std::vector<std::byte> before(kSegment);
  std::size_t at = 0;
  for (int m = 0; m < kMaxMessages && at + 3 <= size; ++m) {
    const std::uint8_t how = data[at];
    const std::size_t want = (data[at + 1] | (data[at + 2] << 8)) % (kMaxLen + 1);
    at += 3;
    const std::size_t len = std::min(want, size - at);
    // The message in a buffer of its own exact size: a read past it is ASan's report.
    std::unique_ptr<std::byte[]> msg(new std::byte[len ? len : 1]);
    if (len) std::memcpy(msg.get(), data + at, len);
    at += len;
    const bool use_ucp = how & 1, rndv = how & 2, true_len = how & 4;

    const std::byte* header = msg.get();
    std::size_t header_len = len;
    const std::byte* payload = nullptr;
    std::size_t n = 0;
    if (use_ucp) {
      header_len = len ? std::min<std::size_t>(std::to_integer<std::size_t>(msg[0]) % 81, len) : 0;
      payload = msg.get() + header_len;
      n = len - header_len;
    } else if (len > sizeof(am::Frame)) {
      payload = msg.get() + sizeof(am::Frame);
      n = len - sizeof(am::Frame);
    }
    if (true_len && header_len >= sizeof(am::Frame)) {
      const auto l = static_cast<std::uint32_t>(n);
      std::memcpy(msg.get() + offsetof(am::Frame, bulk_len), &l, sizeof l);
    }
    am::Frame f{};
    if (header_len >= sizeof(am::Frame)) std::memcpy(&f, header, sizeof f);

    // What Inbox::land's contract says becomes of it.
    bool lands = false;
    const int deliver = expected(use_ucp ? ucp_seen : uct_seen, use_ucp, rndv, header_len, n, f, lands);

    std::memcpy(before.data(), side.segment.get(), kSegment);
    ucs_status_t s;
    if (use_ucp) {
      ucp_am_recv_param_t param{};
      param.recv_attr = rndv ? UCP_AM_RECV_ATTR_FLAG_RNDV : 0;
      s = ucx::UcpTransport::on_am(side.ucp.get(), header, header_len, const_cast<std::byte*>(payload), n, &param);
    } else {
      s = ucx::UctTransport::on_am(side.uct.get(), msg.get(), len, 0);
    }
    MUST(s == UCS_OK);

    // The segment: the payload where it fits, nothing else touched.
    if (lands) {
      MUST(n == 0 || std::memcmp(side.segment.get() + f.bulk_off, payload, n) == 0);
      MUST(std::memcmp(side.segment.get(), before.data(), f.bulk_off) == 0);
      MUST(std::memcmp(side.segment.get() + f.bulk_off + n, before.data() + f.bulk_off + n,
                       kSegment - f.bulk_off - n) == 0);
    } else {
      MUST(std::memcmp(side.segment.get(), before.data(), kSegment) == 0);
    }

    // The frame: delivered exactly as received, or not at all (poll() only when one is queued: with an
    // empty queue it would progress a worker this target does not have).
    int got = 0;
    auto sink = [&](const void* p, std::size_t fl) {
      MUST(fl == sizeof(am::Frame));
      MUST(std::memcmp(p, header, sizeof(am::Frame)) == 0);
      ++got;
    };
    if (deliver) {
      got = use_ucp ? side.ucp->poll(sink) : side.uct->poll(sink);
      MUST(got == 1);
    }
  }
  // The counters (cumulative, so once per input is enough: describe() builds JSON and is slow).
  for (const bool use_ucp : {false, true}) {
    const Expect& e = use_ucp ? ucp_seen : uct_seen;
    const auto c = (use_ucp ? side.ucp->describe() : side.uct->describe())["counters"];
    MUST(c["rx_messages"].get<std::uint64_t>() == e.messages);
    // UCP's describe() has no rx_chunks: UCP sends no data messages.
    if (!use_ucp) MUST(c["rx_chunks"].get<std::uint64_t>() == e.chunks);
    MUST(c["rx_short_or_bad"].get<std::uint64_t>() == e.short_or_bad);
    MUST(c["rx_bad_bulk"].get<std::uint64_t>() == e.bad_bulk);
    if (use_ucp) MUST(c["rx_rendezvous_refused"].get<std::uint64_t>() == e.rndv);
  }
  return 0;
}

// Seeds: LOGPB_FUZZ_SEEDS=DIR writes one input per shape the transports send (a small AM, a medium
// store, a store's data message and its frame, over UCT and UCP) and exits.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("LOGPB_FUZZ_SEEDS");
  if (!dir) return 0;
  auto record = [](std::vector<std::uint8_t>& out, std::uint8_t how, const am::Frame& f, std::size_t payload,
                   int ucp_header) {
    std::vector<std::uint8_t> msg(sizeof f + payload, 0x5a);
    std::memcpy(msg.data(), &f, sizeof f);
    if (ucp_header >= 0) {  // UCP: the header's length goes in the message's first byte (seq's low byte)
      msg[0] = static_cast<std::uint8_t>(ucp_header);
    }
    const std::size_t len = msg.size();
    out.push_back(how);
    out.push_back(static_cast<std::uint8_t>(len));
    out.push_back(static_cast<std::uint8_t>(len >> 8));
    out.insert(out.end(), msg.begin(), msg.end());
  };
  am::Frame f{};
  f.magic = am::kMagic;
  f.version = am::kVersion;
  f.kind = am::Kind::request;
  f.dst = 0;
  f.src = 1;
  auto write = [&](const char* name, const std::vector<std::uint8_t>& bytes) {
    std::string path = std::string(dir) + "/" + name;
    FILE* fp = std::fopen(path.c_str(), "wb");
    if (!fp) fail("cannot write a seed");
    std::fwrite(bytes.data(), 1, bytes.size(), fp);
    std::fclose(fp);
  };
  std::vector<std::uint8_t> small, medium, chunks, ucp;
  record(small, 0, f, 0, -1);
  am::Frame m = f;
  m.bulk_len = 200;
  m.bulk_off = 512;
  record(medium, 4, m, 200, -1);
  am::Frame c = f;
  c.seq = ucx::kChunk;
  c.bulk_off = 1000;
  record(chunks, 4, c, 1000, -1);
  am::Frame after = f;
  after.seq = 3;
  after.bulk_len = 1000;
  after.bulk_off = 1000;
  record(chunks, 0, after, 0, -1);
  record(ucp, 1, f, 0, 64);
  record(ucp, 5, m, 200, 64);
  record(ucp, 3, f, 0, 64);
  write("small", small);
  write("medium", medium);
  write("chunks", chunks);
  write("ucp", ucp);
  std::exit(0);
}
