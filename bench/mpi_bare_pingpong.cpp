// The floor under the MPI transport: a bare MPI ping-pong between two ranks on the same library, with
// nothing in the timed loop but the MPI calls. Each round trip is timed with the TSC (common/clock.hpp),
// as bench/shm_bare_pingpong.cpp times its cache-line ping-pong. The ratio of logpbench's MPI ping-pong
// RTT to this one, measured in the same session with the same launcher options, is what logpbench's AM
// layer and MPI transport add (scripts/mpi-vs-bare).
//
// Every receive is pre-posted with MPI_Irecv before the message it matches can leave, so no message ever
// lands in Open MPI's unexpected queue: the fastest a two-sided MPI ping-pong gets. Each end keeps the
// next round trip's receive posted as well, and re-posts right after its send returns, while the message
// is in flight: posting before the send instead put the post on the round trip's critical path
// (docs/results/lab-notes.md has what it cost in the lab). Each timed round trip still contains one post,
// as LogP/MPI's RTT (MPI_Send, then MPI_Recv) contains one receive.
//
// --shape transport makes the same MPI calls as logpbench's MPI transport in its default irecv mode
// (mpi/transport.hpp), with no AM layer on top: a ring of --ring receives from MPI_ANY_SOURCE (or, with
// --source peer, from the other rank, as the transport posts them in a job of two ranks), each of
// --recv-bytes, polled by MPI_Test on the head slot alone and re-posted by the next poll that finds nothing;
// sends by MPI_Isend from a pool of --pool requests, reaped by one MPI_Testsome when it is full (or by
// MPI_Send with --send send). Between the two shapes lies what the transport's way of using MPI costs;
// between this one and logpbench, what its AM layer and bookkeeping cost (scripts/mpi-vs-bare).
//
// usage (under mpirun, 2 ranks):
//   mpi_bare_pingpong [--size BYTES] [--iters N] [--warmup N] [--send send|isend] [--cpus A,B] [--json FILE]
//                     [--shape bare|transport] [--ring N] [--recv-bytes B] [--pool N] [--source any|peer]
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
  bool transport_shape = false;
  long ring = 8, recv_bytes = 4096, pool = 64;  // the transport's irecv defaults: --mpi-ring, 64 + --mpi-inline
  bool any_source = true;                       // the shape's receives: MPI_ANY_SOURCE, or the peer (--source)
  int cpu[2] = {0, 1};
  std::string json;
};

int g_rank = 0;  // only rank 0 speaks: both ranks parse the same arguments

[[noreturn]] void usage(const char* why) {
  if (g_rank == 0)
    std::fprintf(stderr,
                 "mpi_bare_pingpong: %s\n"
                 "usage (2 ranks under mpirun): mpi_bare_pingpong [--size BYTES>=0] [--iters N>0] [--warmup N>=0]\n"
                 "       [--send send|isend] [--cpus A,B] [--json FILE]\n"
                 "       [--shape bare|transport] [--ring N>1] [--recv-bytes B] [--pool N>0] [--source any|peer]\n",
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
    } else if (o == "--shape") {
      if (std::strcmp(v, "bare") && std::strcmp(v, "transport")) usage("--shape must be bare or transport");
      a.transport_shape = !std::strcmp(v, "transport");
    } else if (o == "--ring") {
      // One slot cannot work lazily: the slot handed up is the head again, and MPI_Test on its null request
      // reads complete at once, so every other receive would return without a message (the transport's
      // --mpi-ring starts at 2 for the same reason).
      a.ring = number("--ring", v, 2);
      if (a.ring > 65536) usage("--ring is at most 65536");
    } else if (o == "--recv-bytes") {
      a.recv_bytes = number("--recv-bytes", v, 0);
      if (a.recv_bytes > (1L << 30)) usage("--recv-bytes is at most 1 GiB");
    } else if (o == "--pool") {
      a.pool = number("--pool", v, 1);
      if (a.pool > 65536) usage("--pool is at most 65536");
    } else if (o == "--source") {
      if (std::strcmp(v, "any") && std::strcmp(v, "peer")) usage("--source must be any or peer");
      a.any_source = !std::strcmp(v, "any");
    } else {
      usage(("unknown option " + o).c_str());
    }
  }
  if (a.warmup < 0) a.warmup = a.iters / 10 + 100;
  if (a.transport_shape && a.recv_bytes < a.size) usage("--recv-bytes must hold a message of --size bytes");
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

