// libFuzzer target: the libfabric transport's receive path (ofi/transport.hpp: handle, accept): a message's
// length against the 64-byte frame, a store's payload against the frame's bulk_len and bulk_off, copied
// into the segment; a store's data messages (seq kChunk) copied and never delivered; receive buffers
// posted again.
//
// Real messages through a real provider, in one process: logpbench's own endpoint (ofi::Connection of a
// one-rank job over libfabric's shm provider, rdm) and a second, raw endpoint of the same provider that
// sends the fuzzer's bytes to it with fi_send, as a peer would. The transport takes them with fi_cq_read.
// Input: records of a 2-byte little-endian word and message bytes. The word's low 15 bits, modulo
// 64 + 4096 + 1, are the message's length (the most a peer's transport sends in one message; longer ones
// would be the provider's to truncate); bit 15 sets the frame's bulk_len to the payload's true length, as
// a well-formed sender's is, so the search spends its time on the rest (bulk_off above all).
//
// What must hold (a failure aborts, reported by libFuzzer as a crash):
//  - no byte is written outside the segment (built with ASan: the segment is a heap allocation of exactly
//    its size, so a payload copied past it is a report);
//  - every message sent is received (nothing stuck, no hang), the transport delivers at most one frame per
//    message received, and a frame that is delivered is exactly one frame long;
//  - the transport never throws: whatever a peer sends is delivered or refused and counted.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/frame.hpp"
#include "common/library_handlers.hpp"
#include "common/ranks.hpp"
#include "ofi/connect.hpp"

using namespace logpb;

namespace {

constexpr std::uint32_t kSegment = 8192;
constexpr int kMaxMessages = 64;
constexpr std::size_t kMaxLen = sizeof(am::Frame) + ofi::kPayloadMax;
constexpr const char* kProvider = "shm";

[[noreturn]] void die(const char* what, long rc) {
  std::fprintf(stderr, "fuzz_ofi: %s failed: %s (%ld)\n", what, fi_strerror(static_cast<int>(-rc)), rc);
  std::abort();
}
void check(long rc, const char* what) {
  if (rc != 0) die(what, rc);
}

// A bare peer: one rdm endpoint of the provider, its own CQ and AV, the transport's address inserted.
struct RawPeer {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fid_mr* mr = nullptr;
  fi_addr_t dest = FI_ADDR_UNSPEC;
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(kMaxLen);
  void* desc = nullptr;

  explicit RawPeer(const std::vector<std::uint8_t>& name) {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(kProvider);
    check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), "fi_getinfo");
    fi_freeinfo(hints);
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
    check(fi_domain(fabric, info, &domain, nullptr), "fi_domain");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size = 256;
    check(fi_cq_open(domain, &cq_attr, &cq, nullptr), "fi_cq_open");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain, &av_attr, &av, nullptr), "fi_av_open");
    check(fi_endpoint(domain, info, &ep, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    check(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
    check(fi_enable(ep), "fi_enable");
    if (fi_av_insert(av, name.data(), 1, &dest, 0, nullptr) != 1) die("fi_av_insert", -FI_EINVAL);
    if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
      check(fi_mr_reg(domain, buf.data(), buf.size(), FI_SEND, 0, 0, 0, &mr, nullptr), "fi_mr_reg");
      desc = fi_mr_desc(mr);
    }
  }

  // Sends one message and waits for its completion, driving the transport meanwhile (shm progresses
  // inside the receiver's calls too).
  template <class Drive>
  void send(const std::uint8_t* b, std::size_t n, Drive&& drive) {
    std::memcpy(buf.data(), b, n);
    fi_context2 ctx{};
    for (long k = 0;; ++k) {
      const ssize_t r = fi_send(ep, buf.data(), n, desc, dest, &ctx);
      if (r == 0) break;
      if (r != -FI_EAGAIN) die("fi_send", r);
      drive();
      reap();
      if (k > 10000000) die("fi_send (never taken)", r);
    }
    for (long k = 0; !reap(); ++k) {
      drive();
      if (k > 10000000) die("fi_cq_read (no send completion)", -FI_EAGAIN);
    }
  }
  bool reap() {
    fi_cq_entry e[4];
    const ssize_t r = fi_cq_read(cq, e, 4);
    if (r > 0) return true;
    if (r != -FI_EAGAIN) die("fi_cq_read (raw peer)", r);
    return false;
  }
};

