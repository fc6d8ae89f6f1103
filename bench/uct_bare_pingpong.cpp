// The UCT floor for logpbench's ping-pong over UCX (scripts/ucx-vs-perftest): two processes, one UCT
// interface each (posix on memory by default), and nothing between the send and the poll but the loop.
// The client sends uct_ep_am_short of 64 bytes (an 8-byte header, the round trip's number, and 56 bytes of
// payload, as logpbench's small AM and ucx_perftest -t am_lat -D short -s 64 send) and calls
// uct_worker_progress until its AM handler has seen the reply's header; the server progresses until its
// handler has seen a request and sends the same 64 bytes back. The handlers read the 8-byte header only
// (as ucx_perftest's does). Each round trip is timed by the TSC as logpbench's ping-pong times its own
// (the same Clock, tsc::now / now_end, the timer's own cost taken off); the summary is printed as JSON.
//
// usage: uct_bare_pingpong [ITERATIONS [CLIENT_CPU [SERVER_CPU [TL [DEV [timed] [plain]]]]]]
//   defaults 100000 0 1 posix memory. The program is the client; it starts the server as a second process
//   (this program again, exec'ed) and trades device, interface or endpoint addresses with it over a unix
//   socket pair before the timed loop (untimed). WARMUP = ITERATIONS / 10 untimed round trips first.
//   timed: the server stamps the TSC before each uct_worker_progress and after the reply's am_short of every
//   progress call that brought a request, as logpbench's replier times its service (Endpoint::time_service:
//   the poll, the handler and the reply), and the client prints the median and 90th percentile per request
//   beside its own figures ("server_turnaround"): the bare replier's turnaround beside logpbench's
//   replier_turnaround. Its two TSC reads lengthen the round trips they sit in.
//   plain: the client times as ucx_perftest does instead (ucx_perf_update): one plain rdtsc after each
//   reply, no fence, and a round trip is the time since the previous read (the loop's period); no timer
//   cost is taken off. Against the default (logpbench's lfence/rdtsc .. rdtscp/lfence around each round
//   trip) it shows what the fenced reads cost the loop itself (docs/results/ucx-vs-perftest.md).
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <uct/api/uct.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pin.hpp"
#include "common/clock.hpp"
#include "common/stats.hpp"

namespace {

constexpr std::uint8_t kAmId = 7;  // logpbench's id (ucx/transport.hpp)
constexpr std::size_t kMessageBytes = 64;
constexpr std::uint64_t kStop = ~std::uint64_t{0};  // the client's last header: the server stops

[[noreturn]] void die(const char* what, ucs_status_t s) {
  std::fprintf(stderr, "uct_bare_pingpong: %s failed: %s\n", what, ucs_status_string(s));
  std::exit(1);
}
void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) die(what, s);
}

// What the AM handler leaves for the loop: the last header seen and how many messages came.
struct Seen {
  std::uint64_t header = 0;
  std::uint64_t count = 0;
};
ucs_status_t on_am(void* arg, void* data, std::size_t /*length*/, unsigned /*flags*/) {
  auto* s = static_cast<Seen*>(arg);
  std::memcpy(&s->header, data, sizeof s->header);
  ++s->count;
  return UCS_OK;
}

// Blobs over the socket: a 4-byte length, then the bytes.
bool send_blob(int fd, const void* p, std::uint32_t n) {
  return write(fd, &n, sizeof n) == static_cast<ssize_t>(sizeof n) &&
         (n == 0 || write(fd, p, n) == static_cast<ssize_t>(n));
}
bool read_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
std::vector<char> recv_blob(int fd) {
  std::uint32_t n = 0;
  if (!read_all(fd, &n, sizeof n) || n > (1u << 20)) {
    std::fprintf(stderr, "uct_bare_pingpong: the peer's addresses did not come\n");
    std::exit(1);
  }
  std::vector<char> v(n);
  if (n && !read_all(fd, v.data(), n)) {
    std::fprintf(stderr, "uct_bare_pingpong: the peer's addresses did not come\n");
    std::exit(1);
  }
  return v;
}

// One side's UCT: the worker, the interface on TL/DEV with our AM handler, one endpoint to the peer
// (connected over `fd`: to its interface where the transport can, else to its endpoint).
struct Side {
  ucs_async_context_t* async = nullptr;
  uct_worker_h worker = nullptr;
  uct_md_h md = nullptr;
  uct_iface_h iface = nullptr;
  uct_ep_h ep = nullptr;
  uct_iface_attr_t attr{};
  Seen seen;

