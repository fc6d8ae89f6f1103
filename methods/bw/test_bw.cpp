// The bw method (perftest's ib_send_bw): its peak rate over credit frames and its summary over runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "methods/bw/bw.hpp"
#include "methods/bw/loops.hpp"
#include "methods/table.hpp"

using namespace logpb;
using namespace logpb::methods;

TEST_CASE("bw's peak: the best rate between credit frames a credit window apart, never a shorter span") {
  const Clock clock(Clock::Options{20, true});
  struct Mark {
    std::uint64_t tsc, returned;
  };
  const auto c = [&](double ns) { return static_cast<std::uint64_t>(clock.cycles(ns)); };
  // 128 messages per 1000 ns, then one bunched frame (128 in 10 ns), then 128 per 2000 ns.
  std::vector<Mark> log{{c(0), 100}, {c(1000), 228}, {c(2000), 356}, {c(2010), 484}, {c(4010), 612}};
  // With a window of 256 the bunched frame cannot stand alone (128 in 10 ns): the best span of at least
  // 256 messages is 228 -> 484, 256 in 1010 ns.
  const double r = methods::detail::peak_rate(log, clock, 256);
  CHECK(r == Approx(256 / 1010e-9).epsilon(0.01));
  CHECK(methods::detail::peak_rate(log, clock, 128) ==
        Approx(128 / 10e-9).epsilon(0.05));  // what a short span would say
  CHECK(std::isnan(methods::detail::peak_rate(std::vector<Mark>{{c(0), 0}}, clock, 256)));
}

TEST_CASE("bw over runs: mean with a Student-t interval, the highest peak; one run has no interval") {
  auto run = [](double avg, double peak) {
    nlohmann::json size = {
        {"bytes", 64},          {"iterations", 1000},         {"bw_average_MBps", avg}, {"bw_average_Gbps", avg / 100},
        {"bw_peak_MBps", peak}, {"msg_rate_Mpps", avg / 61.0}};
    return nlohmann::json{{"per_size", nlohmann::json::array({size})}};
  };
  const auto s = method::bw::summarize_runs(nlohmann::json::array({run(100, 110), run(110, 130), run(120, 125)}));
  const auto& p = s["per_size"][0];
  CHECK(p["bytes"] == 64);
  CHECK(p["bw_average_MBps"]["value"].get<double>() == Approx(110));
  CHECK(p["bw_average_MBps"]["ci95"].get<double>() == Approx(4.303 * 10 / std::sqrt(3.0)).epsilon(0.01));
  CHECK(p["bw_peak_MBps"]["value"].get<double>() == Approx(130));
  const auto one = method::bw::summarize_runs(nlohmann::json::array({run(100, 110)}));
  CHECK(one["per_size"][0]["bw_average_MBps"]["ci95"].is_null());
  // The table: ib_send_bw's columns, then ours.
  const Table t = method::bw::bw_table(s);
  REQUIRE(t.columns.size() == 7);
  CHECK(t.columns[2] == "BW peak[MB/sec]");
  CHECK(t.columns[3] == "BW average[MB/sec]");
  CHECK(t.columns[4] == "MsgRate[Mpps]");
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0][3].get<double>() == Approx(110));
}
