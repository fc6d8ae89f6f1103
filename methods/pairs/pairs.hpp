// --bench pairs: Culler et al. 3.5 (first paragraph): "half of the nodes as requesters and the other half
// replying". Requester r (r < N/2) runs the single-pair method --pairs-bench against replier r + N/2: first
// pair 0 alone (the single pair the paper calibrated first), then every pair at once. In a scalable network
// "the LogP parameters are the same to two significant digits"; the leader reports each pair's parameters,
// their spread, and the lone pair's as the reference `parameters`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/figures.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "methods/descriptor.hpp"
#include "methods/protocol.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct pairs {
  static constexpr const char* name = "pairs";
  static constexpr const char* summary =
      "Culler et al. 3.5: N ranks in pairs running --pairs-bench, against one pair alone";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::job;
  static constexpr const char* link_option = "pairs-bench";
  static inline const std::vector<MethodOption> options = {
      {"pairs-bench", "METHOD", "the single-pair method each requester runs", "signature"}};
  static void check(const Settings& o) {
    const std::string& b = o.method_arg("pairs-bench");
    if (const MethodInfo* m = find_method(b); !m || m->scope != Scope::link)
      throw UsageError("--pairs-bench must be a single-pair method (e.g. signature, pingpong), not '" + b + "'");
  }

  static void check_size(int n) {
    if (n < 2 || n % 2 != 0)
      throw UsageError("--bench pairs needs an even number of ranks (half request, half reply), not " +
                       std::to_string(n));
  }
  static Role role(int r, int n) {
    const int half = n / 2;
    return {r < half, r < half ? r + half : r - half, r < half ? r : r - half};
  }
  // A requester and its replier take neighbouring places in the core order, so a pair never shares a
  // core while there are two to give it.
  static int core_slot(int r, int n) {
    const int half = n / 2;
    return r < half ? 2 * r : 2 * (r - half) + 1;
  }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role& role) {
    // Long phases: collectives wait without a deadline, still aware of a dead rank and of signals.
    job.ranks.set_timeout(0);
    auto say = [&](const std::string& s) {
      if (job.leader()) job.progress(s);
    };
    nlohmann::json mine = nlohmann::json::object();
    if (role.pair == 0) {
      if (role.requester) {
        say("pair 0 alone");
        mine["alone"] = job.measure_link(ep, role.peer, job.o.method_arg("pairs-bench"));
      } else {
        methods::serve(ep);
      }
    }
    job.ranks.barrier();
    if (role.requester) {
      say("all " + std::to_string(job.ranks.size() / 2) + " pairs at once");
      mine["together"] = job.measure_link(ep, role.peer, job.o.method_arg("pairs-bench"));
    } else if (role.peer >= 0) {
      methods::serve(ep);
    }
    const nlohmann::json all = job.ranks.allgather(mine);
    if (job.leader()) summarize(job.doc.j, all, job.o.method_arg("pairs-bench"), !job.fit_for_timing);
  }

  // The leader's results from every rank's record.
  static void summarize(nlohmann::json& d, const nlohmann::json& records, const std::string& link_bench, bool unfit) {
    nlohmann::json alone, together = nlohmann::json::array();
    for (const auto& r : records) {
      if (r.contains("alone")) alone = r["alone"];
      if (r.contains("together")) together.push_back(r["together"]);
    }
    d["pairs"] = {{"method", link_bench},
                  {"pairs", together.size()},
                  {"alone", alone},
                  {"together", together},
                  {"reference",
                   "Culler et al. 3.5: half of the ranks request, each from its own replier; in a scalable "
                   "network every pair sees the parameters of one pair alone"}};
    d["parameters"] = alone.value("parameters", nlohmann::json::object());
    d["runs"] = alone.value("runs", nlohmann::json::array());
    nlohmann::json spread = nlohmann::json::object();
    nlohmann::json checks = alone.value("checks", nlohmann::json::array());
    bool agree = true;
    std::string worst;
    for (const auto& [pname, ref] : d["parameters"].items()) {
      if (!ref.is_object() || !ref.contains("value_ns") || !ref["value_ns"].is_number()) continue;
      const double a = ref["value_ns"].get<double>();
      const double a_ci = ref.value("ci95_ns", 0.0);
      std::vector<double> v;
      double dev = 0;
      for (const auto& t : together) {
        const auto p = t.value("parameters", nlohmann::json::object());
        if (!p.contains(pname) || !p[pname].contains("value_ns") || !p[pname]["value_ns"].is_number()) continue;
        const double x = p[pname]["value_ns"].get<double>();
        const double x_ci = p[pname].value("ci95_ns", 0.0);
        v.push_back(x);
        if (a > 0) dev = std::max(dev, std::abs(x - a) / a);
        // "The same to two significant digits": within 5%, or within the two intervals together.
        if (!analysis::agree({a, a_ci}, {x, x_ci}, {analysis::Intervals::sum, 0.05, a}).agree) {
          agree = false;
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s of pair %d: %.4g ns against %.4g ns alone", pname.c_str(),
                        t.value("requester", -1), x, a);
          worst = buf;
        }
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      spread[pname] = {{"alone_ns", a},
                       {"min_ns", v.front()},
                       {"median_ns", median_of(v)},
                       {"max_ns", v.back()},
                       {"max_relative_deviation", dev}};
    }
    d["pairs"]["spread"] = spread;
    std::string detail = agree ? "every pair's parameters within 5% (or the two 95% intervals) of the pair alone"
                               : "not the same as one pair alone: " + worst;
    if (unfit) detail += " (ranks shared cores: unfit for timing)";
    checks.push_back({{"name", "pairs at once see the parameters of one pair alone (Culler 3.5)"},
                      {"ok", agree && !unfit},
                      {"detail", detail}});
    d["checks"] = checks;
  }
};

}  // namespace logpb::methods::method
