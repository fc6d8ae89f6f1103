// Round trip of one small AM: request, the peer's handler replies, the reply handler runs here. Times
// every iteration and keeps the full distribution (Culler et al. section 3.2 needs RTT to solve for L).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../clock.hpp"
#include "../errors.hpp"
#include "../stats.hpp"
#include "protocol.hpp"

namespace logpb::methods {

struct PingpongConfig {
  int iterations = 10000;
  int warmup = 1000;
};

struct PingpongResult {
  std::vector<double> rtt_ns;
  Summary summary;
};

template <class EP>
PingpongResult pingpong(EP& ep, ClientState& st, const Clock& clock, const PingpongConfig& cfg) {
  std::vector<std::uint64_t> cycles(static_cast<std::size_t>(cfg.iterations));
  std::uint64_t want = st.acks;
  for (int i = 0; i < cfg.warmup; ++i) {
    ep.request(kEcho);
    ++want;
    ep.wait_until([&] { return st.acks == want; });
  }
  throw_if_interrupted();
  for (auto& c : cycles) {
    const std::uint64_t t0 = tsc::now();
    ep.request(kEcho);
    ++want;
    ep.wait_until([&] { return st.acks == want; });
    c = tsc::now_end() - t0;
  }
  PingpongResult r;
  r.rtt_ns.reserve(cycles.size());
  for (auto c : cycles) r.rtt_ns.push_back(clock.ns(static_cast<double>(c) - clock.timer_cost_cycles()));
  r.summary = summarize(r.rtt_ns);
  return r;
}

}  // namespace logpb::methods
