// --bench kielmann: Kielmann, Bal and Verstoep's fast measurement of parameterized LogP (section 3):
// g(0) by saturation, then round trips per size for o_s(m), o_r(m), g(m); LogP/LogGP by their Table 1.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "methods/descriptor.hpp"
#include "methods/kielmann/analysis.hpp"
#include "methods/kielmann/loops.hpp"
#include "methods/kielmann/options.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::method {

struct kielmann {
  static constexpr const char* name = "kielmann";
  static constexpr const char* summary = "Kielmann et al. 3: parameterized LogP, LogGP by Table 1";
  static constexpr const char* plot = "kielmann";
  // Its LogP g is g(1), g(0) plus a byte's round-trip cost: g(0) is the saturation itself, the figure the
  // papers set against the signature's steady state.
  static inline const std::vector<SharedFigure> shares{
      {"o_s", "o_s_0",
       "Kielmann's o_s(0) is the time inside the send call of one frame, without the poll an AM request makes "
       "first (Kielmann et al. 3)",
       0},
      {"o_r", "o_r_0",
       "Kielmann's o_r(0) is the receive call's time after waiting Delta > RTT, the reply already there: the poll "
       "that finds it, its validation, dispatch and copy (Kielmann et al. 3)",
       0},
      {"o_s_plus_o_r", "o_s_plus_o_r", "Kielmann's o_s(0) + o_r(0), timed apart (Kielmann et al. 3)"},
      {"g", "g0",
       "Kielmann's g(0) is a one-way saturation, n messages and one reply: max(g_NI, o_s, o_r) (Kielmann et al. "
       "3){bottleneck}",
       0},
      {"rtt", "rtt", "Kielmann's RTT(0) is the round trip of an empty message"},
      {"L", "L",
       "Kielmann's L is LogP's by their Table 1: (RTT(0) - 2 g(0))/2 + g(1) - o_s(1) - o_r(1), so it carries their "
       "g(0)"},
  };
  static constexpr Needs needs{.bulk = true};
  static constexpr Scope scope = Scope::link;
  using Run = methods::KielmannResult;
  static inline const std::vector<MethodOption> options = {opt::kEps, opt::kSaturationCompare};

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::KielmannConfig cfg;
    cfg.eps = o.get(opt::kEps);
    cfg.compare_saturation = o.get(opt::kSaturationCompare);
    if (!o.sizes.empty()) cfg.max_bytes = o.sizes.back();  // the largest size given bounds the adaptive range
    return methods::kielmann(link, st, clock, cfg, io.progress, io.done);
  }
  static nlohmann::json record(const Run& r, const Settings&) { return methods::kielmann_record(r); }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    return methods::kielmann_summary(runs);
  }
};

}  // namespace logpb::methods::method
