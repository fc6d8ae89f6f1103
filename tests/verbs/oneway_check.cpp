// One-way requests and local completion over verbs, driven through the AM endpoint directly (no method
// in between): a forked peer on the same device receives a flood of one-way small AMs, medium stores
// and bulk stores (credits returned by the AM layer), checksums every payload as its handler runs, and
// answers one final request with its count and checksum, which must equal the sender's. The sender
// reuses each of its source buffers only after wait_local() says the NI is done with it, and checks
// that tx_completed() never runs ahead of tx_posted().
//
// usage: verbs_oneway_check DEVICE [--event] [MESSAGES]     exit 0 ok, 1 mismatch, 77 no device
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/am.hpp"
#include "common/clock.hpp"
#include "verbs/connect.hpp"
#include "verbs/transport.hpp"

using namespace logpb;

namespace {

enum : std::uint16_t { kData = 1, kFinal = 2, kTotals = 3, kQuit = 4 };
constexpr std::uint32_t kRegion = 4096;  // each message lands in its own region of the peer's segment
constexpr int kRegions = 128;            // more than credits: a region is reused only after its handler ran
constexpr int kCredits = 64;
constexpr int kBuffers = 16;  // source buffers in our segment, reused after local completion

std::uint64_t fnv(const std::byte* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::to_integer<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

struct Totals {
  std::uint64_t count = 0, sum = 0;
  bool quit = false, got = false;
  std::uint64_t peer_count = 0, peer_sum = 0;
};

void send_all(int fd, const void* p, std::size_t n) {
  if (write(fd, p, n) != static_cast<ssize_t>(n)) throw std::runtime_error("address exchange: write failed");
}
void recv_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, b, n);
    if (r <= 0) throw std::runtime_error("address exchange: the peer went away");
    b += r;
    n -= static_cast<std::size_t>(r);
  }
}

// The pair's address exchange over the socketpair fd: ours out, the peer's in (an allgather of two).
nlohmann::json exchange(int fd, int me, const nlohmann::json& mine) {
  const std::string out = mine.dump();
  const std::uint32_t len = static_cast<std::uint32_t>(out.size());
  send_all(fd, &len, sizeof len);
  send_all(fd, out.data(), len);
  std::uint32_t in_len = 0;
  recv_all(fd, &in_len, sizeof in_len);
  std::string in(in_len, '\0');
  recv_all(fd, in.data(), in_len);
  nlohmann::json all = nlohmann::json::array({nullptr, nullptr});
  all[static_cast<std::size_t>(me)] = mine;
  all[static_cast<std::size_t>(1 - me)] = nlohmann::json::parse(in);
  return all;
}

template <class EP>
void install_handlers(EP& ep) {
  ep.on(kData, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<Totals*>(e.user);
    ++s->count;
    s->sum += f.bulk_len ? fnv(e.transport().segment().data() + f.bulk_off, f.bulk_len) : f.args[0];
  });
  ep.on(kFinal, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<Totals*>(e.user);
    // The sender's wait for these totals is the one wait where nothing can arrive for a while: 20 ms of
    // silence, so event mode must arm its CQs and sleep there (the flood itself may find a completion
    // every time it arms, under a slow guest's timing, and never sleep).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    e.reply(f, kTotals, s->count, s->sum);
  });
  ep.on(kTotals, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<Totals*>(e.user);
    s->peer_count = f.args[0];
    s->peer_sum = f.args[1];
    s->got = true;
  });
  ep.on(kQuit, [](EP& e, const am::Frame&) { static_cast<Totals*>(e.user)->quit = true; });
}

// The flood: one-way small AMs, medium and bulk stores in turn, each source buffer rewritten only once
// wait_local() says the NI is done with it. Returns the checksum of what was sent; ok turns false when
// tx_completed() runs ahead of tx_posted().
template <class EP, class T>
std::uint64_t flood(EP& ep, T& t, int messages, bool& ok) {
  const nlohmann::json d0 = t.describe();
  const auto medium = d0["medium_max_bytes"].get<std::uint32_t>();
  const std::uint32_t sizes[] = {0, 1, 7, medium, medium + 1, 3000};
  std::vector<std::uint64_t> op(kBuffers, 0);
  std::byte* seg = t.segment().data();
  std::uint64_t sum = 0, x = 88172645463325252ull;
  for (int i = 0; i < messages; ++i) {
    const std::uint32_t n = sizes[i % 6];
    const int b = i % kBuffers;
    std::byte* src = seg + static_cast<std::size_t>(b) * kRegion;
    if (op[b]) ep.wait_local(op[b]);  // the NI is done with this buffer: it may be rewritten
    for (std::uint32_t k = 0; k < n; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      src[k] = static_cast<std::byte>(x);
    }
    const std::uint32_t dst = static_cast<std::uint32_t>(i % kRegions) * kRegion;
    if (n == 0) {
      op[b] = ep.oneway(1, kData, static_cast<std::uint64_t>(i), 0, 0, 0, true);
      sum += static_cast<std::uint64_t>(i);
    } else {
      op[b] = ep.oneway_store(1, kData, src, n, dst, 0, 0, true);
      sum += fnv(src, n);
    }
    if (op[b] == 0 || t.tx_completed() > t.tx_posted()) ok = false;
  }
  return sum;
}

