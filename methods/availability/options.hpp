// Doerfler & Brightwell's thresholds (section 2): the work grows while an iteration stays within
// base_threshold x base_t, and the loop stops once it passes stop_threshold x base_t. availability takes
// them, and agree for its availability phase.
#pragma once

#include <utility>

#include "methods/method_option.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::opt {

inline const Typed<double> kBaseThreshold =
    option::real("base-threshold", "availability: base_t threshold (1.02-1.05)", 1.03, 1.001, 2);
// Read after --base-threshold: every descriptor that takes both lists that one first.
inline const Typed<double> kStopThreshold =
    option::real("stop-threshold", "availability: stop threshold (1.5-2)", 1.5, [](const Settings& so_far) {
      return std::pair{so_far.get(kBaseThreshold), 100.0};
    });

}  // namespace logpb::methods::opt