  Side(const char* tl, const char* dev, int fd) {
    check(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async), "ucs_async_context_create");
    check(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker), "uct_worker_create");
    open_md(tl, dev);
    uct_iface_config_t* cfg = nullptr;
    check(uct_md_iface_config_read(md, tl, nullptr, nullptr, &cfg), "uct_md_iface_config_read");
    uct_iface_params_t p{};
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE | UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                   UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name = tl;
    p.mode.device.dev_name = dev;
    p.stats_root = nullptr;
    p.rx_headroom = 0;
    const ucs_status_t s = uct_iface_open(md, worker, &p, cfg, &iface);
    uct_config_release(cfg);
    check(s, "uct_iface_open");
    check(uct_iface_query(iface, &attr), "uct_iface_query");
    if (!(attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) || attr.cap.am.max_short < kMessageBytes) {
      std::fprintf(stderr, "uct_bare_pingpong: %s/%s takes no 64-byte am_short\n", tl, dev);
      std::exit(2);
    }
    check(uct_iface_set_am_handler(iface, kAmId, on_am, &seen, 0), "uct_iface_set_am_handler");
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    connect(fd);
  }
  ~Side() {
    if (ep) uct_ep_destroy(ep);
    if (iface) uct_iface_close(iface);
    if (md) uct_md_close(md);
    if (worker) uct_worker_destroy(worker);
    if (async) ucs_async_context_destroy(async);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;

  void open_md(const char* tl, const char* dev) {
    uct_component_h* comps = nullptr;
    unsigned n_comps = 0;
    check(uct_query_components(&comps, &n_comps), "uct_query_components");
    for (unsigned c = 0; c < n_comps && !md; ++c) {
      uct_component_attr_t ca{};
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
      check(uct_component_query(comps[c], &ca), "uct_component_query");
      std::vector<uct_md_resource_desc_t> mds(ca.md_resource_count);
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
      ca.md_resources = mds.data();
      check(uct_component_query(comps[c], &ca), "uct_component_query");
      for (const auto& r : mds) {
        uct_md_config_t* mc = nullptr;
        if (uct_md_config_read(comps[c], nullptr, nullptr, &mc) != UCS_OK) continue;
        uct_md_h m = nullptr;
        const ucs_status_t s = uct_md_open(comps[c], r.md_name, mc, &m);
        uct_config_release(mc);
        if (s != UCS_OK) continue;
        uct_tl_resource_desc_t* tls = nullptr;
        unsigned n = 0;
        bool here = false;
        if (uct_md_query_tl_resources(m, &tls, &n) == UCS_OK) {
          for (unsigned i = 0; i < n; ++i)
            here |= std::strcmp(tls[i].tl_name, tl) == 0 && std::strcmp(tls[i].dev_name, dev) == 0;
          uct_release_tl_resource_list(tls);
        }
        if (here) {
          md = m;
          break;
        }
        uct_md_close(m);
      }
    }
    uct_release_component_list(comps);
    if (!md) {
      std::fprintf(stderr, "uct_bare_pingpong: UCT has no transport %s on device %s here (ucx_info -d)\n", tl, dev);
      std::exit(2);
    }
  }

  void connect(int fd) {
    std::vector<char> dev(attr.device_addr_len), ifa(attr.iface_addr_len), epa;
    check(uct_iface_get_device_address(iface, reinterpret_cast<uct_device_addr_t*>(dev.data())),
          "uct_iface_get_device_address");
    const bool to_iface = attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    if (to_iface) {
      check(uct_iface_get_address(iface, reinterpret_cast<uct_iface_addr_t*>(ifa.data())), "uct_iface_get_address");
    } else {
      uct_ep_params_t p{};
      p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
      p.iface = iface;
      check(uct_ep_create(&p, &ep), "uct_ep_create");
      epa.resize(attr.ep_addr_len);
      check(uct_ep_get_address(ep, reinterpret_cast<uct_ep_addr_t*>(epa.data())), "uct_ep_get_address");
    }
    if (!send_blob(fd, dev.data(), static_cast<std::uint32_t>(dev.size())) ||
        !send_blob(fd, ifa.data(), static_cast<std::uint32_t>(to_iface ? ifa.size() : 0)) ||
        !send_blob(fd, epa.data(), static_cast<std::uint32_t>(epa.size()))) {
      std::fprintf(stderr, "uct_bare_pingpong: cannot send the addresses\n");
      std::exit(1);
    }
    const std::vector<char> pdev = recv_blob(fd), pifa = recv_blob(fd), pepa = recv_blob(fd);
    const auto* dev_addr = reinterpret_cast<const uct_device_addr_t*>(pdev.data());
    if (to_iface) {
      uct_ep_params_t p{};
      p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
      p.iface = iface;
      p.dev_addr = dev_addr;
      p.iface_addr = reinterpret_cast<const uct_iface_addr_t*>(pifa.data());
      check(uct_ep_create(&p, &ep), "uct_ep_create");
    } else {
      check(uct_ep_connect_to_ep(ep, dev_addr, reinterpret_cast<const uct_ep_addr_t*>(pepa.data())),
            "uct_ep_connect_to_ep");
    }
  }

  // The 64 bytes: `header`, then 56 bytes of payload. Progresses while the interface has no room.
  void send(std::uint64_t header, const void* payload) {
    for (;;) {
      const ucs_status_t s = uct_ep_am_short(ep, kAmId, header, payload, kMessageBytes - sizeof header);
      if (s == UCS_OK) [[likely]]
        return;
      if (s != UCS_ERR_NO_RESOURCE) die("uct_ep_am_short", s);
      uct_worker_progress(worker);
    }
  }
};

