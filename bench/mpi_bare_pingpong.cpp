// The floor under the MPI transport: a bare MPI ping-pong between two ranks on the same library, with
// nothing in the timed loop but the MPI calls. Each round trip is timed with the TSC (common/clock.hpp),
// as bench/shm_bare_pingpong.cpp times its cache-line ping-pong. The ratio of logpbench's MPI ping-pong
// RTT to this one, measured in the same session with the same launcher options, is what logpbench's AM
// layer and MPI transport add (scripts/mpi-vs-bare).
//
// Every receive is pre-posted with MPI_Irecv before the message it matches can leave, so no message ever
// lands in Open MPI's unexpected queue: the fastest a two-sided MPI ping-pong gets. Each end keeps the
// next round trip's receive posted as well, and re-posts right after its send returns, while the message
// is in flight: posting before the send instead put the post on the round trip's critical path, which
// cost 20-50 ns a round trip over vader on a 2-core AMD VM. Each timed round trip still contains one post,
// as LogP/MPI's RTT (MPI_Send, then MPI_Recv) contains one receive.
//
// usage (under mpirun, 2 ranks):
//   mpi_bare_pingpong [--size BYTES] [--iters N] [--warmup N] [--send send|isend] [--cpus A,B] [--json FILE]
// prints one line to stderr for a reader and one JSON object on stdout (and in FILE), from rank 0.
#include <mpi.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pin.hpp"
#include "common/clock.hpp"
#include "common/stats.hpp"

namespace {

struct Args {
  long size = 64;
  long iters = 100000;
  long warmup = -1;  // -1: iters / 10 + 100, as shm_bare_pingpong
  bool isend = false;
  int cpu[2] = {0, 1};
  std::string json;
};

int g_rank = 0;  // only rank 0 speaks: both ranks parse the same arguments

[[noreturn]] void usage(const char* why) {
  if (g_rank == 0)
    std::fprintf(stderr,
                 "mpi_bare_pingpong: %s\n"
                 "usage (2 ranks under mpirun): mpi_bare_pingpong [--size BYTES>=0] [--iters N>0] [--warmup N>=0]\n"
                 "       [--send send|isend] [--cpus A,B] [--json FILE]\n",
                 why);
  MPI_Finalize();
  std::exit(2);
}

long number(const char* opt, const char* s, long min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno || end == s || *end || v < min) {
    static char msg[160];
    std::snprintf(msg, sizeof msg, "%s wants an integer >= %ld, got '%s'", opt, min, s);
    usage(msg);
  }
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "-h" || o == "--help") usage("a bare MPI ping-pong, the floor under logpbench's MPI transport");
    if (i + 1 >= argc) usage(("missing value after " + o).c_str());
    const char* v = argv[++i];
    if (o == "--size") {
      a.size = number("--size", v, 0);
      if (a.size > (1L << 30)) usage("--size is at most 1 GiB");
    } else if (o == "--iters") {
      a.iters = number("--iters", v, 1);
    } else if (o == "--warmup") {
      a.warmup = number("--warmup", v, 0);
    } else if (o == "--send") {
      if (std::strcmp(v, "send") && std::strcmp(v, "isend")) usage("--send must be send or isend");
      a.isend = !std::strcmp(v, "isend");
    } else if (o == "--cpus") {
      if (std::sscanf(v, "%d,%d", &a.cpu[0], &a.cpu[1]) != 2 || a.cpu[0] < 0 || a.cpu[1] < 0)
        usage("--cpus wants two cores, e.g. 0,1");
    } else if (o == "--json") {
      a.json = v;
    } else {
      usage(("unknown option " + o).c_str());
    }
  }
  if (a.warmup < 0) a.warmup = a.iters / 10 + 100;
  return a;
}

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, s, &n);
  std::fprintf(stderr, "mpi_bare_pingpong: %s failed: %s\n", call, s);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// The send of either mode; MPI_Isend's request is waited for at once, as the paper's Isend mode does.
