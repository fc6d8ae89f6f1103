// Kielmann et al.'s options (section 3): eps, both the relative precision of each round-trip figure and
// the saturation criterion RTT_1 < eps x RTT_n, and their Table 2's comparison of g(m) by saturation.
#pragma once

#include "methods/method_option.hpp"

namespace logpb::methods::opt {

inline const Typed<double> kEps =
    option::real("eps", "kielmann: relative precision and saturation criterion", 0.01, 1e-4, 0.5);
inline const Typed<bool> kSaturationCompare =
    option::flag("saturation-compare", "kielmann: also time g(m) by saturation at every size (their Table 2; minutes)",
                 "kielmann: skip that comparison (the default)");

}  // namespace logpb::methods::opt