struct Sink {
  std::uint64_t delivered = 0;
  void operator()(const void*, std::size_t n) {
    if (n != sizeof(am::Frame)) std::abort();
    ++delivered;
  }
};

struct World {
  Ranks ranks = Ranks::single();
  std::unique_ptr<ofi::Connection> conn;
  std::unique_ptr<RawPeer> peer;
  World() {
    ofi::TransportOptions o;
    o.provider = kProvider;
    o.segment_bytes = kSegment;
    conn = std::make_unique<ofi::Connection>(ranks, o);
    peer = std::make_unique<RawPeer>(conn->address());
  }
};

World& world() {
  static World* w = new World;  // never torn down: libFuzzer exits from inside a run
  return *w;
}

// Seeds (tests/fuzz/corpus/ofi), in the input's record format: the messages a peer's transport sends (a
// small AM, a medium store's frame and payload, a larger store's data message and its frame). Written when
// LOGPB_FUZZ_SEEDS names a directory.
void write_seeds(const std::string& dir) {
  auto frame = [](std::uint32_t seq, std::uint32_t bulk_len, std::uint32_t bulk_off) {
    am::Frame f{};
    f.seq = seq;
    f.magic = am::kMagic;
    f.version = am::kVersion;
    f.kind = am::Kind::request;
    f.session = 0x5eed1234;
    f.src = 1;
    f.dst = 0;
    f.handler = 2;
    f.bulk_len = bulk_len;
    f.bulk_off = bulk_off;
    f.args[0] = 42;
    return f;
  };
  auto record = [](std::string& out, const am::Frame& f, std::uint32_t payload) {
    const std::size_t n = sizeof f + payload;
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>(n >> 8);
    out.append(reinterpret_cast<const char*>(&f), sizeof f);
    for (std::uint32_t i = 0; i < payload; ++i) out += static_cast<char>(i * 131 + 7);
  };
  auto save = [&](const std::string& name, const std::string& out) {
    FILE* fp = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!fp || std::fwrite(out.data(), 1, out.size(), fp) != out.size()) std::abort();
    std::fclose(fp);
  };
  std::string am, medium, chunked;
  record(am, frame(0, 0, 0), 0);
  record(medium, frame(0, 100, 64), 100);
  record(chunked, frame(ofi::kChunk, ofi::kPayloadMax, 0), ofi::kPayloadMax);
  record(chunked, frame(ofi::kChunk, 904, ofi::kPayloadMax), 904);
  record(chunked, frame(1, 5000, 0), 0);
  save("am", am);
  save("medium_store", medium);
  save("chunked_store", chunked);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  drop_library_crash_handlers();  // before libFuzzer's own: a crash must be libFuzzer's report, not PSM's exit
  if (const char* dir = std::getenv("LOGPB_FUZZ_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  ofi::Transport& t = w.conn->transport();
  Sink sink;
  const std::uint64_t recvs0 = t.counters().recvs;
  std::uint64_t sent = 0;
  static std::uint8_t msg[kMaxLen];
  try {
    auto drive = [&] { t.poll(sink); };
    for (std::size_t i = 0; i + 2 <= size && sent < kMaxMessages;) {
      const std::size_t word = data[i] | (data[i + 1] << 8);
      i += 2;
      const std::size_t n = std::min((word & 0x7fff) % (kMaxLen + 1), size - i);
      if (n == 0) continue;  // a zero-length message carries nothing to parse
      std::memcpy(msg, data + i, n);
      if ((word & 0x8000) && n >= sizeof(am::Frame)) {
        const std::uint32_t payload = static_cast<std::uint32_t>(n - sizeof(am::Frame));
        std::memcpy(msg + offsetof(am::Frame, bulk_len), &payload, sizeof payload);
      }
      w.peer->send(msg, n, drive);
      i += n;
      ++sent;
    }
    for (long k = 0; t.counters().recvs - recvs0 < sent; ++k) {
      t.poll(sink);
      if (k > 10000000) {
        std::fprintf(stderr, "fuzz_ofi: %llu messages never arrived\n",
                     static_cast<unsigned long long>(sent - (t.counters().recvs - recvs0)));
        std::abort();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_ofi: the transport threw: %s\n", e.what());
    std::abort();
  }
  if (t.counters().recvs - recvs0 != sent || sink.delivered > sent) std::abort();
  return 0;
}
