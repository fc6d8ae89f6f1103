#include "common/host_check.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/ranks.hpp"
#include "common/results.hpp"

namespace logpb {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string first_word(const std::string& text) {
  std::istringstream s(text);
  std::string w;
  s >> w;
  return w;
}

// The numeric entries of a /proc directory (processes, or a process's threads).
std::vector<long> numeric_entries(const std::string& dir) {
  std::vector<long> v;
  DIR* d = opendir(dir.c_str());
  if (!d) return v;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long n = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') v.push_back(n);
  }
  closedir(d);
  return v;
}

constexpr const char* kAdviceTask =
    "move that work off this core (taskset), choose a quiet core with --cpu/--peer-cpu/--cpus, or keep the "
    "scheduler off measuring cores with isolcpus=";
constexpr const char* kAdviceSibling =
    "choose cores of different physical cores with --cpu/--peer-cpu/--cpus and keep their siblings idle "
    "(isolcpus= for both threads of a core, or nosmt)";

// Runnable tasks over the window: a task seen in two looks or more (a kernel worker woken for one look is not a
// task that shares the core), the most often seen first.
std::vector<RunnableTask> runnable_over_window(const HostCheckInput& in, const std::set<long>& exclude,
                                               std::map<int, CpuJiffies>& before, std::map<int, CpuJiffies>& after) {
  const int looks = std::max(1, in.samples);
  const auto pause = std::chrono::duration<double, std::milli>(in.window_ms / looks);
  std::vector<RunnableTask> order;
  std::map<long, int> seen;
  before = parse_proc_stat(read_text(in.proc_root + "/stat"));
  for (int i = 0; i < looks; ++i) {
    if (i > 0) std::this_thread::sleep_for(pause);
    for (const auto& t : runnable_on(in.proc_root, in.cpu, exclude))
      if (seen[t.tid]++ == 0) order.push_back(t);
  }
  after = parse_proc_stat(read_text(in.proc_root + "/stat"));
  for (auto& t : order) t.looks = seen[t.tid];
  const int need = std::min(2, looks);
  std::erase_if(order, [&](const RunnableTask& t) { return t.looks < need; });
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.looks > b.looks; });
  return order;
}

// Busy share of a core between two reads of /proc/stat; negative when the window held under two ticks.
double busy_share(const std::map<int, CpuJiffies>& before, const std::map<int, CpuJiffies>& after, int cpu) {
  const auto b = before.find(cpu), a = after.find(cpu);
  if (b == before.end() || a == after.end() || a->second.total < b->second.total + 2) return -1;
  return static_cast<double>(a->second.busy - b->second.busy) / static_cast<double>(a->second.total - b->second.total);
}

}  // namespace

std::optional<TaskStat> parse_task_stat(const std::string& text) {
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  TaskStat t;
  t.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  // After the name: field 3 (state) is the first, field 39 (processor) the 37th.
  for (int n = 3; n <= 39 && rest >> field; ++n) {
    if (n == 3) t.state = field.empty() ? '?' : field[0];
    if (n == 39) t.processor = std::atoi(field.c_str());
  }
  if (t.processor < 0) return std::nullopt;
  return t;
}

std::vector<RunnableTask> runnable_on(const std::string& proc_root, int cpu, const std::set<long>& exclude) {
  std::vector<RunnableTask> v;
  for (long pid : numeric_entries(proc_root)) {
    if (exclude.count(pid)) continue;
    const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
    for (long tid : numeric_entries(tasks)) {
      const auto t = parse_task_stat(read_text(tasks + "/" + std::to_string(tid) + "/stat"));
      if (t && t->state == 'R' && t->processor == cpu) v.push_back({pid, tid, t->comm});
    }
  }
  return v;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> v;
  std::istringstream s(first_word(text));
  std::string part;
  while (std::getline(s, part, ',')) {
    int a = 0, b = 0;
    char dash = 0;
    std::istringstream p(part);
    if (!(p >> a)) return {};
    b = a;
    if (p >> dash && (dash != '-' || !(p >> b))) return {};
    for (int c = a; c <= b; ++c) v.push_back(c);
  }
  return v;
}

std::vector<int> smt_siblings(const std::string& sys_root, int cpu) {
  std::vector<int> v = parse_cpu_list(
      read_text(sys_root + "/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list"));
  std::erase(v, cpu);
  return v;
}

std::map<int, CpuJiffies> parse_proc_stat(const std::string& text) {
  std::map<int, CpuJiffies> m;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream f(line.substr(3));
    int cpu = 0;
    f >> cpu;
    CpuJiffies j;
    unsigned long long x = 0;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    for (int i = 0; i < 8 && f >> x; ++i) {
      j.total += x;
      if (i != 3 && i != 4) j.busy += x;
    }
    m[cpu] = j;
  }
  return m;
}

