// Send and receive overhead and application availability (Doerfler & Brightwell, section 2): a
// post-work-wait loop whose work grows each iteration. While the work hides inside the transfer the
// iteration time stays at the transfer time base_t (averaged over all iterations still within
// base_threshold x base_t); once it exceeds stop_threshold x base_t, overhead = iter_t - work_t and
// availability = 1 - overhead / base_t.
// The wait is for *local* completion, as MPI_Wait on an MPI_Isend is (the paper's footnote 2: the buffer
// may be reused): send = post a one-way message of n bytes, work, wait until the NI reports it complete.
// Receive = the receive is posted (the peer is asked, untimed, to send one n-byte message), work, then
// complete the receive (poll for it and handle it). work_t is the work actually spent inside each timed
// iteration (measured there, not calibrated elsewhere), so overhead is iter_t - work_t per iteration.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/disturbance.hpp"
#include "common/stats.hpp"
#include "methods/messages.hpp"

namespace logpb::methods {

struct DoerflerConfig {
  std::vector<std::uint32_t> sizes;
  double base_threshold = 1.03;
  double stop_threshold = 1.5;
  int reps = 15;         // iterations per work value; their median is iter_t
  int max_steps = 400;   // work values tried before giving up
  int final_reps = 201;  // iterations at the stop point, for the overhead and its interval
};

struct DoerflerPoint {
  double work_ns, iter_ns;
};

struct DoerflerSide {
  double base_t = NAN, iter_t = NAN, work_t = NAN, overhead = NAN, availability = NAN;
  double overhead_ci = NAN, availability_ci = NAN;
  bool completed = false;
  std::vector<DoerflerPoint> curve;  // the growing-work curve, for the paper's Figure 2
  // Each point of the curve and each batch of the stop point's iterations is a segment (common/disturbance.hpp):
  // a disturbed one is measured again. A point that took another task's time would read as the stop threshold
  // crossed early, and the overhead would be read at too little work (a receive overhead of 7975 for 1600).
  SegmentBook point_segments{"availability points", 0, 0, 0};
  SegmentBook segments{"batches of stop-point iterations", 0, 0, 0};
  std::string refusal;  // why the side has no figure when its segments were too disturbed
};

struct DoerflerSize {
  std::uint32_t bytes = 0;
  DoerflerSide send, recv;
};

template <class EP>
DoerflerSide doerfler_side(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, bool receive,
                           const DoerflerConfig& cfg) {
  if (!receive) require_local_completion(ep);
  const BusyDelay delay(clock);
  struct Sample {
    double iter_ns, work_ns;
  };
  auto iteration = [&](std::uint64_t work) -> Sample {
    std::uint64_t spent = 0;
    bool ok = true;
    std::uint64_t t0 = 0, t1 = 0;
    if (receive) {
      const std::uint64_t want = st.arrivals + 1;
      ep.oneway(kFloodMe, 1, n, max_message(ep));  // post the receive: the peer sends one message
      t0 = tsc::now();
      spent = delay.run_measured(work);
      ok = ep.wait_until([&] { return st.arrivals >= want; });
      t1 = tsc::now_end();
    } else if constexpr (EP::has_local_completion) {
      t0 = tsc::now();
      const std::uint64_t op = send_oneway(ep, n, 0, true);
      spent = delay.run_measured(work);
      ep.wait_local(op);
      t1 = tsc::now_end();
    }
    if (!ok) return {NAN, NAN};
    return {clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()), clock.ns(static_cast<double>(spent))};
  };
  auto iter_t = [&](std::uint64_t work) {
    std::vector<double> v;
    for (int i = 0; i < cfg.reps; ++i) {
      const Sample x = iteration(work);
      if (std::isfinite(x.iter_ns)) v.push_back(x.iter_ns);
    }
    return median_of(v);
  };
  DoerflerSide s;
  SegmentWatch watch(clock);
  // A point measured again while disturbed, up to kSegmentBudget times; NaN after that (the curve skips it).
  SegmentBook points("availability points", 0, 0, 1 << 30);
  auto clean_iter_t = [&](std::uint64_t work) {
    for (int attempt = 0; attempt < kSegmentBudget; ++attempt) {
      watch.begin();
      const double t = iter_t(work);
      if (points.record(watch.end())) return t;
    }
    return std::nan("");
  };
  for (int i = 0; i < 20; ++i) iteration(0);  // warm up
  double base_sum = clean_iter_t(0);
  if (!std::isfinite(base_sum)) {
    s.point_segments = points;
    s.refusal = "disturbed: the transfer time at no work was measured " + std::to_string(kSegmentBudget) +
                " times, each while another task held a measuring core";
    return s;
  }
  int base_n = 1;
  s.base_t = base_sum;
  s.curve.push_back({0, s.base_t});
  const double step = std::max(20.0, s.base_t / 25);  // ~ a dozen steps within the transfer, ~40 to the stop
  for (int k = 1; k <= cfg.max_steps; ++k) {
    throw_if_interrupted();
    const double work_ns = step * k;
    const double it = clean_iter_t(clock.cycles(work_ns));
    if (!std::isfinite(it)) continue;
    s.curve.push_back({work_ns, it});
    if (it <= cfg.base_threshold * s.base_t) {  // the work still hides in the transfer
      base_sum += it;
      ++base_n;
      s.base_t = base_sum / base_n;
    } else if (it >= cfg.stop_threshold * s.base_t) {
      // The stop point, measured again with enough iterations for an interval: per iteration, the time
      // not spent in the work is the overhead.
      // In batches of about kSegmentTargetNs, each a segment.
      std::vector<Sample> kept;
      const int batch = static_cast<int>(std::clamp(kSegmentTargetNs / it, 8.0, 1.0 * cfg.final_reps));
      const int batches = (cfg.final_reps + batch - 1) / batch;
      SegmentBook final_book("batches of stop-point iterations", batches, (batches + 1) / 2, kSegmentBudget * batches);
      clean_batches(watch, final_book, kept, cfg.final_reps, batch, [&](std::vector<Sample>& out) {
        const Sample x = iteration(clock.cycles(work_ns));
        if (std::isfinite(x.iter_ns)) out.push_back(x);
      });
      std::vector<double> iters, works, over;
      for (const Sample& x : kept) {
        iters.push_back(x.iter_ns);
        works.push_back(x.work_ns);
        over.push_back(x.iter_ns - x.work_ns);
      }
      s.segments = final_book;
      if (!final_book.enough()) {
        s.refusal = final_book.refusal();
        break;
      }
      const Summary so = summarize(over);
      s.iter_t = median_of(iters);
      s.work_t = median_of(works);
      s.overhead = so.median;
      s.overhead_ci = so.ci95_median;
      s.availability = 1 - s.overhead / s.base_t;
      // The availability's interval: the overhead's, scaled by base_t (base_t's own spread is smaller).
      s.availability_ci = s.overhead_ci / s.base_t;
      s.completed = std::isfinite(s.overhead);
      break;
    }
  }
  s.point_segments = points;
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
