// --bench k-to-one: Culler et al. 3.5, third paragraph and Table 4: "K nodes making requests to a single
// node". Rank 0 replies; in the round of K, ranks 1..K each stream requests to it as fast as their window
// allows (the signature's Delta = 0 steady state). Under prolonged endpoint contention LogP says the
// aggregate rate is the contended receiver's, so each sender's gap grows in proportion to K:
// g(K)/g(1) = K once the replier is the bottleneck. Table 4 measured 16.8 (Meiko, K = 15), 3 (Myrinet,
// K = 3) and 6 (Paragon, K = 7).
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

struct k_to_one {
  static constexpr const char* name = "k-to-one";
  static constexpr const char* summary = "Culler et al. 3.5, Table 4: K requesters to one replier, g(K)/g(1) per K";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::job;
  static constexpr ContentionShape contention = ContentionShape::k_to_one;
  static inline const std::vector<MethodOption> options = {contention::kK, contention::kRoundSeconds,
                                                           contention::kMinMessages};
  static void check(const Settings& o) { contention::check_common(o); }
  static void check_size(int n) {
    if (n < 2) throw UsageError("--bench k-to-one needs at least 2 ranks (one replier and K >= 1 requesters)");
  }
  static Role role(int r, int) { return {r > 0, r > 0 ? 0 : -1, 0}; }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role&) {
    job.ranks.set_timeout(0);  // rounds are long; collectives still see a dead rank and signals
    const int me = job.ranks.rank(), n = job.ranks.size();
    const std::vector<int> ks = contention::k_list(job.o, n - 1);
    methods::ContentionState st;
    st.done.assign(static_cast<std::size_t>(n), 0);
    methods::install_contention(ep, st);
    auto say = [&](const std::string& s) {
      if (job.leader()) job.progress(s);
    };
    // One round: ranks 1..k stream `timed` requests each to rank 0; returns every rank's record.
    auto round = [&](int k, int timed) {
      st.begin_round(k);
      job.ranks.barrier();
      nlohmann::json mine = nlohmann::json::object();
      if (me == 0) {
        ep.wait_until([&] { return st.quits >= k; });
      } else if (me <= k) {
        const int skip = contention::skip_for(ep.window(), timed);
        const methods::Stream s = methods::request_stream(ep, st, skip + timed, skip, true, [](int) { return 0; });
        ep.oneway(0, methods::kStreamQuit);
        mine = contention::gap_json(methods::stream_gap(s, job.clock));
        mine["rank"] = me;
      }
      return job.ranks.allgather(mine);
    };
    auto senders_of = [](const nlohmann::json& all) {
      nlohmann::json gaps = nlohmann::json::array();
      for (const auto& r : all)
        if (r.contains("rank")) gaps.push_back(r);
      return gaps;
    };
    // A short pilot sizes the rounds (every rank computes the same sizes from the gathered figures).
    say("pilot: one requester");
    const contention::Combined pilot =
        contention::combine(senders_of(round(1, contention::timed_messages(job.o, NAN))));
    contention::Combined g1;
    nlohmann::json per_k = nlohmann::json::array();
    for (int k : ks) {
      say("K = " + std::to_string(k) + " requesters to rank 0");
      const double expect = (std::isfinite(g1.value) ? g1.value : pilot.value) * k;  // LogP's worst case
      const nlohmann::json gaps = senders_of(round(k, contention::timed_messages(job.o, expect)));
      const contention::Combined gk = contention::combine(gaps);
      if (k == 1) g1 = gk;
      per_k.push_back({{"k", k},
                       {"g", contention::ns_json(gk)},
                       {"ratio", contention::plain_json(contention::ratio(gk, g1))},
                       {"logp_expectation", k},
                       {"senders", gaps}});
      if (job.leader()) {
        write(job.doc.j, per_k, g1, job.fit_for_timing);
        job.doc.save();
      }
    }
  }

  static void write(nlohmann::json& d, const nlohmann::json& per_k, const contention::Combined& g1, bool fit) {
    d["per_k"] = per_k;
    d["contention"] = {{"method", "k-to-one"},
                       {"replier", 0},
                       {"reference",
                        "Culler et al. 3.5, Table 4: each sender's gap with K senders to one node, "
                        "against one sender; LogP expects K when the replier is the bottleneck"},
                       {"paper_table4",
                        {{{"machine", "Meiko CS-2"}, {"k", 15}, {"ratio", 16.8}},
                         {{"machine", "Myrinet"}, {"k", 3}, {"ratio", 3.0}},
                         {{"machine", "Paragon"}, {"k", 7}, {"ratio", 6.0}}}}};
    d["parameters"] = {{"g", contention::ns_json(g1)}};
    d["parameters"]["g"]["note"] = "one requester alone (K = 1)";
    const auto& last = per_k.back();
    d["parameters"]["g_K"] = last["g"];
    d["parameters"]["g_K"]["note"] = "each requester's gap at K = " + std::to_string(last["k"].get<int>());
    d["checks"] = nlohmann::json::array({contention::timing_check(fit)});
  }

  static void print(std::FILE* out, const nlohmann::json& doc) {
    std::fprintf(out, "  %4s %14s %12s %16s  %s\n", "K", "g(K) (us)", "95% CI", "g(K)/g(1)", "LogP: K");
    for (const auto& e : doc.value("per_k", nlohmann::json::array())) {
      const auto& g = e["g"];
      const auto& r = e["ratio"];
      if (!g["value_ns"].is_number()) continue;
      std::fprintf(out, "  %4d %14.3f %12.3f %9.3f ± %-5.3f  %d\n", e["k"].get<int>(),
                   g["value_ns"].get<double>() / 1e3,
                   (g["ci95_ns"].is_number() ? g["ci95_ns"].get<double>() : NAN) / 1e3,
                   r["value"].is_number() ? r["value"].get<double>() : NAN,
                   r["ci95"].is_number() ? r["ci95"].get<double>() : NAN, e["k"].get<int>());
    }
  }
};

}  // namespace logpb::methods::method
