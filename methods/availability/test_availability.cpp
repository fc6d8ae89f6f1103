// Doerfler & Brightwell's summary (methods/availability/analysis) on made-up runs: a send that completes
// inside its call (shm's ring slot) is a note of the link, not a failed check; a share that is not measured
// is still a failed check.
#include <catch2/catch.hpp>

#include <string>

#include "methods/availability/analysis.hpp"

using namespace logpb;
using nlohmann::json;

namespace {

methods::DoerflerSide side(double base_t, double overhead) {
  methods::DoerflerSide s;
  s.completed = true;
  s.base_t = base_t;
  s.iter_t = 1.5 * base_t;
  s.work_t = s.iter_t - overhead;
  s.overhead = overhead;
  s.overhead_ci = 1;
  s.availability = 1 - overhead / base_t;
  s.availability_ci = 0.01;
  return s;
}

// One run of one size: the send's iteration time at zero work is `send_base` ns of which `send_overhead` is
// the overhead; the receive is an ordinary 0.5 share.
std::vector<std::vector<methods::DoerflerSize>> runs(double send_base, double send_overhead) {
  methods::DoerflerSize d;
  d.bytes = 8;
  d.send = side(send_base, send_overhead);
  d.recv = side(200, 100);
  return {{d}};
}

bool has(const json& list, const std::string& name) {
  for (const auto& c : list)
    if (c.value("name", "") == name) return true;
  return false;
}

}  // namespace

TEST_CASE("availability: local completion inside the send call is a note, not a failed check") {
  // Overhead 10.2 ns of an iteration of 10.0: completion came inside the call, and the share is below 0.
  const json s = methods::doerfler_summary(runs(10.0, 10.2));
  REQUIRE(s.contains("notes"));
  CHECK(has(s["notes"], "local completion inside the send call (8 B)"));
  CHECK(has(s["notes"], "availability outside [0,1] (send 8 B)"));
  for (const auto& c : s["checks"]) CHECK(c.value("ok", false));  // no figure in doubt
  CHECK(has(s["checks"], "availability in [0,1] (recv 8 B)"));
  CHECK(s["per_size"][0]["send"]["availability"].is_null());  // the share itself is still no figure
  CHECK(s["per_size"][0]["send"].contains("availability_meaning"));
}

TEST_CASE("availability: a send that never reached the stop threshold is a failed check, an ordinary share none") {
  auto r = runs(100, 40);
  r[0][0].send.completed = false;
  const json s = methods::doerfler_summary(r);
  CHECK(s["notes"].empty());
  bool failed = false;
  for (const auto& c : s["checks"])
    failed = failed || (c.value("name", "") == "availability in [0,1] (send 8 B)" && !c.value("ok", true));
  CHECK(failed);
  // Overhead 40 of an iteration of 100: a share of 0.6, a passed check, no note.
  const json ok = methods::doerfler_summary(runs(100, 40));
  CHECK(ok["notes"].empty());
  for (const auto& c : ok["checks"]) CHECK(c.value("ok", false));
  CHECK(ok["per_size"][0]["send"]["availability"].get<double>() == Approx(0.6));
}
