// What on this host keeps a measuring core from giving clean figures, named before the run, one line each, as
// perftest and ucx_perftest warn: another task runnable on the core, an SMT sibling in use, a frequency that is
// not fixed. Each rank checks its own core once it is pinned; the leader keeps every rank's warnings in
// meta.host_warnings. The readers take the /proc and /sys roots, so a test can feed them fixture trees.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace logpb {

class Ranks;
struct ResultsDoc;

struct HostWarning {
  int rank = 0;
  std::string kind;  // "runnable_task", "smt_sibling" or "frequency"
  std::string detail;
  std::string advice;
};

// One line of /proc/PID/task/TID/stat: the command's name (between the parentheses, which may hold spaces
// and parentheses of its own), the state (field 3) and the core it last ran on (field 39, processor).
struct TaskStat {
  std::string comm;
  char state = '?';
  int processor = -1;
};
std::optional<TaskStat> parse_task_stat(const std::string& text);

struct RunnableTask {
  long pid = 0;  // the process (thread group)
  long tid = 0;
  std::string comm;
  int looks = 1;  // in how many looks of the window it was runnable there
};
// The tasks under PROC_ROOT runnable (state R) on core `cpu` at one look, but for the processes in `exclude`.
std::vector<RunnableTask> runnable_on(const std::string& proc_root, int cpu, const std::set<long>& exclude);

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; empty on text that is no list.
std::vector<int> parse_cpu_list(const std::string& text);
// The other hardware threads of `cpu`'s core (topology/thread_siblings_list under SYS_ROOT), without `cpu`.
std::vector<int> smt_siblings(const std::string& sys_root, int cpu);

// Per core, the jiffies /proc/stat counts busy (all but idle and iowait) and in all.
struct CpuJiffies {
  unsigned long long busy = 0, total = 0;
};
std::map<int, CpuJiffies> parse_proc_stat(const std::string& text);

// The warning when `cpu`'s frequency is not fixed (its cpufreq governor is not 'performance', or boost is on),
// none when it is, or when cpufreq is not visible (a VM): no alarm raised on what cannot be seen.
std::optional<HostWarning> frequency_warning(const std::string& sys_root, int cpu);

// Everything this rank's core shows over a window of about 10 ms: `ranks_here` are the job's ranks on this
// host ({pid, cpu}), whose tasks are not "another task" and whose cores make a sibling in use.
struct HostCheckInput {
  std::string proc_root = "/proc", sys_root = "/sys";
  int rank = 0;
  int cpu = -1;
  std::vector<std::pair<long, int>> ranks_here;
  int samples = 5;
  double window_ms = 10;
};
std::vector<HostWarning> check_core(const HostCheckInput& in);

nlohmann::json host_warning_json(const HostWarning& w);

// Every rank, once pinned to `cpu`: checks its core, prints each of its warnings once on stderr (a warning
// another rank of this host already gives, such as boost, is left to that rank), and every rank's doc gets
// meta.host_warnings (a list of {rank, kind, detail, advice}; the leader's is the one saved). Collective.
void check_host(Ranks& ranks, int cpu, ResultsDoc& doc);

}  // namespace logpb