// Both ends ready (handler set, endpoint connected) before the first message.
void handshake(int fd) {
  char c = 'r';
  if (write(fd, &c, 1) != 1 || !read_all(fd, &c, 1)) {
    std::fprintf(stderr, "uct_bare_pingpong: the peer went away before the loop\n");
    std::exit(1);
  }
}

// The server's turnaround per request, sent to the client when it stops: median, 90th percentile, count.
struct Service {
  double median_cycles = 0, p90_cycles = 0;
  std::uint64_t requests = 0;
};

template <bool Timed>
int serve(Side& u, int fd) {
  alignas(64) std::byte payload[kMessageBytes] = {};
  std::vector<std::uint64_t> service;
  if constexpr (Timed) service.reserve(1 << 22);
  std::uint64_t handled = 0;
  for (std::uint64_t idle = 0;; ++idle) {
    std::uint64_t t0 = 0;
    if constexpr (Timed) t0 = __rdtsc();
    uct_worker_progress(u.worker);
    if (u.seen.count == handled) {
      if ((idle & 0xfffff) == 0xfffff) {  // now and then: is the client still there?
        char c;
        if (recv(fd, &c, 1, MSG_DONTWAIT) == 0) return 1;
      }
      continue;
    }
    idle = 0;
    handled = u.seen.count;
    const std::uint64_t h = u.seen.header;
    if (h == kStop) break;
    u.send(h, payload);
    if constexpr (Timed)
      if (service.size() < service.capacity()) service.push_back(__rdtsc() - t0);
  }
  Service s;
  if constexpr (Timed) {
    std::sort(service.begin(), service.end());
    if (!service.empty()) {
      s.median_cycles = static_cast<double>(service[(service.size() - 1) / 2]);
      s.p90_cycles = static_cast<double>(service[(service.size() - 1) * 9 / 10]);
    }
    s.requests = service.size();
  }
  return write(fd, &s, sizeof s) == static_cast<ssize_t>(sizeof s) ? 0 : 1;
}

int server_main(int fd, int cpu, const char* tl, const char* dev, bool timed) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!logpb::bench::pin(cpu)) {
    std::fprintf(stderr, "uct_bare_pingpong: cannot pin the server to cpu %d\n", cpu);
    return 2;
  }
  Side u(tl, dev, fd);
  handshake(fd);
  return timed ? serve<true>(u, fd) : serve<false>(u, fd);
}

