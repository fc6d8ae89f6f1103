// Bulk transfers (Culler et al. section 4): for each size n, the round trip T(n) of a store of n bytes
// and its acknowledgement, the bandwidth BW(n) = n / T(n), and the M x Delta signature of stores of n
// bytes, from whose send-only regime o_s(n) is read (Figure 12) and whose steady state is g(n).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../stats.hpp"
#include "messages.hpp"
#include "signature.hpp"

namespace logpb::methods {

struct BulkSize {
  std::uint32_t bytes = 0;
  Summary round_trip;     // T(n)
  SignatureCurve curve;   // Delta = 0 (and any further Deltas asked for)
  std::vector<SignatureCurve> extra;
};

template <class EP>
std::vector<BulkSize> bulk(EP& ep, ClientState& st, const Clock& clock, const std::vector<std::uint32_t>& sizes,
                           const SignatureConfig& cfg, const std::vector<double>& deltas_ns, const Hooks& hooks) {
  std::vector<BulkSize> out;
  for (std::uint32_t n : sizes) {
    BulkSize b;
    b.bytes = n;
    hooks.progress("bulk T(" + std::to_string(n) + " B)");
    std::vector<double> t;
    for (int i = 0; i < 20; ++i) round_trip(ep, st, clock, n);
    for (int i = 0; i < cfg.rtt.iterations; ++i) {
      const double x = round_trip(ep, st, clock, n).total_ns;
      if (x == x) t.push_back(x);
    }
    b.round_trip = summarize(t);
    auto store = [&ep, n](int i) { send_message(ep, n, static_cast<std::uint64_t>(i)); };
    b.curve = signature_curve(ep, clock, 0, cfg, hooks, "bulk " + std::to_string(n) + " B signature Delta=0", store);
    for (double d : deltas_ns)
      if (d > 0) b.extra.push_back(signature_curve(ep, clock, d, cfg, hooks, "bulk " + std::to_string(n) + " B", store));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace logpb::methods
