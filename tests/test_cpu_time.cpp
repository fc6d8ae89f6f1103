// The host CPU a stream costs, as the kernel accounts it (common/cpu_time).
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/cpu_time.hpp"

using logpb::CpuSpent;
using logpb::CpuTimes;

TEST_CASE("cpu time: this host's counters are read", "[cpu_time]") {
  const CpuTimes t = logpb::read_cpu_times();
  REQUIRE(t.ok);
  CHECK(!t.cores.empty());
  CHECK(t.cpu >= 0);
  CHECK(t.thread_user_ns + t.thread_system_ns >= 0);
}

TEST_CASE("cpu time: a stream's cost is the sum over its runs, per message", "[cpu_time]") {
  CpuTimes a, b;
  a.ok = b.ok = true;
  a.cores.assign(2, {});
  b.cores.assign(2, {});
  a.cpu = b.cpu = 1;
  // Over one run of 1000 messages: core 0 spent 2 ms in the kernel (1 ms system, 1 ms softirq), core 1 3 ms
  // user; this thread ran 2.5 ms of a 3 ms wall.
  b.cores[0][2] = 1e6;
  b.cores[0][6] = 1e6;
  b.cores[1][0] = 3e6;
  a.thread_run_ns = 1e6;
  b.thread_run_ns = 3.5e6;
  b.thread_system_ns = 0.5e6;
  CpuSpent s;
  CHECK(s.empty());
  CHECK(s.per_message().is_null());
  CHECK(std::isnan(s.host_kernel_ns()));
  s.add(a, b, 1000, 3e6);
  s.add(a, b, 1000, 3e6);  // a second run of the same
  CHECK(s.host_kernel_ns() == Approx(2000));
  const auto j = s.per_message();
  CHECK(j["messages"] == 2000);
  CHECK(j["host_ns"]["user"].get<double>() == Approx(3000));
  CHECK(j["host_ns"]["softirq"].get<double>() == Approx(1000));
  CHECK(j["this_thread"]["cpu"] == 1);
  CHECK(j["this_thread"]["run_ns"].get<double>() == Approx(2500));
  CHECK(j["this_thread"]["other_tasks_ns"].get<double>() == Approx(500));
  CHECK(j["this_thread"]["system_ns"].get<double>() == Approx(500));
  // One tick per core per run, over the messages.
  CHECK(s.host_kernel_resolution_ns() == Approx(j["tick_ns"].get<double>() * 2 * 2 / 2000));
}

TEST_CASE("cpu time: unreadable or mismatched snapshots add nothing", "[cpu_time]") {
  CpuTimes a, b;
  CpuSpent s;
  s.add(a, b, 1000, 1e6);  // neither was read
  CHECK(s.empty());
  a.ok = b.ok = true;
  a.cores.assign(2, {});
  b.cores.assign(3, {});  // a core came online between them
  s.add(a, b, 1000, 1e6);
  CHECK(s.empty());
  b.cores.assign(2, {});
  s.add(a, b, 0, 1e6);  // no messages
  CHECK(s.empty());
}
