// What the contention methods (k_to_one.hpp, one_to_k.hpp, all_to_all.hpp here) share: their options,
// the number of messages a round needs, and the arithmetic of per-sender gaps into per-K figures.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/figures.hpp"
#include "common/errors.hpp"
#include "methods/contention/loops.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::contention {

inline const MethodOption kK{
    "k", "LIST", "the numbers of contending ranks, e.g. 1,3 (auto: 1, 2, 4, ... and the job's most)", "auto"};
inline const MethodOption kRoundSeconds{"round-seconds", "S", "time each round (each K) aims for", "1"};
inline const MethodOption kMinMessages{"min-messages", "N", "fewest timed messages per rank and round", "30"};

inline double number(const Settings& o, const char* name, double lo, double hi) {
  const std::string& v = o.method_arg(name);
  double x = NAN;
  try {
    std::size_t used = 0;
    x = std::stod(v, &used);
    if (used != v.size()) x = NAN;
  } catch (const std::exception&) {
  }
  if (!(x >= lo && x <= hi))
    throw UsageError("--" + std::string(name) + " must be a number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + v + "'");
  return x;
}

// The K of each round: --k, or 1, 2, 4, ... up to the most the job holds (and that most itself).
inline std::vector<int> k_list(const Settings& o, int most) {
  std::vector<int> ks;
  const std::string& v = o.method_arg("k");
  if (v == "auto") {
    for (int k = 1; k < most; k *= 2) ks.push_back(k);
    ks.push_back(most);
    return ks;
  }
  ks = cli::parse_int_list("--k", v);
  if (ks.front() != 1) ks.insert(ks.begin(), 1);  // every ratio is against K = 1
  if (ks.back() > most)
    throw UsageError("--k " + std::to_string(ks.back()) + ": this job has room for " + std::to_string(most) +
                     " contending ranks (run more ranks: -N, mpirun -np, srun -n)");
  return ks;
}

inline void check_common(const Settings& o) {
  if (o.method_arg("k") != "auto") k_list(o, 1 << 16);
  number(o, "round-seconds", 0.01, 3600);
  number(o, "min-messages", 3, 1e7);
}

// Messages a rank times in a round where one message costs about `per_message_ns`: enough for
// --round-seconds, at least --min-messages, at most a million.
inline int timed_messages(const Settings& o, double per_message_ns) {
  const double want = std::isfinite(per_message_ns) && per_message_ns > 0
                          ? number(o, "round-seconds", 0.01, 3600) * 1e9 / per_message_ns
                          : 0;
  return static_cast<int>(std::clamp(want, number(o, "min-messages", 3, 1e7), 1e6));
}

// Messages before the steady state: the window fills at once (each request returns after o_s), then the
// stream runs at its steady rate.
inline int skip_for(int window, int timed) { return window + 2 + timed / 20; }

inline nlohmann::json gap_json(const methods::Gap& g) {
  return {{"value_ns", std::isfinite(g.value_ns) ? nlohmann::json(g.value_ns) : nlohmann::json(nullptr)},
          {"ci95_ns", std::isfinite(g.ci95_ns) ? nlohmann::json(g.ci95_ns) : nlohmann::json(nullptr)},
          {"messages", g.messages},
          {"ci_method", "batch means of the timed messages (Student-t)"}};
}

// A per-K figure: a rank's gap, their mean, or a ratio of two (analysis/figures.hpp does the arithmetic).
using Combined = Estimate;
using analysis::ratio;

// The mean of per-rank gaps (gap_json records), with the interval of a mean of independent estimates; none
// when a rank has no gap.
inline Combined combine(const nlohmann::json& gaps) {
  std::vector<Estimate> v;
  for (const auto& g : gaps) {
    if (!g["value_ns"].is_number()) return {};
    v.push_back({g["value_ns"].get<double>(), g["ci95_ns"].is_number() ? g["ci95_ns"].get<double>() : 0});
  }
  return analysis::mean_of_independent(v);
}

inline nlohmann::json ns_json(const Combined& c) {
  if (!std::isfinite(c.value)) return {{"value_ns", nullptr}, {"ci95_ns", nullptr}};
  return {{"value_ns", c.value}, {"ci95_ns", c.ci95}};
}
inline nlohmann::json plain_json(const Combined& c) {
  if (!std::isfinite(c.value)) return {{"value", nullptr}, {"ci95", nullptr}};
  return {{"value", c.value}, {"ci95", c.ci95}};
}

// The job's own fitness check, repeated where the method's checks are rebuilt.
inline nlohmann::json timing_check(bool fit) {
  return {{"name", "contention measured with every rank able to run when it must"},
          {"ok", fit},
          {"detail", fit ? "each rank had its own core, or the emulated NI slept through millisecond parameters"
                         : "ranks shared cores on a spinning NI: a functional run, unfit for timing"}};
}

}  // namespace logpb::methods::contention
