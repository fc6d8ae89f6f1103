// Steals a known share of one core, as another user's process would: pinned to the core, under the default
// scheduler (SCHED_OTHER, no real-time priority), it spins for busy-us of every period-us and sleeps the rest.
// scripts/noisy-lab runs it beside logpbench's requester or replier to check that every figure comes out right
// or refused, never wrong.
//
// usage: steal --cpu N --busy-us X --period-us Y [--seconds S]
//   runs until S seconds have passed (default: until SIGTERM or SIGINT), then prints one JSON line: the share
//   asked for (X / Y), the share it got (its own run time from /proc/thread-self/schedstat over wall time),
//   the periods it ran, and the latest a period's spin started after the period's start.
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/pin.hpp"

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

constexpr int64_t kNsPerUs = 1000;
constexpr int64_t kNsPerS = 1000000000;

struct Args {
  int cpu = -1;
  double busy_us = -1;
  double period_us = -1;
  double seconds = 0;  // 0: until a signal
};

int usage(const char* why) {
  std::fprintf(stderr,
               "steal: %s\n"
               "usage: steal --cpu N --busy-us X --period-us Y [--seconds S]\n"
               "  spins X us of every Y us (0 <= X <= Y, Y > 0) pinned to core N, for S seconds (S > 0) or until\n"
               "  SIGTERM/SIGINT, then prints one JSON line with the share asked for and the share obtained\n",
               why);
  return 2;
}

// A whole number or a decimal with nothing after it; false otherwise.
bool parse_number(const char* s, double& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s, &end);
  return errno == 0 && *end == '\0' && std::isfinite(out);
}

// Fills `a` from argv; on a bad argument prints why and returns false.
bool parse_args(int argc, char** argv, Args& a, std::string& why) {
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "-h" || opt == "--help") {
      why = "help";
      return false;
    }
    if (opt != "--cpu" && opt != "--busy-us" && opt != "--period-us" && opt != "--seconds") {
      why = "unknown option '" + opt + "'";
      return false;
    }
    if (i + 1 >= argc) {
      why = opt + " needs a value";
      return false;
    }
    double v = 0;
    if (!parse_number(argv[++i], v)) {
      why = opt + ": '" + argv[i] + "' is not a number";
      return false;
    }
    if (opt == "--cpu") {
      if (v < 0 || v != std::floor(v) || v >= CPU_SETSIZE) {
        why = "--cpu: '" + std::string(argv[i]) + "' is not a core number";
        return false;
      }
      a.cpu = static_cast<int>(v);
    } else if (opt == "--busy-us") {
      a.busy_us = v;
    } else if (opt == "--period-us") {
      a.period_us = v;
    } else {
      a.seconds = v;
      if (v <= 0) {
        why = "--seconds must be > 0";
        return false;
      }
    }
  }
  if (a.cpu < 0 || a.busy_us < 0 || a.period_us < 0) {
    why = a.cpu < 0 ? "--cpu is required" : a.busy_us < 0 ? "--busy-us is required (>= 0)" : "--period-us is required";
    return false;
  }
  if (a.period_us <= 0 || a.busy_us > a.period_us) {
    why = "need 0 <= --busy-us <= --period-us and --period-us > 0";
    return false;
  }
  return true;
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * kNsPerS + ts.tv_nsec;
}

// This thread's time on a CPU and time waiting on a run queue (ns), the first two fields of schedstat; false
// where the kernel does not keep them (CONFIG_SCHEDSTATS off or /proc not mounted).
bool read_schedstat(int64_t& run_ns, int64_t& wait_ns) {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return false;
  const bool ok = std::fscanf(f, "%" SCNd64 " %" SCNd64, &run_ns, &wait_ns) == 2;
  std::fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string why;
  if (!parse_args(argc, argv, a, why)) {
    if (why != "help") return usage(why.c_str());
    std::printf("usage: steal --cpu N --busy-us X --period-us Y [--seconds S]\n");
    return 0;
  }
  if (!logpb::bench::pin(a.cpu)) {
    std::fprintf(stderr, "steal: sched_setaffinity to core %d failed: %s (is the core online and allowed?)\n", a.cpu,
                 std::strerror(errno));
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: a signal ends clock_nanosleep early
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  const int64_t busy = std::llround(a.busy_us * kNsPerUs);
  const int64_t period = std::llround(a.period_us * kNsPerUs);
  int64_t run0 = 0, wait0 = 0;
  const bool have_schedstat = read_schedstat(run0, wait0);
  const int64_t t0 = now_ns();
  const int64_t end = a.seconds > 0 ? t0 + std::llround(a.seconds * kNsPerS) : INT64_MAX;
  int64_t start = t0;  // this period's start
  int64_t periods = 0, skipped = 0, worst_late = 0;
  while (!g_stop && start < end) {
    // The spin starts when the scheduler lets it: its lateness is how long another task kept the core.
    const int64_t began = now_ns();
    worst_late = std::max(worst_late, began - start);
    const int64_t stop = began + busy;
    while (now_ns() < stop && !g_stop) {
    }
    ++periods;
    start += period;
    const int64_t after = now_ns();
    if (after >= start) {  // the spin ran past the period's end: the next period starts at the next boundary
      const int64_t missed = (after - start) / period + 1;
      skipped += missed;
      start += missed * period;
    }
    const timespec until{static_cast<time_t>(start / kNsPerS), static_cast<long>(start % kNsPerS)};
    while (!g_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
  }
  const int64_t t1 = now_ns();
  int64_t run1 = 0, wait1 = 0;
  const bool schedstat_after = read_schedstat(run1, wait1);
  const double wall = static_cast<double>(t1 - t0);
  const int policy = sched_getscheduler(0);
  std::string achieved = "null", waited = "null";
  if (have_schedstat && schedstat_after && wall > 0) {
    achieved = std::to_string(static_cast<double>(run1 - run0) / wall);
    waited = std::to_string((wait1 - wait0) / kNsPerUs);
  }
  std::printf(
      "{\"cpu\": %d, \"busy_us\": %g, \"period_us\": %g, \"requested_share\": %.4f, \"achieved_share\": %s, "
      "\"wall_s\": %.3f, \"periods\": %" PRId64 ", \"periods_skipped\": %" PRId64
      ", \"worst_lateness_us\": %.1f, \"run_delay_us\": %s, \"policy\": \"%s\", \"stopped_by\": \"%s\"}\n",
      a.cpu, a.busy_us, a.period_us, a.busy_us / a.period_us, achieved.c_str(), wall / kNsPerS, periods, skipped,
      static_cast<double>(worst_late) / kNsPerUs, waited.c_str(), policy == SCHED_OTHER ? "SCHED_OTHER" : "other",
      g_stop ? "signal" : "time");
  return 0;
}
