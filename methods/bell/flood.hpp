// --bench flood: Bell et al.'s flood (section 4.2): one-way messages of each size at queue depth q, waiting
// for local completion, one final reply; g, G and the crossover, and, by the overlap test at the end sizes,
// which stage (NI, o_s, o_r) the flood saw.
#pragma once

#include <vector>

#include "methods/bell/analysis.hpp"
#include "methods/bell/loops.hpp"
#include "methods/bell/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct flood {
  static constexpr const char* name = "flood";
  static constexpr const char* summary = "Bell et al. 4.2: g(n), G, crossover, limiting stage";
  static constexpr const char* plot = "flood";
  static constexpr Needs needs{.bulk = true, .local_completion = true};
  static constexpr Scope scope = Scope::link;
  static constexpr Takes takes{.tx_burst = true};
  static inline const std::vector<std::uint32_t> default_sizes{8,    32,   128,   512,
                                                               2048, 8192, 32768, 131072};  // 8 B .. 128 KiB
  using Run = std::vector<methods::BellSize>;
  // no: the flood's rate alone, without the overlap test that names the limiting stage (which costs far
  // more than the flood: minutes in an emulated NI such as the Soft-RoCE lab's, against ib_send_bw).
  // fixed: the flood runs at --queue-depth as given, even where a deeper queue would be faster (the figure
  // then says so only if the queue is seen to limit it).
  static inline const std::vector<MethodOption> options = {
      opt::kQueueDepth,
      opt::kMessages,
      opt::kBellRuns,
      {"flood-overlap", "yes|no", "also run the CPU overlap test at the end sizes (names the limiting stage)",
       "yes"},
      {"flood-queue", "adapt|fixed",
       "adapt doubles --queue-depth while a deeper queue is faster (local completion on RC waits for the ACK)",
       "adapt"}};
  static void check(const Settings& o) {
    const std::string& v = o.method_arg("flood-overlap");
    if (v != "yes" && v != "no") throw UsageError("--flood-overlap takes yes or no, not '" + v + "'");
    const std::string& q = o.method_arg("flood-queue");
    if (q != "adapt" && q != "fixed") throw UsageError("--flood-queue takes adapt or fixed, not '" + q + "'");
  }

  // run and analyse read --tx-burst, which is DPDK's (dpdk::CliOptions), so they take the whole command
  // line O the runner holds rather than Settings.
  template <class L, class O>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const O& o, RunIO& io) {
    // With batched sends (--tx-burst) the overlap test does not run: its sends at q = 1 go one by one, so
    // the o_s and o_r it infers would not be the batched stream's, and naming the limiting stage from them
    // would be wrong.
    const bool overlap = o.method_arg("flood-overlap") == "yes" && o.tx_burst == 1;
    const methods::BellConfig cfg{io.sizes,
                                  o.get(opt::kQueueDepth),
                                  o.get(opt::kMessages),
                                  o.get(opt::kBellRuns),
                                  overlap,
                                  o.method_arg("flood-queue") == "adapt"};
    return methods::bell_flood(link, st, clock, cfg, io.progress);
  }
  static nlohmann::json record(const Run& r, const Settings&) { return methods::bell_record(r, true); }
  template <class O>
  static nlohmann::json analyse(const std::vector<Run>& runs, const O& o) {
    nlohmann::json j = methods::bell_summary(runs, true);
    if (o.tx_burst > 1 && j["parameters"].contains("g"))
      j["parameters"]["g"]["sends"] =
          "batched: up to " + std::to_string(o.tx_burst) +
          " frames per PMD tx burst (--tx-burst); the overlap test, which names the limiting "
          "stage from single sends, did not run";
    return j;
  }
};

}  // namespace logpb::methods::method
