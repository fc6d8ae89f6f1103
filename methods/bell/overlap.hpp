// --bench overlap: Bell et al.'s CPU overlap test (section 4.3) at each size: o_s(n) and o_r(n) inferred
// from the computation a message can hide.
#pragma once

#include <vector>

#include "methods/bell/analysis.hpp"
#include "methods/bell/loops.hpp"
#include "methods/bell/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct overlap {
  static constexpr const char* name = "overlap";
  static constexpr const char* summary = "Bell et al. 4.3: o_s_completion(n), o_r_stream(n) by CPU overlap";
  static constexpr const char* plot = "overlap";
  static inline const std::vector<SharedFigure> shares{
      {"o_s_completion", "o_s_completion",
       "overlap's send overhead is inferred from the computation a stream of sends, each waited for to local "
       "completion, cannot hide (Bell et al. 4.3): it holds what local completion costs, here: {local_completion}"},
      {"o_r_stream", "o_r_stream",
       "overlap's receive overhead is the per-message cost of a saturated stream, from the computation it cannot "
       "hide (Bell et al. 4.3): one poll hands up several frames and shares its cost among them"},
      {"rtt", "rtt", "overlap's RTT is the median round trip of its smallest message ({first_bytes} B, a bulk store)"},
  };
  static constexpr Needs needs{.bulk = true, .local_completion = true};
  static constexpr Scope scope = Scope::link;
  static inline const std::vector<std::uint32_t> default_sizes{8, 32, 128, 512, 2048, 8192, 32768, 131072};
  using Run = std::vector<methods::BellSize>;
  static inline const std::vector<MethodOption> options = {opt::kQueueDepth, opt::kMessages, opt::kBellRuns};

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    const methods::BellConfig cfg{io.sizes, o.get(opt::kQueueDepth), o.get(opt::kMessages), o.get(opt::kBellRuns),
                                  true};
    return methods::bell_overlap(link, st, clock, cfg, io.progress);
  }
  static nlohmann::json record(const Run& r, const Settings&) { return methods::bell_record(r, false); }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    return methods::bell_summary(runs, false);
  }
};

}  // namespace logpb::methods::method
