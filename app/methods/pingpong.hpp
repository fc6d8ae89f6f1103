// --bench pingpong: the round trip of one small AM, or with -s n of an n-byte store and its reply
// (Culler et al. 3.2's RTT; perftest's latency test).
#pragma once

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
};

}  // namespace logpb::app::method