// What the peer counted against what was sent, printed; true when every check held.
template <class EP, class T>
bool report(EP& ep, T& t, const Totals& tot, int messages, bool events, std::uint64_t sum, bool ok) {
  const nlohmann::json d = t.describe();
  const nlohmann::json& c = d["counters"];
  std::printf(
      "one-way %d (%s): peer counted %llu (sum %s), credit frames %llu, ops posted %llu completed %llu, "
      "medium stores %llu, bulk stores %llu, WRs %llu, sleeps %llu, cq_events %llu, credits %d\n",
      messages, events ? "event" : "busy", static_cast<unsigned long long>(tot.peer_count),
      tot.peer_sum == sum ? "equal" : "DIFFERENT", static_cast<unsigned long long>(ep.counters().credit_frames),
      static_cast<unsigned long long>(c["ops_posted"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["ops_completed"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["medium_stores"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["stores"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["sends"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["sleeps"].get<std::uint64_t>()),
      static_cast<unsigned long long>(c["cq_events"].get<std::uint64_t>()), ep.credit_limit());
  ok = ok && tot.peer_count == static_cast<std::uint64_t>(messages) && tot.peer_sum == sum &&
       ep.counters().rejected_total() == 0 && ep.counters().credit_frames > 0 &&
       c["medium_stores"].get<std::uint64_t>() > 0 && c["stores"].get<std::uint64_t>() > 0 &&
       c["bad_medium"].get<std::uint64_t>() == 0 && c["bad_imm"].get<std::uint64_t>() == 0;
  if (events) ok = ok && c["sleeps"].get<std::uint64_t>() > 0;
  return ok;
}

template <class T>
int run(const std::string& dev_name, bool events, int messages, int fd, bool sender) {
  Clock::Options co;
  co.allow_variant_tsc = true;
  co.calibrate_ms = 20;
  const Clock clock(co);
  verbs::DeviceOptions o;
  o.device = dev_name;
  o.events = events;
  const int me = sender ? 0 : 1;
  auto q = verbs::connect_qps(o, me, 2, [&](const nlohmann::json& mine) { return exchange(fd, me, mine); });
  T t(std::move(q.context), std::move(q.peers), verbs::TransportOptions{}, [] { return true; });
  char ready = 1;
  send_all(fd, &ready, 1);
  recv_all(fd, &ready, 1);

  am::EndpointOptions eo;
  eo.session = 0x5eed;
  eo.rank = me;
  eo.size = 2;
  eo.segment_bytes = static_cast<std::uint32_t>(t.segment().size());
  eo.credits = kCredits;
  eo.stall_timeout_s = 20;
  using EP = am::Endpoint<T>;
  EP ep(t, clock, eo);
  Totals tot;
  ep.user = &tot;
  install_handlers(ep);
  if (!sender) {
    ep.wait_until([&] { return tot.quit; });
    return 0;
  }
  bool ok = true;
  const std::uint64_t sum = flood(ep, t, messages, ok);
  ep.wait_local(t.tx_posted());
  ep.request(1, kFinal);
  ep.wait_until([&] { return tot.got; });
  ep.wait_local(ep.oneway(1, kQuit, 0, 0, 0, 0, true));  // RC: locally complete once the peer has it
  return report(ep, t, tot, messages, events, sum, ok) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DEVICE [--event] [MESSAGES]\n", argv[0]);
    return 2;
  }
  const std::string dev = argv[1];
  bool events = false;
  int messages = 30000;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--event") == 0)
      events = true;
    else
      messages = std::atoi(argv[i]);
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
  const pid_t pid = fork();
  if (pid < 0) return 2;
  const bool sender = pid != 0;
  const int fd = sender ? sv[0] : sv[1];
  int rc = 1;
  try {
    rc = events ? run<verbs::EventTransport>(dev, true, messages, fd, sender)
                : run<verbs::Transport>(dev, false, messages, fd, sender);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", sender ? "sender" : "receiver", e.what());
    rc = 1;
  }
  if (!sender) _exit(rc);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "receiver failed (status %d)\n", st);
    rc = 1;
  }
  std::printf("%s\n", rc == 0 ? "oneway_check: ok" : "oneway_check: FAILED");
  return rc;
}
