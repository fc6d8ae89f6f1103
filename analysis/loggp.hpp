// Fits over message size for the methods beyond the signature: Bell et al.'s g and G with the
// 'large message' crossover, Culler et al.'s naive T_0 + n / R_inf bulk model, and Kielmann et al.'s
// parameterized LogP converted to LogP/LogGP by their Table 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "signature_fit.hpp"

namespace logpb::analysis {

struct GapFit {
  Param g, G;         // G in ns per byte
  Param crossover;    // bytes where G*n equals g (Bell's 'large message' size), in value_ns as bytes
  std::vector<double> large_sizes;  // the sizes the G fit used
};
// sizes ascending; gap[i] the per-message time at sizes[i] (ns); ci[i] its half-width (may be NaN).
GapFit fit_gap(const std::vector<double>& sizes, const std::vector<double>& gap, const std::vector<double>& ci);

struct NaiveBulk {
  Param T0, R_inf;  // T0 ns; R_inf in bytes per ns (= GB/s)
  std::string warning;
};
NaiveBulk fit_naive_bulk(const std::vector<double>& sizes, const std::vector<double>& T);

}  // namespace logpb::analysis
