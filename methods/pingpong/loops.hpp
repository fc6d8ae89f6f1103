// Round trip of one small AM: request, the peer's handler replies, the reply handler runs here. Times
// every iteration and keeps the full distribution (Culler et al. section 3.2 needs RTT to solve for L).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.hpp"
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
};

struct PingpongResult {
  std::vector<double> rtt_ns;
  Summary summary;
  std::uint64_t lost = 0;  // iterations whose request or reply was lost: not in rtt_ns
};

template <class EP>
PingpongResult pingpong(EP& ep, ClientState& st, const Clock& clock, const PingpongConfig& cfg) {
  std::vector<std::uint64_t> cycles(static_cast<std::size_t>(cfg.iterations));
  PingpongResult r;
  const PollBeforeSend<EP> poll(ep, cfg.poll_before_send);
  for (int i = 0; i < cfg.warmup; ++i) {
    const std::uint64_t want = st.acks + 1;
    send_message(ep, cfg.bytes);
    ep.wait_until([&] { return st.acks == want; });
  }
  throw_if_interrupted();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < cycles.size(); ++i) {
    const std::uint64_t want = st.acks + 1;
    const std::uint64_t t0 = tsc::now();
    send_message(ep, cfg.bytes);
    const bool ok = ep.wait_until([&] { return st.acks == want; });
    const std::uint64_t t1 = tsc::now_end();
    if (ok)
      cycles[kept++] = t1 - t0;
    else
      ++r.lost;  // a lost message: this round trip is not a sample
  }
  cycles.resize(kept);
  r.rtt_ns.reserve(cycles.size());
  for (auto c : cycles) r.rtt_ns.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  r.summary = summarize(r.rtt_ns);
  return r;
}

}  // namespace logpb::methods
