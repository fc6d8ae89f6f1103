// --bench pingpong: the round trip of one small AM, or with -s n of an n-byte store and its reply
// (Culler et al. 3.2's RTT; perftest's latency test).
#pragma once

#include <cstdio>
#include <vector>

#include "analysis/results_json.hpp"
#include "app/method.hpp"
#include "app/options.hpp"
#include "common/methods/pingpong.hpp"

namespace logpb::app::method {

struct pingpong {
  static constexpr const char* name = "pingpong";
  static constexpr const char* summary = "round trip of one small AM (-s n: an n-byte store)";
  static constexpr const char* plot = "rtt";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::link;
  using Run = methods::PingpongResult;

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Options& o, RunIO& io) {
    io.progress("round trip");
    return methods::pingpong(link, st, clock, {o.iterations, o.warmup, o.size});
  }
  static nlohmann::json record(const Run& r, const Options& o) {
    return {{"rtt", analysis::distribution_json(r.rtt_ns, o.raw)}, {"lost", r.lost}};
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Options&) {
    std::vector<analysis::Param> rtts;
    for (const auto& r : runs) rtts.push_back(analysis::rtt_param(r.summary));
    return {{"parameters", {{"rtt", analysis::combine_runs(rtts)}}}, {"checks", nlohmann::json::array()}};
  }
  // perftest's latency table (ib_send_lat), one row per run, in its meaning: one-way latency = RTT / 2, in
  // microseconds; t_typical is the median. Our 95% interval of the median is the added last column.
  static void print(std::FILE* out, const nlohmann::json& doc) {
    const auto& flags = doc["meta"].value("flags", nlohmann::json::object());
    std::fprintf(out, "  one way = RTT/2, as perftest reports it:\n");
    std::fprintf(out, "  %-7s %-11s %-12s %-12s %-15s %-11s %-13s %-22s %-24s %s\n", "#bytes", "#iterations", "t_min[usec]",
                 "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
                 "99.9% percentile[usec]", "t_typical 95% CI[usec]");
    for (const auto& r : doc.value("runs", nlohmann::json::array())) {
      if (!r.contains("rtt") || !r["rtt"].contains("summary")) continue;
      const auto& sm = r["rtt"]["summary"];
      auto us = [&](const char* k) { return sm.value(k, 0.0) / 2e3; };
      std::fprintf(out, "  %-7u %-11d %-12.2f %-12.2f %-15.2f %-11.2f %-13.2f %-22.2f %-24.2f ±%.3f\n",
                   flags.value("size", 0u), static_cast<int>(sm.value("n", 0)), us("min_ns"), us("max_ns"), us("median_ns"),
                   us("mean_ns"), us("stdev_ns"), us("p99_ns"), us("p999_ns"), us("ci95_median_ns"));
    }
  }
};

}  // namespace logpb::app::method
