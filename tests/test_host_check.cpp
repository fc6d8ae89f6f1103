// The host's checks before a run (common/host_check), fed fixture /proc and /sys trees.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/host_check.hpp"

namespace fs = std::filesystem;
using namespace logpb;

namespace {

// A scratch tree under the temporary directory, removed when the test ends.
struct Tree {
  fs::path root = fs::temp_directory_path() / ("logpb-host-check-" + std::to_string(::getpid()));
  Tree() { fs::create_directories(root); }
  ~Tree() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};

// A task's stat line: state and processor (field 39) set, the rest as the kernel writes them.
std::string stat_line(long pid, const std::string& comm, char state, int processor) {
  std::string s = std::to_string(pid) + " (" + comm + ") " + state;
  for (int field = 4; field <= 52; ++field) s += " " + std::to_string(field == 39 ? processor : 0);
  return s + "\n";
}

}  // namespace

TEST_CASE("host check: a stat line's name, state and processor", "[host_check]") {
  const auto t = parse_task_stat(stat_line(42, "odd) name (x", 'R', 3));
  REQUIRE(t);
  CHECK(t->comm == "odd) name (x");
  CHECK(t->state == 'R');
  CHECK(t->processor == 3);
  CHECK_FALSE(parse_task_stat("42 (short) R 1 2"));
  CHECK_FALSE(parse_task_stat("garbage"));
}

TEST_CASE("host check: cpu lists", "[host_check]") {
  CHECK(parse_cpu_list("0-3,8\n") == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("").empty());
  CHECK(parse_cpu_list("x").empty());
}

TEST_CASE("host check: /proc/stat per core", "[host_check]") {
  const auto m = parse_proc_stat("cpu  9 9 9 9 9 0 0 0 0 0\ncpu0 10 0 5 80 5 0 0 0 0 0\ncpu1 1 2 3 4 0 0 0 0\n");
  REQUIRE(m.size() == 2);
  CHECK(m.at(0).busy == 15);
  CHECK(m.at(0).total == 100);
  CHECK(m.at(1).busy == 6);
}

TEST_CASE("host check: another runnable task on the core, a sibling in use, the clock", "[host_check]") {
  const Tree t;
  t.write("proc/100/task/100/stat", stat_line(100, "spin", 'R', 1));       // another task, runnable on core 1
  t.write("proc/100/task/101/stat", stat_line(101, "spin", 'S', 1));       // asleep: not counted
  t.write("proc/200/task/200/stat", stat_line(200, "logpbench", 'R', 1));  // a rank of the job: not counted
  t.write("proc/300/task/300/stat", stat_line(300, "other", 'R', 0));      // runnable, but on core 0
  t.write("proc/stat", "cpu0 0 0 0 100 0 0 0\ncpu1 0 0 0 100 0 0 0\n");
  t.write("sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "1,3\n");
  t.write("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");

  HostCheckInput in;
  in.proc_root = (t.root / "proc").string();
  in.sys_root = (t.root / "sys").string();
  in.rank = 1;
  in.cpu = 1;
  in.ranks_here = {{200, 1}, {400, 3}};  // rank 0 is pinned to core 3, core 1's sibling
  in.window_ms = 1;
  const auto w = check_core(in);
  REQUIRE(w.size() == 3);
  CHECK(w[0].rank == 1);
  CHECK(w[0].kind == "runnable_task");
  CHECK_THAT(w[0].detail, Catch::Contains("core 1") && Catch::Contains("'spin' (pid 100)"));
  CHECK_THAT(w[0].advice, Catch::Contains("--cpu") && Catch::Contains("isolcpus"));
  CHECK(w[1].kind == "smt_sibling");
  CHECK_THAT(w[1].detail, Catch::Contains("core 3") && Catch::Contains("another rank"));
  CHECK(w[2].kind == "frequency");
  CHECK_THAT(w[2].detail, Catch::Contains("powersave"));

  // Core 0: nothing of the job's own, no sibling file, no cpufreq (a VM): only the other task.
  in.cpu = 0;
  const auto w0 = check_core(in);
  REQUIRE(w0.size() == 1);
  CHECK_THAT(w0[0].detail, Catch::Contains("'other' (pid 300)"));
}

TEST_CASE("host check: a fixed clock, and no cpufreq, raise nothing", "[host_check]") {
  const Tree t;
  const std::string sys = (t.root / "sys").string();
  CHECK_FALSE(frequency_warning(sys, 0));  // not visible: no alarm
  t.write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  CHECK_FALSE(frequency_warning(sys, 0));
  t.write("sys/devices/system/cpu/cpufreq/boost", "1\n");
  const auto w = frequency_warning(sys, 0);
  REQUIRE(w);
  CHECK_THAT(w->detail, Catch::Contains("boost on"));
}
