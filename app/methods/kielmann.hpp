// --bench kielmann: Kielmann, Bal and Verstoep's fast measurement of parameterized LogP (section 3):
// g(0) by saturation, then round trips per size for o_s(m), o_r(m), g(m); LogP/LogGP by their Table 1.
#pragma once

#include <vector>

#include "analysis/kielmann.hpp"
#include "app/method.hpp"
#include "app/options.hpp"
#include "common/methods/kielmann.hpp"

namespace logpb::app::method {

struct kielmann {
  static constexpr const char* name = "kielmann";
  static constexpr const char* summary = "Kielmann et al. 3: parameterized LogP, LogGP by Table 1";
  static constexpr const char* plot = "kielmann";
  static constexpr Needs needs{.bulk = true};
  static constexpr Scope scope = Scope::link;
  using Run = methods::KielmannResult;

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Options& o, RunIO& io) {
    methods::KielmannConfig cfg;
    cfg.eps = o.eps;
    cfg.compare_saturation = o.compare_saturation;
    if (!o.sizes.empty()) cfg.max_bytes = o.sizes.back();  // the largest size given bounds the adaptive range
    return methods::kielmann(link, st, clock, cfg, io.progress);
  }
  static nlohmann::json record(const Run& r, const Options&) { return analysis::kielmann_record(r); }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Options&) { return analysis::kielmann_summary(runs); }
};

}  // namespace logpb::app::method
