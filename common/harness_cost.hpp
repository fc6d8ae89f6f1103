// What logpbench itself costs per message: the AM layer's send and receive against an NI that does
// nothing (NullTransport), measured in the run whose o_s and o_r it is part of. Every measured o_s holds
// one send through the AM layer and every o_r one receive (poll, validation, dispatch), so this much of
// each is the harness's and not the NI's (Culler et al. section 2.2: o is the processor's time, whoever
// spends it).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/clock.hpp"

namespace logpb {

struct HarnessCostOptions {
  int batch = 64;      // operations timed together: a TSC read pair per batch, not per operation
  // The figures are medians over batches, so an interrupted batch does not count. 500 batches (3 ms at
  // startup on a 2-core EPYC VM) scatter between rounds as 2000 did (9 ms): send 11.9-12.2 ns against
  // 11.9-12.1, receive 12.1-12.7 against 11.1-12.7 (bench/harness_cost, 8 rounds each): the state of the
  // machine, not the sample, sets the scatter.
  int batches = 500;
  int warmup_batches = 50;
};

// Per operation, in ns: the median over batches of a batch's time divided by its size, and the
// distribution-free 95% interval of that median, likewise divided.
struct CostFigure {
  double value_ns = NAN, ci95_ns = NAN;
};

struct HarnessCost {
  CostFigure send;              // request(): poll once (nothing there), fill, hand to the NI, count
  CostFigure recv;              // poll() handing over a reply: validation, window, dispatch to a handler
  CostFigure oneway_send;       // oneway(): the same with credits in place of the window
  CostFigure oneway_recv;       // a one-way request received, with the credit frame returned every C/2
  CostFigure ni_send, ni_recv;  // the null NI alone, no endpoint: what the figures above include of it
  HarnessCostOptions options;
  std::uint64_t frames = 0;  // dispatched to the handler, all counted and checked
  double seconds = 0;
  std::string error;  // empty when every frame went through as expected
};

// Pins nothing: call it on the core the run measures, after pinning.
HarnessCost measure_harness_cost(const Clock& clock, const HarnessCostOptions& opt = {});
// For meta.harness: each figure as {value_ns, ci95_ns}, or {value_ns: null, upper_bound_ns, error}.
nlohmann::json harness_cost_json(const HarnessCost& h);

}  // namespace logpb
