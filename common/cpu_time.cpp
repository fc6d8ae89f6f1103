#include "common/cpu_time.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace logpb {

namespace {
constexpr const char* kKinds[8] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};

double tick_ns() {
  static const double t = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1e9 / static_cast<double>(hz) : 1e7;
  }();
  return t;
}

double timeval_ns(const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3; }
}  // namespace

CpuTimes read_cpu_times() {
  CpuTimes t;
  t.cpu = sched_getcpu();
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    // "cpuN user nice system idle iowait irq softirq steal ..." (the aggregate "cpu " line is skipped)
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] == ' ') continue;
    std::istringstream in(line.substr(3));
    std::size_t n = 0;
    in >> n;
    std::array<double, 8> v{};
    for (auto& x : v) {
      unsigned long long ticks = 0;
      in >> ticks;
      x = static_cast<double>(ticks) * tick_ns();
    }
    if (!in) continue;
    if (t.cores.size() <= n) t.cores.resize(n + 1);
    t.cores[n] = v;
    t.ok = true;
  }
  std::ifstream sched("/proc/thread-self/schedstat");
  unsigned long long run = 0;
  t.thread_run_ns = sched >> run ? static_cast<double>(run) : NAN;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) {
    t.thread_user_ns = timeval_ns(ru.ru_utime);
    t.thread_system_ns = timeval_ns(ru.ru_stime);
  }
  return t;
}

void CpuSpent::add(const CpuTimes& before, const CpuTimes& after, double messages, double wall_ns) {
  if (!before.ok || !after.ok || before.cores.size() != after.cores.size() || !(messages > 0)) return;
  if (cores_.empty()) cores_.assign(after.cores.size(), {});
  if (cores_.size() != after.cores.size()) return;
  for (std::size_t c = 0; c < cores_.size(); ++c)
    for (std::size_t k = 0; k < 8; ++k) cores_[c][k] += after.cores[c][k] - before.cores[c][k];
  if (std::isfinite(before.thread_run_ns) && std::isfinite(after.thread_run_ns))
    thread_run_ns_ += after.thread_run_ns - before.thread_run_ns;
  else
    schedstat_ = false;
  thread_user_ns_ += after.thread_user_ns - before.thread_user_ns;
  thread_system_ns_ += after.thread_system_ns - before.thread_system_ns;
  messages_ += messages;
  wall_ns_ += wall_ns;
  ++runs_;
  // The core the thread was on; a thread that moved (not pinned) is recorded as -2.
  const int cpu = before.cpu == after.cpu ? after.cpu : -2;
  cpu_ = runs_ == 1 ? cpu : (cpu_ == cpu ? cpu_ : -2);
}

double CpuSpent::host_kernel_ns() const {
  if (empty()) return NAN;
  double k = 0;
  for (const auto& c : cores_) k += c[2] + c[5] + c[6];
  return k / messages_;
}

double CpuSpent::host_kernel_resolution_ns() const {
  if (empty()) return NAN;
  // Each core's counters advance in whole ticks: one tick per core per run either way.
  return tick_ns() * static_cast<double>(cores_.size()) * runs_ / messages_;
}

nlohmann::json CpuSpent::per_message() const {
  if (empty()) return nullptr;
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json per_core = nlohmann::json::array();
  std::array<double, 8> sum{};
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    nlohmann::json e = {{"cpu", c}};
    for (std::size_t k = 0; k < 8; ++k) {
      e[kKinds[k]] = cores_[c][k] / messages_;
      sum[k] += cores_[c][k];
    }
    per_core.push_back(std::move(e));
  }
  for (std::size_t k = 0; k < 8; ++k) host[kKinds[k]] = sum[k] / messages_;
  nlohmann::json thread = {{"cpu", cpu_ >= 0 ? nlohmann::json(cpu_) : nlohmann::json(nullptr)},
                           {"user_ns", thread_user_ns_ / messages_},
                           {"system_ns", thread_system_ns_ / messages_}};
  if (schedstat_) {
    thread["run_ns"] = thread_run_ns_ / messages_;
    // The wall time this thread did not run: other tasks on its core (a busy-polling rank runs throughout).
    thread["other_tasks_ns"] = std::max(0.0, wall_ns_ - thread_run_ns_) / messages_;
  }
  return {{"messages", messages_},
          {"runs", runs_},
          {"wall_ns", wall_ns_ / messages_},
          {"this_thread", thread},
          {"host_ns", host},
          {"host_kernel_ns", host_kernel_ns()},
          {"host_per_core_ns", per_core},
          {"tick_ns", tick_ns()},
          {"host_resolution_ns", host_kernel_resolution_ns()},
          {"sources",
           "this thread: /proc/thread-self/schedstat (run time, ns) and getrusage(RUSAGE_THREAD) (user/system, "
           "tick-sampled); the host: /proc/stat per core, tick-sampled, in USER_HZ units. Per message of the "
           "stream, summed over its runs"}};
}

}  // namespace logpb
