// --bench one-to-k: Culler et al. 3.5, second paragraph: "a single node issues requests to many other
// nodes". Rank 0 streams requests round robin over ranks 1..K, as fast as its window to each allows. LogP
// says nothing changes; the paper saw the gap fall about 30% (1.4 times the bandwidth) on Myrinet and
// Paragon, where turning a request into a reply is the bottleneck, and no change on the Meiko.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "methods/contention/figures.hpp"
#include "methods/contention/loops.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct one_to_k {
  static constexpr const char* name = "one-to-k";
  static constexpr const char* summary =
      "Culler et al. 3.5: one requester round robin over K repliers, g(K) and the gain";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::job;
  static constexpr ContentionShape contention = ContentionShape::one_to_k;
  static inline const std::vector<MethodOption> options = {contention::kK, contention::kRoundSeconds,
                                                           contention::kMinMessages};
  static void check(const Settings& o) { contention::check_common(o); }
  static void check_size(int n) {
    if (n < 2) throw UsageError("--bench one-to-k needs at least 2 ranks (one requester and K >= 1 repliers)");
  }
  static Role role(int r, int) { return {r == 0, r == 0 ? 1 : 0, 0}; }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role&) {
    job.ranks.set_timeout(0);
    const int me = job.ranks.rank(), n = job.ranks.size();
    const std::vector<int> ks = contention::k_list(job.o, n - 1);
    methods::ContentionState st;
    st.done.assign(static_cast<std::size_t>(n), 0);
    methods::install_contention(ep, st);
    auto round = [&](int k, int timed) {
      st.begin_round(1);
      job.ranks.barrier();
      nlohmann::json mine = nlohmann::json::object();
      if (me == 0) {
        // The window is per replier: K of them hold K windows, so the first K*W requests fill them.
        const int skip = contention::skip_for(ep.window() * k, timed);
        const methods::Stream s =
            methods::request_stream(ep, st, skip + timed, skip, false, [k](int i) { return 1 + i % k; });
        for (int r = 1; r <= k; ++r) ep.oneway(r, methods::kStreamQuit);
        mine = contention::gap_json(methods::stream_gap(s, job.clock));
        mine["rank"] = me;
      } else if (me <= k) {
        ep.wait_until([&] { return st.quits >= 1; });
      }
      return job.ranks.allgather(mine).at(0);
    };
    if (job.leader()) job.progress("pilot: one replier");
    const nlohmann::json pilot = round(1, contention::timed_messages(job.o, NAN));
    contention::Combined g1;
    nlohmann::json per_k = nlohmann::json::array();
    for (int k : ks) {
      if (job.leader()) job.progress("rank 0 to K = " + std::to_string(k) + " repliers");
      const double expect = std::isfinite(g1.value)         ? g1.value
                            : pilot["value_ns"].is_number() ? pilot["value_ns"].get<double>()
                                                            : NAN;
      const nlohmann::json g = round(k, contention::timed_messages(job.o, expect));
      const contention::Combined gk = contention::combine(nlohmann::json::array({g}));
      if (k == 1) g1 = gk;
      per_k.push_back({{"k", k},
                       {"g", contention::ns_json(gk)},
                       {"ratio", contention::plain_json(contention::ratio(gk, g1))},
                       {"gain", contention::plain_json(contention::ratio(g1, gk))},
                       {"messages", g["messages"]}});
      if (job.leader()) {
        write(job.doc.j, per_k, g1, job.fit_for_timing);
        job.doc.save();
      }
    }
  }

  static void write(nlohmann::json& d, const nlohmann::json& per_k, const contention::Combined& g1, bool fit) {
    d["per_k"] = per_k;
    d["contention"] = {{"method", "one-to-k"},
                       {"requester", 0},
                       {"reference",
                        "Culler et al. 3.5: one node requesting from K nodes; LogP expects no change, "
                        "the paper saw about 1.4 times the bandwidth where the replier is the bottleneck"}};
    d["parameters"] = {{"g", contention::ns_json(g1)}};
    d["parameters"]["g"]["note"] = "one replier (K = 1)";
    d["parameters"]["g_K"] = per_k.back()["g"];
    d["parameters"]["g_K"]["note"] =
        "round robin over K = " + std::to_string(per_k.back()["k"].get<int>()) + " repliers";
    d["checks"] = nlohmann::json::array({contention::timing_check(fit)});
  }

  static void print(std::FILE* out, const nlohmann::json& doc) {
    std::fprintf(out, "  %4s %14s %12s %18s\n", "K", "g(K) (us)", "95% CI", "gain g(1)/g(K)");
    for (const auto& e : doc.value("per_k", nlohmann::json::array())) {
      if (!e["g"]["value_ns"].is_number() || !e["gain"]["value"].is_number()) continue;
      std::fprintf(out, "  %4d %14.3f %12.3f %10.3f ± %-5.3f\n", e["k"].get<int>(),
                   e["g"]["value_ns"].get<double>() / 1e3,
                   (e["g"]["ci95_ns"].is_number() ? e["g"]["ci95_ns"].get<double>() : NAN) / 1e3,
                   e["gain"]["value"].get<double>(), e["gain"]["ci95"].get<double>());
    }
  }
};

}  // namespace logpb::methods::method
