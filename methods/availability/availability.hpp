// --bench availability: Doerfler & Brightwell's post-work-wait loop (section 2): send and receive overhead
// and application availability per size, waiting for local completion.
#pragma once

#include <vector>

#include "methods/availability/analysis.hpp"
#include "methods/availability/loops.hpp"
#include "methods/availability/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct availability {
  static constexpr const char* name = "availability";
  static constexpr const char* summary = "Doerfler & Brightwell 2: overhead, availability per size";
  static constexpr const char* plot = "availability";
  static inline const std::vector<SharedFigure> shares{
      {"o_s_completion", "o_s_completion",
       "availability's send overhead is post, work, then wait for local completion, less the work (Doerfler & Brightwell 2): "
       "it holds what local completion costs, here: {local_completion}"},
      {"o_r", "o_r",
       "availability's o_r is a receive posted, work, then the receive completed, less the work (Doerfler & "
       "Brightwell 2)"},
  };
  static constexpr Needs needs{.bulk = true, .local_completion = true};
  static constexpr Scope scope = Scope::link;
  static inline const std::vector<std::uint32_t> default_sizes{8, 64, 512, 4096, 32768};
  using Run = std::vector<methods::DoerflerSize>;
  static inline const std::vector<MethodOption> options = {opt::kBaseThreshold, opt::kStopThreshold};

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::DoerflerConfig cfg;
    cfg.sizes = io.sizes;
    cfg.base_threshold = o.get(opt::kBaseThreshold);
    cfg.stop_threshold = o.get(opt::kStopThreshold);
    return methods::doerfler(link, st, clock, cfg, io.progress);
  }
  static nlohmann::json record(const Run& r, const Settings& o) {
    return methods::doerfler_record(r, o.get(opt::kBaseThreshold), o.get(opt::kStopThreshold));
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    return methods::doerfler_summary(runs);
  }
};

}  // namespace logpb::methods::method