// The transport's shape (see the top): both ranks run the same end, rank 0 sending first and timing.
class TransportShape {
 public:
  TransportShape(const Args& a, int peer)
      : a_(a),
        peer_(peer),
        rx_(static_cast<std::size_t>(a.ring), MPI_REQUEST_NULL),
        tx_(static_cast<std::size_t>(a.pool), MPI_REQUEST_NULL),
        done_(static_cast<std::size_t>(a.pool)),
        rbuf_(static_cast<std::size_t>(a.ring * a.recv_bytes) + 1),
        sbuf_(static_cast<std::size_t>(a.pool * a.size) + 1, 'x') {
    for (long i = 0; i < a.ring; ++i) post(i);
  }
  ~TransportShape() {
    for (auto& r : rx_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    MPI_Waitall(static_cast<int>(tx_.size()), tx_.data(), MPI_STATUSES_IGNORE);
  }
  void send() {
    const long len = a_.size;
    if (!a_.isend) {
      MPI_Send(sbuf_.data(), static_cast<int>(len), MPI_BYTE, peer_, 0, MPI_COMM_WORLD);
      return;
    }
    if (tail_ - head_ == a_.pool) reap();
    const long i = tail_++ % a_.pool;
    MPI_Isend(sbuf_.data() + i * len, static_cast<int>(len), MPI_BYTE, peer_, 0, MPI_COMM_WORLD,
              &tx_[static_cast<std::size_t>(i)]);
  }
  void receive() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Test(&rx_[static_cast<std::size_t>(rx_head_)], &flag, &st);
      if (!flag) {
        repost();
        continue;
      }
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);  // the transport reads the size to validate the frame
      (void)bytes;
      repost();
      pending_ = rx_head_;
      rx_head_ = rx_head_ + 1 == a_.ring ? 0 : rx_head_ + 1;
      return;
    }
  }

 private:
  void post(long i) {
    MPI_Irecv(rbuf_.data() + i * a_.recv_bytes, static_cast<int>(a_.recv_bytes), MPI_BYTE,
              a_.any_source ? MPI_ANY_SOURCE : peer_, 0, MPI_COMM_WORLD, &rx_[static_cast<std::size_t>(i)]);
  }
  void repost() {
    if (pending_ < 0) return;
    post(pending_);
    pending_ = -1;
  }
  void reap() {
    int n = 0;
    MPI_Testsome(static_cast<int>(a_.pool), tx_.data(), &n, done_.data(), MPI_STATUSES_IGNORE);
    while (head_ < tail_ && tx_[static_cast<std::size_t>(head_ % a_.pool)] == MPI_REQUEST_NULL) ++head_;
  }
  const Args& a_;
  int peer_;
  std::vector<MPI_Request> rx_, tx_;
  std::vector<int> done_;
  std::vector<char> rbuf_, sbuf_;
  long rx_head_ = 0, pending_ = -1, head_ = 0, tail_ = 0;
};

void ping_transport(const Args& a, long total, std::uint64_t* cyc) {
  TransportShape t(a, 1);
  for (long k = 0; k < total; ++k) {
    const std::uint64_t t0 = logpb::tsc::now();
    t.send();
    t.receive();
    cyc[k] = logpb::tsc::now_end() - t0;
  }
}

void pong_transport(const Args& a, long total) {
  TransportShape t(a, 0);
  for (long k = 0; k < total; ++k) {
    t.receive();
    t.send();
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
    std::fprintf(stderr, "mpi_bare_pingpong: rank %d cannot pin to cpu %d (is it in the launcher's binding?)\n", rank,
                 a.cpu[rank]);
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
  if (a.transport_shape) {
    if (rank == 0)
      ping_transport(a, total, cyc.data());
    else
      pong_transport(a, total);
  } else if (rank == 0) {
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
                        {"recv", !a.transport_shape ? "irecv pre-posted"
                                 : a.any_source     ? "a ring of MPI_Irecv from MPI_ANY_SOURCE, MPI_Test on its head"
                                                    : "a ring of MPI_Irecv from the peer, MPI_Test on its head"},
                        {"shape", a.transport_shape ? "transport" : "bare"},
                        {"cpus", {a.cpu[0], a.cpu[1]}},
                        {"tsc_hz", clock->hz()},
                        {"timer_cost_ns", clock->ns(clock->timer_cost_cycles())},
                        {"clock_resolution_ns", clock->resolution_ns()},
                        {"mpi_library", library},
                        {"rtt", s}};
    char ci[32] = "n/a";  // the median's interval needs six
    if (std::isfinite(s.ci95_median)) std::snprintf(ci, sizeof ci, "%.1f", s.ci95_median);
    if (a.transport_shape) {
      j["ring"] = a.ring;
      j["recv_bytes"] = a.recv_bytes;
      j["pool"] = a.pool;
      j["source"] = a.any_source ? "any" : "peer";
    }
    const char* how = a.transport_shape
                          ? (a.isend ? "the transport's shape, MPI_Isend pool" : "the transport's shape, MPI_Send")
                          : (a.isend ? "MPI_Isend + pre-posted MPI_Irecv" : "MPI_Send + pre-posted MPI_Irecv");
    std::fprintf(stderr, "mpi_bare_pingpong: %ld B, %s: rtt median %.1f ns ± %s (95%%), n=%ld\n", a.size, how, s.median,
                 ci, a.iters);
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
