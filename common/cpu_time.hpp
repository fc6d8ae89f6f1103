// The host CPU a stream of messages costs, as the kernel accounts it (issue 36 item 5): what a timed call
// does not see on a kernel-driven transport. A send on ofi tcp enters the kernel, and the stack's receive
// work (softirq) runs wherever the kernel puts it: inside the sender's call, on the receiver's core between
// its polls, or in another task (ksoftirqd). A busy-polling rank's core is all user time but for that.
//
// Two sources, read around a stream:
//  - this thread's own run time (/proc/thread-self/schedstat, ns from the scheduler) against the wall time:
//    the difference is time other tasks held its core (a kworker, ksoftirqd); its user/system split is
//    getrusage(RUSAGE_THREAD)'s (sampled at the tick, then scaled to the run time, as the kernel reports it);
//  - every core of this host from /proc/stat (user, system, irq, softirq, steal; sampled at the kernel's tick
//    and reported in USER_HZ units, so a stream must last many ticks for a per-message figure to mean much:
//    the resolution is recorded with it).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace logpb {

struct CpuTimes {
  // Per core, /proc/stat's user, nice, system, idle, iowait, irq, softirq, steal, in ns.
  std::vector<std::array<double, 8>> cores;
  double thread_run_ns = 0;                      // this thread's run time (schedstat); NaN when unreadable
  double thread_user_ns = 0, thread_system_ns = 0;  // getrusage(RUSAGE_THREAD)
  int cpu = -1;                                  // the core this thread ran on when read
  bool ok = false;                               // /proc/stat was read
};
CpuTimes read_cpu_times();

// What a stream cost: the sums of (after - before) over its runs, its messages and wall time.
class CpuSpent {
 public:
  void add(const CpuTimes& before, const CpuTimes& after, double messages, double wall_ns);
  bool empty() const { return messages_ == 0; }
  // Per message: this thread's core (user, kernel, other tasks) and the host's cores by kind; the tick's
  // resolution per message with it. Null when nothing was measured.
  nlohmann::json per_message() const;
  // Kernel time (system + irq + softirq) per message over all of this host's cores, and its resolution
  // (one USER_HZ tick per core per run, over the messages); NaN when not measured.
  double host_kernel_ns() const;
  double host_kernel_resolution_ns() const;

 private:
  std::vector<std::array<double, 8>> cores_;
  double thread_run_ns_ = 0, thread_user_ns_ = 0, thread_system_ns_ = 0;
  double messages_ = 0, wall_ns_ = 0;
  int runs_ = 0, cpu_ = -1;
  bool schedstat_ = true;
};

}  // namespace logpb
