// Send and receive overhead and application availability (Doerfler & Brightwell, section 2): a
// post-work-wait loop whose work grows each iteration. While the work hides inside the transfer the
// iteration time stays at the transfer time base_t (averaged over all iterations still within
// base_threshold x base_t); once it exceeds stop_threshold x base_t the work without messaging, work_t,
// is measured, and overhead = iter_t - work_t, availability = 1 - overhead / base_t.
// Send: post a message of n bytes, work, wait for its completion (the peer's acknowledgement).
// Receive: post a request for n bytes, work, then complete the receive.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../stats.hpp"
#include "messages.hpp"

namespace logpb::methods {

struct DoerflerConfig {
  std::vector<std::uint32_t> sizes;
  double base_threshold = 1.03;
  double stop_threshold = 1.5;
  int reps = 15;        // iterations per work value; their median is iter_t
  int max_steps = 400;  // work values tried before giving up
};

struct DoerflerPoint {
  double work_ns, iter_ns;
};

struct DoerflerSide {
  double base_t = NAN, iter_t = NAN, work_t = NAN, overhead = NAN, availability = NAN;
  bool completed = false;
  std::vector<DoerflerPoint> curve;  // the growing-work curve, for the paper's Figure 2
};

struct DoerflerSize {
  std::uint32_t bytes = 0;
  DoerflerSide send, recv;
};

template <class EP>
DoerflerSide doerfler_side(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, bool receive,
                           const DoerflerConfig& cfg) {
  const BusyDelay delay(clock);
  auto iteration = [&](std::uint64_t work) {
    const std::uint64_t want = st.acks + 1;
    const std::uint64_t t0 = tsc::now();
    if (receive)
      ask_for(ep, n);
    else
      send_message(ep, n);
    delay.run(work);
    const bool ok = ep.wait_until([&] { return st.acks == want; });
    const std::uint64_t t1 = tsc::now_end();
    return ok ? clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) : NAN;
  };
  auto iter_t = [&](std::uint64_t work) {
    std::vector<double> v;
    for (int i = 0; i < cfg.reps; ++i) {
      const double x = iteration(work);
      if (x == x) v.push_back(x);
    }
    return summarize(v).median;
  };
  DoerflerSide s;
  for (int i = 0; i < 20; ++i) iteration(0);  // warm up
  double base_sum = iter_t(0);
  int base_n = 1;
  s.base_t = base_sum;
  s.curve.push_back({0, s.base_t});
  const double step = std::max(20.0, s.base_t / 25);  // ~ a dozen steps within the transfer, ~40 to the stop
  for (int k = 1; k <= cfg.max_steps; ++k) {
    throw_if_interrupted();
    const double work_ns = step * k;
    const double it = iter_t(clock.cycles(work_ns));
    s.curve.push_back({work_ns, it});
    if (it <= cfg.base_threshold * s.base_t) {  // the work still hides in the transfer
      base_sum += it;
      ++base_n;
      s.base_t = base_sum / base_n;
    } else if (it >= cfg.stop_threshold * s.base_t) {
      s.iter_t = it;
      s.work_t = delay.achieved_ns(work_ns, 501);
      s.overhead = s.iter_t - s.work_t;
      s.availability = 1 - s.overhead / s.base_t;
      s.completed = true;
      break;
    }
  }
  return s;
}

template <class EP>
std::vector<DoerflerSize> doerfler(EP& ep, ClientState& st, const Clock& clock, const DoerflerConfig& cfg,
                                   const std::function<void(const std::string&)>& progress) {
  std::vector<DoerflerSize> out;
  for (std::uint32_t n : cfg.sizes) {
    DoerflerSize d;
    d.bytes = n;
    progress("availability send " + std::to_string(n) + " B");
    d.send = doerfler_side(ep, st, clock, n, false, cfg);
    progress("availability receive " + std::to_string(n) + " B");
    d.recv = doerfler_side(ep, st, clock, n, true, cfg);
    out.push_back(d);
  }
  return out;
}

}  // namespace logpb::methods
