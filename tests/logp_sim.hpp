// A small discrete-event simulation of the system the signature method measures: two hosts, each a CPU
// and an emulated NI (shm/transport.hpp), the client running the timed loop of
// methods/signature/loops.hpp through am::Endpoint::request(), the server the echo loop of
// methods/protocol.hpp. It produces the curves and the round trip that fit_signature reads, so
// the extractor is tested on data made by the mechanism, not by the extractor's own closed-form model.
//
// What is simulated, and why it is enough:
//   CPU   sequential; an overhead of d ns occupies it for d (plus optional jitter and interrupt stalls).
//   NI    o_s is spent on the CPU from send entry; the message departs at max(entry + o_s, previous
//         departure + g) and becomes visible at departure + L. At the receiver arrivals are at least g
//         apart: arrival_k = max(visible_k, arrival_{k-1} + g). A poll at time t consumes the head message
//         only if its arrival <= t, and then spends o_r (padded from the poll, as the emulator does).
//   client request(): ONE poll (running at most one reply already arrived), then while outstanding >= W
//         poll until a reply arrives and run it, then send. Then the busy delay Delta. Replies that arrive
//         while the client is in o_s or Delta wait for its next poll.
//   server loop of polls, FIFO: request k is taken at max(its arrival, end of the previous reply), costs
//         o_r, then its reply costs o_s (and goes through the server's NI the same way).
// The server's handling of request k depends only on requests 0..k, so the reply's arrival time at the
// client is computed the moment the request is sent; the client then walks its own timeline in order.
// Each point is repeated through the real measure_point (median, order-statistic 95% interval).
#pragma once

#include <vector>

#include "analysis/signature_fit.hpp"
#include "common/stats.hpp"

namespace logpb::sim {

struct Machine {  // the truth, ns
  double o_s = 0, o_r = 0, g = 0, L = 0;
  int window = 32;  // AM window W: requests outstanding at most
};

struct Noise {
  double jitter = 0;                                // each CPU overhead d costs d + Exp(mean jitter * d) (spin overrun)
  double stall_every_ns = 0;                        // interrupts / VM exits: Poisson on each host's wall time (0: none)
  double stall_min_ns = 10e3, stall_max_ns = 50e3;  // a stall's length, uniform
  double empty_poll_ns = 0;  // real cost of a poll that finds nothing (not padded by the emulator)
  unsigned seed = 1;
};

struct Options {
  std::vector<double> factors{0.5, 1, 2, 4};  // Delta grid = auto_deltas(steady cost at Delta = 0, factors)
  std::vector<double> deltas_ns;              // or an explicit grid (without 0)
  int max_burst = 512;                        // methods::default_bursts(max_burst)
  double max_burst_ns = 2e6;                  // a burst longer than this is not measured ...
  int min_points = 8;                         // ... past the first min_points M values ...
  int min_window_multiple = 8;                // ... nor before M reaches this many windows
  int extend_first = 0;  // longer bursts for a Delta = 0 curve the fit finds in its transition (loops.hpp: 8)
  StopRule rule;                              // as the real run: batches of 50, +-5%, cap 2000
  int rtt_iterations = 1000;
  // The Delta handed to the fit as Curve::delta_ns. The harness (methods/signature.hpp) subtracts the
  // Delta each burst actually spent (its mean); a standalone calibration (the median of 1001 delays, as the
  // harness once did) differs from it when delays are skewed, and biases o_r upward with Delta.
  enum class DeltaReport { standalone_median, in_burst_mean } delta_report = DeltaReport::in_burst_mean;
};

struct Result {
  std::vector<analysis::Curve> curves;  // curves[0]: Delta = 0; delta_ns is the median achieved delay
  analysis::Param rtt;                  // median ping-pong round trip, order-statistic interval
  std::vector<double> requested_deltas;
  double steady0 = 0;  // the simulation's own Delta = 0 steady-state cost (grid base)
};

Result simulate(const Machine& m, const Noise& noise = {}, const Options& opt = {});

// One timed burst of M requests with compute delay delta, from a quiet system: the per-message cost.
// Exposed so the simulation itself can be checked against hand-derived values.
double simulate_burst(const Machine& m, int M, double delta_ns, const Noise& noise = {});

}  // namespace logpb::sim