inline void send(const Args& a, const char* buf, int peer) {
  if (a.isend) {
    MPI_Request r;
    MPI_Isend(buf, static_cast<int>(a.size), MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    MPI_Send(buf, static_cast<int>(a.size), MPI_BYTE, peer, 0, MPI_COMM_WORLD);
  }
}

// Two receives are kept posted at each end, one a round trip ahead, each re-posted right after a send
// returns: while the message just sent is in flight, so the post costs the round trip nothing, yet it is
// made before its message can leave (that message answers, or follows the answer to, the one just sent).

// Rank 0: `total` round trips; cyc[k] is the k-th. Each contains one MPI_Irecv post, the next round trip's,
// except the last: the caller leaves that one out of the timed ones.
void ping(const Args& a, char* sbuf, char* rbuf[2], long total, std::uint64_t* cyc) {
  const int len = static_cast<int>(a.size);
  MPI_Request r[2];
  MPI_Irecv(rbuf[0], len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r[0]);
  for (long k = 0; k < total; ++k) {
    const std::uint64_t t0 = logpb::tsc::now();
    send(a, sbuf, 1);
    if (k + 1 < total) MPI_Irecv(rbuf[(k + 1) & 1], len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r[(k + 1) & 1]);
    MPI_Wait(&r[k & 1], MPI_STATUS_IGNORE);
    cyc[k] = logpb::tsc::now_end() - t0;
  }
}

// Rank 1: the receive of ping k + 2 is posted once the reply to ping k has been sent.
void pong(const Args& a, char* sbuf, char* rbuf[2], long total) {
  const int len = static_cast<int>(a.size);
  MPI_Request r[2];
  for (long k = 0; k < 2 && k < total; ++k) MPI_Irecv(rbuf[k], len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r[k]);
  for (long k = 0; k < total; ++k) {
    MPI_Wait(&r[k & 1], MPI_STATUS_IGNORE);
    send(a, sbuf, 0);
    if (k + 2 < total) MPI_Irecv(rbuf[k & 1], len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r[k & 1]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // MPI's default handler stays: a failed call in the loop ends the job with Open MPI's message naming it.
  check(MPI_Init(&argc, &argv), "MPI_Init");
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  g_rank = rank;
  const Args a = parse(argc, argv);
  if (nranks != 2) usage("runs as exactly 2 ranks (mpirun -np 2)");
  if (!logpb::bench::pin(a.cpu[rank])) {
    std::fprintf(stderr, "mpi_bare_pingpong: rank %d cannot pin to cpu %d (is it in the launcher's binding?)\n",
                 rank, a.cpu[rank]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // Send and receive buffers apart, so no message lands where the next one is read from.
  const auto bytes = static_cast<std::size_t>(a.size) + 1;
  std::vector<char> sbuf(bytes, 'x'), rbuf0(bytes), rbuf1(bytes);
  char* rbuf[2] = {rbuf0.data(), rbuf1.data()};
  // Warm-up, timed round trips and one more, in one loop (ping's last round trip posts no receive).
  const long total = a.warmup + a.iters + 1;
  std::vector<std::uint64_t> cyc(rank == 0 ? static_cast<std::size_t>(total) : 0);
  const logpb::Clock* clock = rank == 0 ? new logpb::Clock() : nullptr;  // 0.2 s of calibration, rank 0 only

  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  if (rank == 0) {
    ping(a, sbuf.data(), rbuf, total, cyc.data());
  } else {
    pong(a, sbuf.data(), rbuf, total);
  }
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");

  int rc = 0;
  if (rank == 0) {
    logpb::set_ci_floor_ns(clock->resolution_ns());
    std::vector<double> ns;
    ns.reserve(static_cast<std::size_t>(a.iters));
    for (long k = a.warmup; k < a.warmup + a.iters; ++k)
      ns.push_back(clock->ns(static_cast<double>(cyc[static_cast<std::size_t>(k)]) - clock->timer_cost_cycles()));
    const auto s = logpb::summarize(ns);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string library(lib, static_cast<std::size_t>(len));
    if (auto end = library.find_first_of(std::string("\n\0", 2)); end != std::string::npos) library.resize(end);
    nlohmann::json j = {{"bench", "mpi_bare_pingpong"},
                        {"bytes", a.size},
                        {"iterations", a.iters},
                        {"warmup", a.warmup},
                        {"send", a.isend ? "isend" : "send"},
                        {"recv", "irecv pre-posted"},
                        {"cpus", {a.cpu[0], a.cpu[1]}},
                        {"tsc_hz", clock->hz()},
                        {"timer_cost_ns", clock->ns(clock->timer_cost_cycles())},
                        {"clock_resolution_ns", clock->resolution_ns()},
                        {"mpi_library", library},
                        {"rtt", s}};
    char ci[32] = "n/a";  // the median's interval needs six
    if (std::isfinite(s.ci95_median)) std::snprintf(ci, sizeof ci, "%.1f", s.ci95_median);
    std::fprintf(stderr,
                 "mpi_bare_pingpong: %ld B, MPI_%s + pre-posted MPI_Irecv: rtt median %.1f ns ± %s (95%%), n=%ld\n",
                 a.size, a.isend ? "Isend" : "Send", s.median, ci, a.iters);
    std::printf("%s\n", j.dump().c_str());
    if (!a.json.empty()) {
      std::ofstream f(a.json);
      f << j.dump(2) << "\n";
      if (!f) {
        std::fprintf(stderr, "mpi_bare_pingpong: cannot write %s\n", a.json.c_str());
        rc = 1;
      }
    }
    delete clock;
  }
  MPI_Finalize();
  return rc;
}