int usage() {
  std::fprintf(stderr, "usage: uct_bare_pingpong [ITERATIONS [CLIENT_CPU [SERVER_CPU [TL [DEV [timed] [plain]]]]]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--server") == 0)  // started by the client below
    return server_main(std::atoi(argv[2]), std::atoi(argv[3]), argv[4], argv[5], std::strcmp(argv[6], "timed") == 0);
  bool timed = false, plain = false;
  for (int k = 6; k < argc; ++k) {
    if (std::strcmp(argv[k], "timed") == 0 && !timed)
      timed = true;
    else if (std::strcmp(argv[k], "plain") == 0 && !plain)
      plain = true;
    else
      return usage();
  }
  const long iters = argc > 1 ? std::atol(argv[1]) : 100000;
  const int ccpu = argc > 2 ? std::atoi(argv[2]) : 0, scpu = argc > 3 ? std::atoi(argv[3]) : 1;
  const std::string tl = argc > 4 ? argv[4] : "posix", dev = argc > 5 ? argv[5] : "memory";
  if (iters < 1) return usage();

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror("uct_bare_pingpong: socketpair");
    return 1;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("uct_bare_pingpong: fork");
    return 1;
  }
  if (child == 0) {
    close(sv[0]);
    const int fd = dup(sv[1]);  // without close-on-exec
    const std::string fds = std::to_string(fd), cpus = std::to_string(scpu);
    execl("/proc/self/exe", argv[0], "--server", fds.c_str(), cpus.c_str(), tl.c_str(), dev.c_str(),
          timed ? "timed" : "untimed", static_cast<char*>(nullptr));
    std::perror("uct_bare_pingpong: exec");
    _exit(1);
  }
  close(sv[1]);
  const int fd = sv[0];
  if (!logpb::bench::pin(ccpu)) {
    std::fprintf(stderr, "uct_bare_pingpong: cannot pin to cpu %d\n", ccpu);
    kill(child, SIGKILL);
    return 2;
  }
  const logpb::Clock clock;
  logpb::set_ci_floor_ns(clock.resolution_ns());
  std::vector<std::uint64_t> cyc(static_cast<std::size_t>(iters));
  alignas(64) std::byte payload[kMessageBytes] = {};
  int rc = 0;
  {
    Side u(tl.c_str(), dev.c_str(), fd);
    handshake(fd);
    const long warm = iters / 10;
    std::uint64_t seq = 0;
    // One round trip: false when the server exited.
    auto round_trip = [&] {
      ++seq;
      u.send(seq, payload);
      for (std::uint64_t spins = 1; u.seen.header != seq; ++spins) {
        uct_worker_progress(u.worker);
        if ((spins & 0xffffff) == 0 && waitpid(child, nullptr, WNOHANG) == child) return false;
      }
      return true;
    };
    bool ok = true;
    if (plain) {
      std::uint64_t prev = __rdtsc();
      for (long i = -warm; i < iters && ok; ++i) {
        ok = round_trip();
        const std::uint64_t t = __rdtsc();
        if (i >= 0) cyc[static_cast<std::size_t>(i)] = t - prev;
        prev = t;
      }
    } else {
      for (long i = -warm; i < iters && ok; ++i) {
        const std::uint64_t t0 = logpb::tsc::now();
        ok = round_trip();
        const std::uint64_t t1 = logpb::tsc::now_end();
        if (i >= 0) cyc[static_cast<std::size_t>(i)] = t1 - t0;
      }
    }
    if (!ok) {
      std::fprintf(stderr, "uct_bare_pingpong: the server exited\n");
      return 1;
    }
    u.send(kStop, payload);
    Service s;
    const bool got = read_all(fd, &s, sizeof s);
    int st = 0;
    waitpid(child, &st, 0);
    if (!got || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "uct_bare_pingpong: the server failed (status %d)\n", st);
      rc = 1;
    }
    std::vector<double> ns;
    ns.reserve(cyc.size());
    const double off = plain ? 0.0 : clock.timer_cost_cycles();
    for (auto c : cyc) ns.push_back(clock.ns(static_cast<double>(c) - off));
    nlohmann::json j = {
        {"bench", "uct_bare_pingpong"},
        {"tl", tl},
        {"dev", dev},
        {"message_bytes", kMessageBytes},
        {"iterations", iters},
        {"warmup", warm},
        {"client_cpu", ccpu},
        {"server_cpu", scpu},
        {"clock", plain ? "plain rdtsc after each reply, the period between reads (ucx_perftest's)"
                        : "lfence/rdtsc before the send, rdtscp/lfence after the reply, timer cost taken off "
                          "(logpbench's)"},
        {"rtt", logpb::summarize(ns)}};
    if (timed)
      j["server_turnaround"] = {
          {"median_ns", clock.ns(s.median_cycles)}, {"p90_ns", clock.ns(s.p90_cycles)}, {"requests", s.requests}};
    std::printf("%s\n", j.dump().c_str());
  }
  close(fd);
  return rc;
}
