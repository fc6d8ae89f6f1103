// The segment tags (common/disturbance.hpp): a real competitor on the measuring core is seen, by the kernel's
// own accounting, and named; the rule, the detours and a figure's refusal.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/disturbance.hpp"

using namespace logpb;

namespace {
void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}
void spin_ms(const Clock& clock, double ms) {
  const std::uint64_t end = tsc::now() + clock.cycles(ms * 1e6);
  while (tsc::now() < end) {
  }
}
}  // namespace

TEST_CASE("a task that shares the measuring core disturbs the segment, and the tag names the core", "[disturbance]") {
  static const Clock clock;
  cpu_set_t before;
  sched_getaffinity(0, sizeof before, &before);
  const int cpu = sched_getcpu();
  pin(cpu);
  const pid_t child = fork();
  if (child == 0) {  // a busy neighbour on the same core, until killed
    pin(cpu);
    // A loop with a side effect: an empty for (;;) is undefined behaviour in C++ (no forward progress), and
    // clang 14 -O2 drops it: the child ran on as a second copy of the test run (the parent's path after
    // fork), until it died of a SIGSEGV that Catch2 re-raised into ASan, a sanitizer report in a suite that
    // passed. (A three-line fork() + for (;;) {} compiled by clang++-14 -O2 prints the parent's line twice.)
    for (;;) asm volatile("" ::: "memory");
  }
  REQUIRE(child > 0);
  SegmentWatch w(clock, true);
  w.begin();
  spin_ms(clock, 60);  // the scheduler shares the core between the two: tens of ms of run delay
  const SegmentTag t = w.end();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  sched_setaffinity(0, sizeof before, &before);
  INFO(to_json(t).dump());
  CHECK_FALSE(t.clean);
  CHECK(t.requester.watched);
  CHECK(t.requester.delay_ns > 5e6);
  CHECK(t.cause.find("another task held core " + std::to_string(cpu) + " (requester)") != std::string::npos);
  CHECK(t.requester.irqs >= 0);
}

TEST_CASE("detours in a segment's own stamps are judged by the same rule", "[disturbance]") {
  SegmentTag t;
  t.wall_ns = 1e6;
  std::vector<double> periods(1000, 1000.0);
  add_detours(t, periods);
  CHECK(t.clean);
  CHECK(t.detours == 0);
  periods[10] = 4000;  // under 8 x the median step and 5 us: not a detour
  add_detours(t, periods);
  CHECK(t.detours == 0);
  periods[20] = 50000;  // one 50 us detour: 49 us beyond the median in a 1 ms segment, over 0.2% of it
  add_detours(t, periods);
  CHECK(t.detours == 1);
  CHECK(t.detour_ns == Approx(49000));
  CHECK_FALSE(t.clean);
  CHECK(t.cause.find("1 detour") == 0);
}

TEST_CASE("a figure with too few clean segments is refused, with its cause", "[disturbance]") {
  SegmentBook book("flood runs", 4, 2, 6);
  SegmentTag clean;
  clean.wall_ns = 1e6;
  SegmentTag bad = clean;
  bad.clean = false;
  bad.cause = "another task held core 0 (requester) 0.61 ms of 1.0 ms";
  CHECK(book.record(clean));
  for (int i = 0; i < 5; ++i) CHECK_FALSE(book.record(bad));
  CHECK(book.done());
  CHECK_FALSE(book.enough());
  const std::string why = book.refusal();
  CHECK(why.find("disturbed: 5 of 6 flood runs (83%) lost") == 0);
  CHECK(why.find("another task held core 0 (requester) in 5") != std::string::npos);
  nlohmann::json fig = {{"value_ns", 6832.0}, {"ci95_ns", 12.0}};
  refuse_figure(fig, why);
  CHECK(fig["value_ns"].is_null());
  CHECK(fig["raw_value_ns"] == 6832.0);
  CHECK(fig["error"] == why);
  CHECK(fig["disturbed"] == true);
  CHECK(book.to_json()["segments"].size() == 6);
}

TEST_CASE("clean batches drop a disturbed batch's samples and measure it again", "[disturbance]") {
  static const Clock clock;
  SegmentWatch w(clock);
  SegmentBook book("batches", 4, 2, 12);
  std::vector<int> out;
  int calls = 0;
  clean_batches(w, book, out, 40, 10, [&](std::vector<int>& v) { v.push_back(calls++); });
  // Each kept sample is a clean batch's; every batch, kept or dropped, ran its 10.
  CHECK(out.size() == static_cast<std::size_t>(10 * book.clean()));
  CHECK(out.size() <= 40);
  CHECK(calls == 10 * book.measured());
}
