// Bulk transfers (Culler et al. section 4): for each size n, the round trip T(n) of a store of n bytes
// and its acknowledgement, the bandwidth BW(n) = n / T(n), and the M x Delta signature of stores of n
// bytes, from whose send-only regime o_s(n) is read (Figure 12) and whose steady state is g(n).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "methods/messages.hpp"
#include "methods/signature/loops.hpp"

namespace logpb::methods {

struct BulkSize {
  std::uint32_t bytes = 0;
  Summary round_trip;      // T(n): store of n bytes and its acknowledgement
  Summary get_round_trip;  // a get of n bytes, until its completion handler ran
  SignatureCurve curve;    // Delta = 0 (and any further Deltas asked for)
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
    // get: the peer's segment to the upper half of ours, completed by a local handler.
    static bool got;
    ep.endpoint().on(kGotBack, [](typename EP::Endpoint&, const am::Frame&) { got = true; });
    std::vector<double> tg;
    for (int i = 0; i < cfg.rtt.iterations; ++i) {
      got = false;
      const std::uint64_t t0 = tsc::now();
      ep.get(kGotBack, 0, n, max_message(ep));
      const bool ok = ep.wait_until([] { return got; });
      const std::uint64_t t1 = tsc::now_end();
      if (ok) tg.push_back(clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()));
    }
    b.get_round_trip = summarize(tg);
    auto store = [&ep, n](int i) { send_message(ep, n, static_cast<std::uint64_t>(i)); };
    b.curve = signature_curve(ep, clock, 0, cfg, hooks, "bulk " + std::to_string(n) + " B signature Delta=0", store);
    for (double d : deltas_ns)
      if (d > 0)
        b.extra.push_back(signature_curve(ep, clock, d, cfg, hooks, "bulk " + std::to_string(n) + " B", store));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace logpb::methods
