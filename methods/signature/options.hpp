// The signature's options (Culler et al. 3.1-3.3): the M grid of bursts and the compute delays Delta.
// bulk's store signatures (section 4) take the grid too; quick and agree set them for their budgets.
#pragma once

#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/options.hpp"
#include "methods/method_option.hpp"
#include "shm/emulation.hpp"

namespace logpb::methods::opt {

inline const Typed<int> kMaxBurst = option::integer("max-burst", "signature: largest M", 512, 1, 1 << 20);

// In ns; 0 is auto, which the run resolves from the measured interruptions (app/main.cpp).
inline const Typed<double> kMaxBurstTime = option::parsed<double>(
    "max-burst-time",
    "signature: longest timed burst, or auto: 0.25 x this core's measured interval between interruptions (ticks, VM "
    "exits), within 100us..2ms; longer M are skipped unless the steady state needs them",
    0,
    [](const std::string& s) {
      if (s == "auto") return 0.0;
      const double ns = shm::parse_duration_ns(s);
      if (!(ns > 0)) throw UsageError("--max-burst-time must be positive (or auto)");
      return ns;
    },
    "auto");

// The compute delay Delta: a TSC deadline (default: what the kernel takes inside it counts as delay and is
// subtracted with it) or fixed work calibrated to Delta (compute: what is taken stretches the work and stays
// in o_s + o_r, as the papers' fixed computation; the stretch is recorded per curve).
inline const Typed<std::string> kDeltaKind = option::parsed<std::string>(
    "delta-kind", "signature: the compute delay Delta, deadline (a TSC deadline) or compute (fixed work that stretches)",
    "deadline", [](const std::string& s) {
      if (s != "deadline" && s != "compute")
        throw UsageError("--delta-kind takes deadline or compute, not '" + s + "'");
      return s;
    });

// Empty: the default grid up to --max-burst.
inline const Typed<std::vector<int>> kBursts =
    option::parsed<std::vector<int>>("bursts", "signature: explicit M list, e.g. 1,2,4,8", {},
                                     [](const std::string& s) { return cli::parse_int_list("--bursts", s); });

// In ns; empty: automatic, from --delta-factors.
inline const Typed<std::vector<double>> kDeltas = option::parsed<std::vector<double>>(
    "deltas", "signature: Delta list with units, e.g. 0,2us,8us (default: automatic)", {}, [](const std::string& s) {
      std::vector<double> v;
      if (s == "auto") return v;
      for (const auto& x : cli::split_list(s)) {
        const double d = shm::parse_duration_ns(x);
        if (d < 0 || (!v.empty() && d <= v.back()))
          throw UsageError("--deltas must be ascending non-negative durations");
        v.push_back(d);
      }
      return v;
    });

inline const Typed<std::vector<double>> kDeltaFactors = option::parsed<std::vector<double>>(
    "delta-factors", "signature: automatic Deltas as multiples of g (default 0.5,1,2,4)", {0.5, 1, 2, 4},
    [](const std::string& s) {
      std::vector<double> v;
      for (const auto& x : cli::split_list(s)) {
        double f = 0;
        try {
          f = std::stod(x);
        } catch (const std::exception&) {
          f = -1;
        }
        if (!(f > 0)) throw UsageError("--delta-factors: '" + x + "' is not a positive number");
        v.push_back(f);
      }
      return v;
    });

}  // namespace logpb::methods::opt