std::optional<HostWarning> frequency_warning(const std::string& sys_root, int cpu) {
  const std::string base = sys_root + "/devices/system/cpu/";
  const std::string governor = first_word(read_text(base + "cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor"));
  if (governor.empty()) return std::nullopt;  // no cpufreq (a VM): nothing to say
  const std::string boost = first_word(read_text(base + "cpufreq/boost"));
  const std::string no_turbo = first_word(read_text(base + "intel_pstate/no_turbo"));
  const bool boosting = boost == "1" || no_turbo == "0";
  if (governor == "performance" && !boosting) return std::nullopt;
  std::string detail = "core " + std::to_string(cpu) + "'s frequency is not fixed (";
  if (governor != "performance") detail += "cpufreq governor '" + governor + "'";
  if (boosting) detail += std::string(governor != "performance" ? ", " : "") + "boost on";
  detail += "): figures in ns move with the clock";
  return HostWarning{0, "frequency", detail,
                     "set the governor to performance (cpupower frequency-set -g performance) and turn boost off "
                     "(echo 0 > " +
                         base + (no_turbo.empty() ? "cpufreq/boost" : "intel_pstate/no_turbo, 1") + ")"};
}

std::vector<HostWarning> check_core(const HostCheckInput& in) {
  std::vector<HostWarning> w;
  if (in.cpu < 0) return w;
  std::set<long> exclude;
  std::set<int> rank_cores;
  for (const auto& [pid, cpu] : in.ranks_here) {
    exclude.insert(pid);
    if (cpu != in.cpu) rank_cores.insert(cpu);
  }
  std::map<int, CpuJiffies> before, after;
  // One line for the core, naming the four processes seen most often (a process's threads count once).
  std::vector<RunnableTask> tasks = runnable_over_window(in, exclude, before, after);
  std::set<long> named;
  std::erase_if(tasks, [&](const RunnableTask& t) { return !named.insert(t.pid).second; });
  if (!tasks.empty()) {
    std::string d = "another task is runnable on measuring core " + std::to_string(in.cpu) + ": ";
    for (std::size_t i = 0; i < tasks.size() && i < 4; ++i)
      d += (i ? ", '" : "'") + tasks[i].comm + "' (pid " + std::to_string(tasks[i].pid) + ")";
    if (tasks.size() > 4) d += " and " + std::to_string(tasks.size() - 4) + " more";
    w.push_back({in.rank, "runnable_task", d, kAdviceTask});
  }
  for (int s : smt_siblings(in.sys_root, in.cpu)) {
    std::string why;
    const double busy = busy_share(before, after, s);
    if (rank_cores.count(s))
      why = "another rank of this job is pinned to it";
    else if (!runnable_on(in.proc_root, s, exclude).empty())
      why = "a task is runnable on it";
    else if (busy >= 0.5)
      why = "it was " + std::to_string(static_cast<int>(busy * 100)) + "% busy";
    if (why.empty()) continue;
    w.push_back({in.rank, "smt_sibling",
                 "core " + std::to_string(s) + ", the SMT sibling of measuring core " + std::to_string(in.cpu) +
                     ", is in use (" + why + "): the two threads share the core's pipeline",
                 kAdviceSibling});
  }
  if (auto f = frequency_warning(in.sys_root, in.cpu)) {
    f->rank = in.rank;
    w.push_back(*f);
  }
  return w;
}

nlohmann::json host_warning_json(const HostWarning& w) {
  return {{"rank", w.rank}, {"kind", w.kind}, {"detail", w.detail}, {"advice", w.advice}};
}

void check_host(Ranks& ranks, int cpu, ResultsDoc& doc) {
  const nlohmann::json all = ranks.allgather(ranks.placement(cpu));
  HostCheckInput in;
  in.rank = ranks.rank();
  in.cpu = cpu;
  const std::string host = all[ranks.rank()].value("host", std::string());
  for (const auto& p : all)
    if (p.value("host", std::string()) == host) in.ranks_here.push_back({p.value("pid", 0L), p.value("cpu", -1)});
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& w : check_core(in)) mine.push_back(host_warning_json(w));
  const nlohmann::json gathered = ranks.allgather({{"host", host}, {"warnings", mine}});
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : gathered)
    for (const auto& w : g["warnings"]) list.push_back(w);
  doc.j["meta"]["host_warnings"] = list;
  // A warning about the host rather than the core (boost) reads the same from every rank of it: the lowest
  // of them prints it.
  for (const auto& w : mine) {
    bool said = false;
    for (int r = 0; r < ranks.rank() && !said; ++r)
      if (gathered[r]["host"] == host)
        for (const auto& o : gathered[r]["warnings"]) said = said || o["detail"] == w["detail"];
    if (!said)
      std::fprintf(stderr, "logpbench: warning: rank %d: %s; %s\n", ranks.rank(),
                   w["detail"].get<std::string>().c_str(), w["advice"].get<std::string>().c_str());
  }
}

}  // namespace logpb
