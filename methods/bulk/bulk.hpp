// --bench bulk: Culler et al.'s bulk transfer (section 4): per size T(n), BW(n), the get's round trip and
// the signature of n-byte stores, whose send-only regime is o_s(n) (Figure 12).
#pragma once

#include <algorithm>
#include <vector>

#include "methods/bulk/analysis.hpp"
#include "methods/bulk/loops.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"
#include "methods/signature/options.hpp"

namespace logpb::methods::method {

struct bulk {
  static constexpr const char* name = "bulk";
  static constexpr const char* summary = "Culler et al. 4: T(n), BW(n), get, o_s(n) per size";
  static constexpr const char* plot = "bulk";
  // The round trip of an n-byte store is Culler et al.'s T(n) (section 4), and n / T(n) its bandwidth.
  static constexpr analysis::compare::Reading compare_as{.per_size_rtt = "T", .bandwidth = true};
  static constexpr Needs needs{.bulk = true, .get = true};
  static constexpr bool burst_cap = true;
  static constexpr Scope scope = Scope::link;
  static inline const std::vector<std::uint32_t> default_sizes{8, 64, 256, 1024, 4096};  // Figure 12 goes to 4 KiB
  using Run = std::vector<methods::BulkSize>;
  static inline const std::vector<MethodOption> options = {opt::kMaxBurst, opt::kMaxBurstTime, opt::kBursts,
                                                           opt::kDeltas};

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::SignatureConfig cfg;
    const std::vector<int>& bursts = o.get(opt::kBursts);
    cfg.bursts = bursts.empty() ? methods::default_bursts(std::min(o.get(opt::kMaxBurst), 64)) : bursts;
    cfg.rule = o.rule;
    cfg.rtt = {std::min(o.iterations, 2000), 0};
    cfg.max_burst_ns = o.get(opt::kMaxBurstTime);
    cfg.window = link.window();
    cfg.max_extend = 0;  // bulk curves are read for o_s(n) and T(n); the steady state is not required
    methods::Hooks hooks;
    hooks.progress = io.progress;
    return methods::bulk(link, st, clock, io.sizes, cfg, o.get(opt::kDeltas), hooks);
  }
  static nlohmann::json record(const Run& r, const Settings& o) { return methods::bulk_record(r, o.raw); }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) { return methods::bulk_summary(runs); }
};

}  // namespace logpb::methods::method
