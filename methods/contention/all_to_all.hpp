// --bench all-to-all: the all-to-all remap of Moritz & Frank (LoGPC) 5.1: rank p's i-th message goes to
// (p + 1 + i mod (P-1)) mod P. Synchronous (5.1.1): a request and its reply per iteration, the next issued
// once the reply is in; requests from others are served meanwhile. LogP prices an iteration at
// 2(o_s + L + o_r), LoPC adds the handler contention C_r, LoGPC the network's 2 C_n. Asynchronous (5.1.2):
// one-way messages, never waiting; LogP prices an iteration at o_s + o_r.
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

struct all_to_all {
  static constexpr const char* name = "all-to-all";
  static constexpr const char* summary =
      "Moritz & Frank 5.1: all-to-all remap, synchronous and asynchronous, cost per iteration";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::job;
  static constexpr ContentionShape contention = ContentionShape::all_to_all;
  static inline const std::vector<MethodOption> options = {contention::kRoundSeconds, contention::kMinMessages};
  static void check(const Settings& o) { contention::check_common(o); }
  static void check_size(int n) {
    if (n < 2) throw UsageError("--bench all-to-all needs at least 2 ranks");
  }
  static Role role(int r, int n) { return {true, (r + 1) % n, 0}; }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role&) {
    job.ranks.set_timeout(0);
    const int n = job.ranks.size();
    methods::ContentionState st;
    st.done.assign(static_cast<std::size_t>(n), 0);
    methods::install_contention(ep, st);
    // Iterations: a multiple of P-1, so every rank receives as many messages as it sends.
    auto whole = [&](int timed) { return (timed + n - 2) / (n - 1) * (n - 1); };
    auto phase = [&](bool sync, int timed) {
      st.begin_round(n - 1);
      job.ranks.barrier();
      const int skip = whole(std::max(2, timed / 10));
      const int total = whole(skip + timed);
      const methods::Stream s = methods::remap(ep, st, total, skip, sync);
      nlohmann::json mine = contention::gap_json(methods::stream_gap(s, job.clock));
      mine["rank"] = job.ranks.rank();
      return job.ranks.allgather(mine);
    };
    nlohmann::json result = {{"ranks", n}, {"bytes", 0}, {"pattern", "(p + 1 + i mod (P-1)) mod P"}};
    for (const bool sync : {true, false}) {
      const char* key = sync ? "synchronous" : "asynchronous";
      if (job.leader()) job.progress(std::string(key) + ": pilot");
      const auto pilot = contention::combine(phase(sync, contention::timed_messages(job.o, NAN)));
      if (job.leader()) job.progress(key);
      const nlohmann::json ranks = phase(sync, contention::timed_messages(job.o, pilot.value));
      result[key] = {{"per_iteration", contention::ns_json(contention::combine(ranks))}, {"per_rank", ranks}};
      if (job.leader()) {
        write(job.doc.j, result, job.fit_for_timing);
        job.doc.save();
      }
    }
  }

  static void write(nlohmann::json& d, const nlohmann::json& result, bool fit) {
    d["all_to_all"] = result;
    d["all_to_all"]["reference"] =
        "Moritz & Frank 5.1: LogP 2(o_s + L + o_r) synchronous, o_s + o_r asynchronous, per iteration";
    d["parameters"] = nlohmann::json::object();
    if (result.contains("synchronous")) d["parameters"]["sync_iter"] = result["synchronous"]["per_iteration"];
    if (result.contains("asynchronous")) d["parameters"]["async_iter"] = result["asynchronous"]["per_iteration"];
    d["checks"] = nlohmann::json::array({contention::timing_check(fit)});
  }
};

}  // namespace logpb::methods::method
