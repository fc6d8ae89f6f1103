// Round trip of one small AM: request, the peer's handler replies, the reply handler runs here. Times
// every iteration and keeps the full distribution (Culler et al. section 3.2 needs RTT to solve for L).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/disturbance.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "methods/messages.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

struct PingpongConfig {
  int iterations = 10000;
  int warmup = 1000;
  std::uint32_t bytes = 0;  // 0: a small AM (one 64-byte frame); n: a bulk store of n bytes each way out
  // Whether each request polls once before it is sent, as the AM layer's request() does by default (GAM's
  // am_request). The signature keeps it: its L = RTT/2 - o_s - o_r takes o_s from requests that poll. The
  // ping-pong on its own sends without it, as a ping-pong program (and perftest, and MPI's) does: that poll
  // finds nothing in a ping-pong and costs one empty poll per round trip (40-50 ns over MPI/vader).
  bool poll_before_send = true;
  // Round trips after the timed ones during which the replier times its own turnaround (0: none).
  int turnaround_iterations = 0;
};

// The replier's turnaround, measured after the timed round trips and kept apart from them: for
// turnaround_iterations more round trips the replier times each of its polls that handed up a request
// (Endpoint::time_service: the receive, the handler and the reply's send, Culler et al. 3.5's service).
// Its two TSC reads per poll lengthen those round trips, so they are not samples of rtt_ns; their median
// is kept beside the turnaround. Where two ping-pongs differ (logpbench against a bare loop or another
// library), this is the replier's part of the difference, in ns; the round trips beside it show what that
// time costs the requester, which need not be one for one (docs/results/lab-notes.md, the DPDK step).
struct Turnaround {
  double service_ns = NAN, service_p90_ns = NAN;  // per request: median and 90th percentile (NaN: not said)
  std::uint64_t requests = 0;                     // requests the replier timed
  double rtt_median_ns = NAN;                     // the round trips meanwhile
  int iterations = 0;
};

struct PingpongResult {
  std::vector<double> rtt_ns;
  Summary summary;
  std::uint64_t lost = 0;  // iterations whose request or reply was lost: not in rtt_ns
  Turnaround turnaround;
  // The timed round trips in batches, each a segment (common/disturbance.hpp); rtt_ns holds the clean ones'.
  SegmentBook segments{"batches of round trips", 0, 0, 0};
  int batch = 0;  // round trips per batch
};

// One round trip in TSC cycles, 0 when the request or its reply was lost.
template <class EP>
std::uint64_t round_trip(EP& ep, ClientState& st, std::uint32_t bytes) {
  const std::uint64_t want = st.acks + 1;
  const std::uint64_t t0 = tsc::now();
  send_message(ep, bytes);
  const bool ok = ep.wait_until([&] { return st.acks == want; });
  const std::uint64_t t1 = tsc::now_end();
  return ok ? t1 - t0 : 0;
}

template <class EP>
Turnaround replier_turnaround(EP& ep, ClientState& st, const Clock& clock, std::uint32_t bytes, int iterations) {
  Turnaround t;
  t.iterations = iterations;
  replier_service(ep, st, true);
  std::vector<double> rtt;
  rtt.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i)
    if (const std::uint64_t c = round_trip(ep, st, bytes))
      rtt.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  t.service_ns = replier_service(ep, st, false, &t.requests, nullptr, &t.service_p90_ns);
  if (!rtt.empty()) t.rtt_median_ns = summarize(rtt).median;
  return t;
}

template <class EP>
PingpongResult pingpong(EP& ep, ClientState& st, const Clock& clock, const PingpongConfig& cfg) {
  std::vector<std::uint64_t> cycles(static_cast<std::size_t>(cfg.iterations));
  PingpongResult r;
  const PollBeforeSend<EP> poll(ep, cfg.poll_before_send);
  const std::uint64_t w0 = tsc::now();
  for (int i = 0; i < cfg.warmup; ++i) {
    const std::uint64_t want = st.acks + 1;
    send_message(ep, cfg.bytes);
    ep.wait_until([&] { return st.acks == want; });
  }
  const double warm_rtt = cfg.warmup > 0 ? clock.ns(tsc::now_end() - w0) / cfg.warmup : NAN;
  throw_if_interrupted();
  // Batches of about kSegmentTargetNs (the warm-up's mean round trip sets the count), each a segment: the round
  // trips of a batch during which another task held a measuring core are dropped and measured again.
  r.batch = std::isfinite(warm_rtt) && warm_rtt > 0
                ? static_cast<int>(std::clamp(kSegmentTargetNs / warm_rtt, 16.0, 1000.0))
                : 1000;
  r.batch = std::min(r.batch, std::max(1, cfg.iterations));
  const int batches = (cfg.iterations + r.batch - 1) / r.batch;
  r.segments = SegmentBook("batches of round trips", batches, (batches + 1) / 2, kSegmentBudget * batches);
  cycles.clear();
  SegmentWatch watch(clock);
  // A lost round trip is kept as 0 while its batch is judged, so that a batch is its iterations whatever was
  // lost, and only the kept batches' losses are counted: samples + lost = iterations.
  clean_batches(watch, r.segments, cycles, cfg.iterations, r.batch,
                [&](std::vector<std::uint64_t>& out) { out.push_back(round_trip(ep, st, cfg.bytes)); });
  r.lost = static_cast<std::uint64_t>(std::count(cycles.begin(), cycles.end(), std::uint64_t{0}));
  cycles.erase(std::remove(cycles.begin(), cycles.end(), std::uint64_t{0}), cycles.end());
  r.rtt_ns.reserve(cycles.size());
  for (auto c : cycles) r.rtt_ns.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  r.summary = summarize(r.rtt_ns);
  if (cfg.turnaround_iterations > 0)
    r.turnaround = replier_turnaround(ep, st, clock, cfg.bytes, cfg.turnaround_iterations);
  return r;
}

}  // namespace logpb::methods
