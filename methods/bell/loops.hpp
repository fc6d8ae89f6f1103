// The methods of Bell, Bonachea, Cote, Duell, Hargrove, Husbands, Iancu, Welcome, Yelick (section 4):
//  - EEL ping-pong (4.1): round trip of the minimum message (8 bytes: a medium store of 8 bytes);
//  - flood (4.2): one-way messages of n bytes with queue depth q: initiate q, wait until the oldest q/2
//    are complete *locally*, initiate q/2 more, ...; complete the last ones, then wait for one reply
//    from the receiver, which proves delivery and is amortized over >= 10,000 messages. The time per
//    message is the gap: max(g + G n, o_s(n), o_r(n)) on a LogGP machine, so the same method also runs
//    the overlap test below to say which of the three it saw;
//  - CPU overlap (4.3): the flood at q = 1 with computation c inserted between initiating and completing
//    each send. While o_s + c stays under the gap the time per message does not move; past that it is
//    o_s + c. The send overhead is inferred as the time per message at c = 0 minus the largest c that
//    stays hidden, i.e. read off the rising line T(c) - c. o_r likewise, with the computation between
//    the start and the completion of each receive while the peer floods us.
// Each figure is the minimum over `runs` runs of `messages` messages, as the paper reports it, with a
// bootstrap interval over the runs and the median beside it.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/cpu_time.hpp"
#include "common/disturbance.hpp"
#include "common/stats.hpp"
#include "methods/messages.hpp"
#include "methods/pingpong/loops.hpp"

namespace logpb::methods {

struct BellConfig {
  std::vector<std::uint32_t> sizes;  // bytes; 8 B .. 128 KiB by default
  int queue_depth = 8;
  int messages = 10000;         // per run (the paper: at least 10,000)
  int runs = 10;                // the paper: at least 10; the minimum is reported
  bool infer_overheads = true;  // flood: also run the overlap test at the smallest and largest size
  bool adapt_queue = true;      // flood: deepen q while it limits the time per message (FloodQueue)
  // Overlap test: the longest one run of one point may take; past it a run has fewer messages (at least
  // 400). A slow NI (a 1990s g of 6 us) would otherwise take many minutes at the default 10,000.
  double overlap_run_ns = 10e6;
};

// A figure taken as the minimum over runs (Bell et al. 4), with a percentile-bootstrap interval of that
// minimum and the median over runs beside it.
struct RunsFigure {
  double min = NAN, median = NAN, ci95 = NAN;
  std::string ci_method;
  std::vector<double> runs;
};
inline RunsFigure runs_figure(const std::vector<double>& v) {
  RunsFigure f;
  f.runs = v;
  std::vector<double> ok;
  for (double x : v)
    if (std::isfinite(x)) ok.push_back(x);
  if (ok.empty()) return f;
  const Summary s = summarize(ok);
  f.min = s.min;
  f.median = s.median;
  f.ci95 = bootstrap_ci95(ok, [](const std::vector<double>& r) { return *std::min_element(r.begin(), r.end()); });
  f.ci_method = "percentile bootstrap of the minimum over " + std::to_string(ok.size()) + " runs";
  return f;
}

// One flood: the time per message over the whole run (the paper's total / N, the final reply amortized)
// and its steady rate (the pace of the receiver's credit returns: messages.hpp, credit_rate_ns).
struct FloodTime {
  double total_ns = NAN, steady_ns = NAN;  // total_ns is Bell et al.'s figure
  double pace_ns = NAN;                    // the mean rate without the hosts' interruptions (credit_pace_ns)
};

// One flood of `messages` one-way n-byte messages at queue depth q, ending with one reply. NaN when a
// message was lost (the run is then repeated by the caller's minimum).
template <class EP>
FloodTime flood_once(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, int q, int messages) {
  require_local_completion(ep);
  FloodTime ft;
  if constexpr (EP::has_local_completion) {
    ep.log_credits(true);
    const int half = std::max(1, q / 2);
    std::vector<std::uint64_t> op(static_cast<std::size_t>(q), 0);
    const std::uint64_t losses = ep.loss_events();
    int issued = 0;
    // The last message of every half-group is tracked: waiting for it is waiting for its whole group,
    // since a queue completes in order.
    auto issue = [&] {
      const bool track = issued % half == half - 1 || issued == messages - 1;
      op[static_cast<std::size_t>(issued % q)] = send_oneway(ep, n, static_cast<std::uint64_t>(issued), track);
      ++issued;
    };
    const std::uint64_t t0 = tsc::now();
    {
      SendBatch<EP> batch(ep);
      while (issued < std::min(q, messages)) issue();
      while (issued < messages) {
        ep.wait_local(op[static_cast<std::size_t>((issued - q + half - 1) % q)]);
        for (int k = 0; k < half && issued < messages; ++k) issue();
      }
    }
    ep.wait_local(op[static_cast<std::size_t>((messages - 1) % q)]);
    const bool ok = final_reply(ep, st);
    const std::uint64_t t1 = tsc::now_end();
    ep.log_credits(false);
    if (!ok || ep.loss_events() != losses) return ft;
    ft.total_ns = clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) / messages;
    ft.steady_ns = credit_rate_ns(ep, clock);
    ft.pace_ns = credit_pace_ns(ep, clock);
  }
  return ft;
}

// The overlap curve of one side: time per message T(c) against the computation c actually spent per
// message (measured inside the loop, not calibrated elsewhere), and o_ns, the time per message not spent
// computing. Each is the median over blocks of consecutive messages of the block's own mean, from the
// stamps the computation itself takes:
//  - a run of thousands of messages holds dozens of interruptions on a VM, which a total/N would spread
//    over every message; the median over blocks leaves the few blocks they hit out (Bell et al. take minima
//    over runs for the same reason);
//  - a real NI hands several arrivals up per poll (a CQ polled 16 or 32 at a time). Then one receive pays
//    the poll and the handlers of a whole batch and the next few find their message already there: a
//    per-message median would be the cost of a receive that did not poll, near zero. A block longer than
//    any batch holds whole batches, so its mean is o_r per message, the poll's cost shared out.
struct OverlapPoint {
  double c_ns = NAN, t_ns = NAN, o_ns = NAN;
  // Receive side: frames per poll that handed any up (issue 36 item 1: a stream's figure is published with the
  // batch it was measured at). A message whose wait found it already handed up took no poll, so this is the
  // run's messages over the waits that had to poll. NaN on the send side.
  double frames_per_poll = NAN;
};

namespace detail {
// Messages per block: longer than the largest batch an NI hands up per poll (DPDK's 32), short enough to
// leave a few dozen blocks in a run.
inline int overlap_block(int messages) { return std::clamp(messages / 24, 1, 64); }

// From per-message stamps (start and end of each message's computation): per block of `block` messages,
// the mean period, the mean computation and the mean time between one computation's end and the next
// one's start; the median of each over the blocks.
inline OverlapPoint overlap_point(const Clock& clock, const std::vector<std::uint64_t>& start,
                                  const std::vector<std::uint64_t>& end, int messages, int block) {
  std::vector<double> period, comp, rest;
  block = std::max(1, block);
  for (int b = 0; b + block < messages; b += block) {
    std::uint64_t computing = 0;
    for (int i = b; i < b + block; ++i)
      computing += end[static_cast<std::size_t>(i)] - start[static_cast<std::size_t>(i)];
    const double span =
        clock.ns(start[static_cast<std::size_t>(b + block)] - start[static_cast<std::size_t>(b)]) / block;
    const double c = clock.ns(computing) / block;
    period.push_back(span);
    comp.push_back(c);
    rest.push_back(span - c);
  }
  return {median_of(comp), median_of(period), median_of(rest)};
}
inline OverlapPoint overlap_point(const Clock& clock, const std::vector<std::uint64_t>& start,
                                  const std::vector<std::uint64_t>& end, int messages) {
  return overlap_point(clock, start, end, messages, overlap_block(messages));
}
}  // namespace detail

// Send side: the flood at q = 1 with c between initiating and completing each send.
template <class EP>
OverlapPoint overlap_send_once(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, std::uint64_t c_cycles,
                               int messages) {
  require_local_completion(ep);
  OverlapPoint p;
  if constexpr (EP::has_local_completion) {
    const BusyDelay delay(clock);
    const std::uint64_t losses = ep.loss_events();
    std::vector<std::uint64_t> start(static_cast<std::size_t>(messages)), end(static_cast<std::size_t>(messages));
    for (int i = 0; i < messages; ++i) {
      const std::uint64_t op = send_oneway(ep, n, static_cast<std::uint64_t>(i), true);
      end[static_cast<std::size_t>(i)] = delay.run_stamped(c_cycles, start[static_cast<std::size_t>(i)]);
      ep.wait_local(op);
    }
    const bool ok = final_reply(ep, st);
    if (!ok || ep.loss_events() != losses) return p;
    p = detail::overlap_point(clock, start, end, messages);
  }
  return p;
}

// Receive side: the peer floods us with `messages` one-way n-byte messages; each receive is started,
// c is computed, then the receive is completed (polled for and handled, which costs o_r).
template <class EP>
OverlapPoint overlap_recv_once(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, std::uint64_t c_cycles,
                               int messages) {
  const BusyDelay delay(clock);
  const std::uint64_t losses = ep.loss_events();
  const std::uint64_t base = st.arrivals;
  std::vector<std::uint64_t> start(static_cast<std::size_t>(messages)), end(static_cast<std::size_t>(messages));
  ep.oneway(kFloodMe, static_cast<std::uint64_t>(messages), n, max_message(ep));
  bool ok = true;
  int polled = 0;  // waits whose message was not handed up yet: each ends in one poll that hands frames up
  for (int i = 1; i <= messages && ok; ++i) {
    end[static_cast<std::size_t>(i - 1)] = delay.run_stamped(c_cycles, start[static_cast<std::size_t>(i - 1)]);
    const std::uint64_t want = base + static_cast<std::uint64_t>(i);
    polled += st.arrivals < want;
    ok = ep.wait_until([&] { return st.arrivals >= want; });
  }
  OverlapPoint p;
  if (!ok || ep.loss_events() != losses) return p;
  p = detail::overlap_point(clock, start, end, messages);
  if (polled > 0) p.frames_per_poll = static_cast<double>(messages) / polled;
  return p;
}

// One side's overlap test over runs: for growing c, the minimum over runs of T(c); then the lowest
// non-compute time past the knee (a stream's cost per message at the batch a standing queue gives), and the
// reading at the knee itself, as Bell et al. 4.3 read it, beside.
struct OverlapSide {
  std::vector<OverlapPoint> curve;  // c grid (sorted by c), min over runs per point
  // The lowest non-compute time past the knee (detail::infer_overhead), each run's own, and the batch it was
  // read at: on a NI that hands several frames up per poll, a standing queue past the knee lowers what a
  // message costs, and a flood's receiver runs at this.
  std::vector<double> per_run_overhead;
  double t0_ns = NAN;                 // T(0): the q = 1 gap this side sees
  double overhead = NAN, ci95 = NAN;  // the lowest reading
  double frames_per_poll = NAN;       // receive side: the batch of the lowest reading
  double hidden_c_ns = NAN;           // the largest computation that stayed hidden (T(0) - overhead)
  // Bell et al. 4.3's reading at the knee (detail::knee_overhead), each run's own, its interval, the
  // computation of the knee's first risen point and the batch there.
  std::vector<double> per_run_knee;
  double knee_ns = NAN, knee_ci95 = NAN, knee_c_ns = NAN, knee_frames_per_poll = NAN;
  int messages = 0;  // per run (the user's count, or fewer within the run budget)
  std::string ci_method;
  bool ok = false;
  std::string note;
  SegmentBook segments{"overlap runs", 0, 0, 0};  // every run of every point, disturbed ones measured again
};

namespace detail {
// Reads the overhead off a T(c) curve. Before the knee a message's non-compute time is o + waiting,
// past it exactly o: so o is where the non-compute times bottom out, and the estimate is the median over
// the points that rose clearly (by `rise`) above T(0) AND sit on that bottom (within 5% or 20 ns). A
// point that rose because the peer was slowed during its run (a busy core) carries waiting time and is
// left out. NaN unless at least two points rose.
inline double infer_overhead(const std::vector<OverlapPoint>& pts, double rise = 0.10) {
  if (pts.empty() || !std::isfinite(pts.front().t_ns)) return NAN;
  const double t0 = pts.front().t_ns;
  double bottom = INFINITY;
  int rose = 0;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (std::isfinite(pts[i].o_ns)) bottom = std::min(bottom, pts[i].o_ns);
    if (std::isfinite(pts[i].t_ns) && pts[i].t_ns > (1 + rise) * t0) ++rose;
  }
  if (rose < 2 || !std::isfinite(bottom)) return NAN;
  std::vector<double> est;
  for (std::size_t i = 1; i < pts.size(); ++i)
    if (std::isfinite(pts[i].t_ns) && pts[i].t_ns > (1 + rise) * t0 && pts[i].o_ns <= bottom * 1.05 + 20)
      est.push_back(pts[i].o_ns);
  return est.empty() ? bottom : median_of(est);
}

// A point rose past the knee when its time per message is above T(0) by more than kKneeRise.
inline constexpr double kKneeRise = 0.05;
inline bool rose(const OverlapPoint& p, double t0) { return std::isfinite(p.t_ns) && p.t_ns > (1 + kKneeRise) * t0; }

// The knee of a curve sorted by c whose first point is T(0): the first point from which every later
// point rose (a point raised by chance before the knee, its peer slowed, does not count: the hidden
// points after it show it). Its index, or 0 when the last point did not rise.
inline std::size_t knee_index(const std::vector<OverlapPoint>& pts) {
  if (pts.size() < 2 || !std::isfinite(pts.front().t_ns)) return 0;
  const double t0 = pts.front().t_ns;
  std::size_t k = pts.size();
  while (k > 1 && rose(pts[k - 1], t0)) --k;
  return k == pts.size() ? 0 : k;
}

// Bell et al. 4.3's reading: the overhead where the computation stops hiding. Past the knee T(c) = o + c,
// so the non-compute time of the knee's first points that rose is o at the batch the knee has; read at
// the first risen point and every risen one within `width` of its c (the median of them). NaN without a knee.
// The median non-compute time of `of`'s points k.. whose computation on `grid` (the same c grid: the curve
// for one run's points) lies within `width` of the knee's. NaN when none is finite.
inline double knee_median(const std::vector<OverlapPoint>& grid, const std::vector<OverlapPoint>& of, std::size_t k,
                          double width) {
  std::vector<double> est;
  for (std::size_t i = k; i < of.size() && grid[i].c_ns <= grid[k].c_ns + width; ++i)
    if (std::isfinite(of[i].o_ns)) est.push_back(of[i].o_ns);
  return est.empty() ? NAN : median_of(est);
}
inline double knee_overhead(const std::vector<OverlapPoint>& pts, double width) {
  const std::size_t k = knee_index(pts);
  return k == 0 ? NAN : knee_median(pts, pts, k, width);
}
}  // namespace detail

template <class Once>
OverlapSide overlap_side(const Clock& clock, const BellConfig& cfg, Once&& once) {
  OverlapSide s;
  // T(0) first (its minimum over runs); then c in steps of T(0)/10 until two points lie past c = T(0);
  // then the step that holds the knee is halved three times.
  std::vector<std::vector<OverlapPoint>> runs(static_cast<std::size_t>(cfg.runs));
  const OverlapPoint warm = once(0, std::min(cfg.messages, 200));  // warm-up, and the pace for the budget
  s.messages = cfg.messages;
  if (std::isfinite(warm.t_ns) && warm.t_ns > 0)
    s.messages = std::min(cfg.messages, std::max(400, static_cast<int>(cfg.overlap_run_ns / (2 * warm.t_ns))));
  auto point = [&](double c_ns) {
    OverlapPoint best;
    for (int r = 0; r < cfg.runs; ++r) {
      throw_if_interrupted();
      const OverlapPoint p = once(clock.cycles(c_ns), s.messages);
      runs[static_cast<std::size_t>(r)].push_back(p);
      if (std::isfinite(p.t_ns) && !(p.t_ns >= best.t_ns)) best = p;  // the run with the least time
    }
    s.curve.push_back(best);
    return best;
  };
  const OverlapPoint z = point(0);
  s.t0_ns = z.t_ns;
  if (!std::isfinite(s.t0_ns)) {
    s.note = "no run completed at c = 0 (messages lost)";
    return s;
  }
  // Past c = T(0) nothing can hide any more (the knee is at T(0) - o): the grid goes on until two points
  // lie there, so a point that rose by chance before the knee cannot end it early.
  const double step = std::max(10.0, s.t0_ns / 10);
  int past = 0;
  for (int k = 1; k <= 60 && past < 2; ++k) {
    const OverlapPoint p = point(step * k);
    if (std::isfinite(p.t_ns) && std::isfinite(p.c_ns) && p.c_ns >= s.t0_ns && p.t_ns > 1.1 * s.t0_ns) ++past;
  }
  // The knee lies between the last hidden grid point and the first risen one, a step apart; halving that
  // bracket three times puts a point within step / 8 past the knee, where a queue has had least time to
  // stand and the batch is smallest. The requested c (not the measured one, a little longer) brackets.
  if (const std::size_t k = detail::knee_index(s.curve); k > 0) {
    double lo = step * static_cast<double>(k - 1), hi = step * static_cast<double>(k);
    for (int h = 0; h < 3; ++h) {
      const double mid = (lo + hi) / 2;
      (detail::rose(point(mid), s.t0_ns) ? hi : lo) = mid;
    }
  }
  // Sorted by c (each run's points alike), so the knee's points are in order.
  std::vector<std::size_t> order(s.curve.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto c_of = [](const OverlapPoint& p) { return std::isfinite(p.c_ns) ? p.c_ns : INFINITY; };
  std::stable_sort(order.begin() + 1, order.end(),
                   [&](std::size_t a, std::size_t b) { return c_of(s.curve[a]) < c_of(s.curve[b]); });
  auto sorted = [&](const std::vector<OverlapPoint>& v) {
    std::vector<OverlapPoint> out;
    for (std::size_t i : order) out.push_back(v[i]);
    return out;
  };
  s.curve = sorted(s.curve);
  for (auto& r : runs) r = sorted(r);

  s.overhead = detail::infer_overhead(s.curve);
  for (const auto& r : runs) s.per_run_overhead.push_back(detail::infer_overhead(r));
  std::vector<double> ok;
  for (double x : s.per_run_overhead)
    if (std::isfinite(x)) ok.push_back(x);
  if (!std::isfinite(s.overhead)) {
    s.note = "the time per message never rose above T(0): the overhead could not be separated from the gap";
    return s;
  }
  // The spread of the per-run inferences bounds how well the minimum-based one is known; with fewer than three
  // (the others' points disturbed or lost) it bounds nothing, and the side gives no figure.
  if (ok.size() < 3) {
    s.note = "only " + std::to_string(ok.size()) + " of " + std::to_string(runs.size()) +
             " runs gave an overhead (the others' points were disturbed or lost), too few for an interval";
    return s;
  }
  s.ci95 = bootstrap_ci95(ok, median_of);
  s.ci_method = "percentile bootstrap of the median of " + std::to_string(ok.size()) + " per-run inferences";
  const std::size_t k = detail::knee_index(s.curve);
  double nearest = INFINITY;  // the batch of the point whose non-compute time is nearest the lowest reading
  for (std::size_t i = k; i < s.curve.size(); ++i)
    if (std::isfinite(s.curve[i].o_ns) && std::abs(s.curve[i].o_ns - s.overhead) < nearest) {
      nearest = std::abs(s.curve[i].o_ns - s.overhead);
      s.frames_per_poll = s.curve[i].frames_per_poll;
    }
  // At the knee: each run's own non-compute time at the knee's points gives the interval.
  const double width = step / 2;
  if (k > 0) s.knee_ns = detail::knee_median(s.curve, s.curve, k, width);
  if (std::isfinite(s.knee_ns)) {
    s.knee_c_ns = s.curve[k].c_ns;
    s.knee_frames_per_poll = s.curve[k].frames_per_poll;
    std::vector<double> at;
    for (const auto& r : runs) {
      s.per_run_knee.push_back(detail::knee_median(s.curve, r, k, width));
      if (std::isfinite(s.per_run_knee.back())) at.push_back(s.per_run_knee.back());
    }
    s.knee_ci95 = bootstrap_ci95(at, median_of);
  }
  // Nothing hides when the overhead is the whole time per message (the overhead is the bottleneck): an
  // overhead read a few ns above T(0) within its interval is no negative computation.
  s.hidden_c_ns = std::max(0.0, s.t0_ns - s.overhead);
  s.ok = true;
  return s;
}

// The flood's queue (Bell et al. 4.2: q messages in flight, waiting for local completion): the depth the
// runs used, found by doubling q from the user's until the time per message stops falling, and what a
// send's local completion costs. A queue that still limits at the deepest q tried is named, never taken
// for the NI (on RC verbs a send completes when the peer's ACK is back: q sends per ACK time at most).
struct FloodQueue {
  int requested = 0, used = 0, deepest = 0;   // the user's q, the one the runs used, the most tried
  bool limited = false;                       // the time still fell at the deepest q tried
  bool adapted = false;                       // q was doubled while it limited (--flood-queue adapt)
  std::vector<std::pair<int, double>> probe;  // (q, time per message) of the doubling
  double completion_ns = NAN;                 // median post-to-local-completion time of one tracked send
  int messages = 0;                           // per run, after amortising the start and the final reply
  int credits = 0;                            // the AM layer's one-way credits (a bound of its own)
};

struct BellSize {
  std::uint32_t bytes = 0;
  RunsFigure gap;          // flood: total time / N per run (Bell et al.), minimum over runs
  RunsFigure gap_steady;   // flood: the steady rate of the receiver's credit returns (messages.hpp)
  RunsFigure gap_pace;     // flood: its mean rate without the hosts' interruptions (credit_pace_ns)
  RunsFigure rtt;          // ping-pong (EEL for the smallest size)
  OverlapSide send, recv;  // CPU overlap test (only where it was run)
  bool overlap_run = false;
  FloodQueue queue;
  CpuSpent cpu;  // flood: what the timed floods cost this host's cores, as the kernel accounts it
  // flood: what disturbed each run (clean ones are the figure's), and each clean run's length
  SegmentBook segments{"flood runs", 0, 0, 0};
  std::vector<int> run_messages;
};

// The local completion time of one send with nothing else in flight: post, then wait until the NI
// reports it complete (Bell et al. 4.2's "complete locally"; on RC the peer's ACK). Median of `count`.
template <class EP>
double completion_latency_ns(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, int count) {
  std::vector<double> t;
  if constexpr (EP::has_local_completion) {
    for (int i = 0; i < count; ++i) {
      const std::uint64_t t0 = tsc::now();
      const std::uint64_t op = send_oneway(ep, n, static_cast<std::uint64_t>(i), true);
      ep.wait_local(op);
      const std::uint64_t t1 = tsc::now_end();
      t.push_back(clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()));
    }
    if (!final_reply(ep, st)) return NAN;
  }
  return median_of(t);
}

// Both sides of the overlap test at size n, into b.
// Each run of each point is a segment (common/disturbance.hpp): one during which another task held a measuring
// core is measured again, up to twice kSegmentBudget times (a point is one run of ten, and the side needs most
// of them); a point whose every attempt was disturbed has no value (NaN), and the side's book counts them all.
// A disturbed run halves the side's runs from then on, down to kOverlapShortest messages (a few ms on a 1990s
// machine; still 8 blocks of the median over blocks), so that runs fit between the steals of a neighbour that
// returns every few ms: at 10% stolen, runs of 10 ms were all disturbed, and the overheads refused in half the
// runs of the noisy-core lab.
inline constexpr int kOverlapShortest = 200;
template <class Once>
auto clean_runs(const Clock& clock, SegmentBook& book, int& cap, Once&& once) {
  return [&clock, &book, &cap, once = std::forward<Once>(once)](std::uint64_t c, int m) {
    SegmentWatch watch(clock, true);
    for (int attempt = 0; attempt < 2 * kSegmentBudget; ++attempt) {
      watch.begin();
      const OverlapPoint p = once(c, std::min(m, cap));
      if (book.record(watch.end())) return p;
      cap = std::max(std::min(m, kOverlapShortest), std::min(m, cap) / 2);
    }
    return OverlapPoint{};
  };
}

template <class EP>
void overlap_sides(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg, std::uint32_t n, BellSize& b) {
  b.overlap_run = true;
  SegmentBook send_book("overlap runs (send)", 0, 0, 0), recv_book("overlap runs (receive)", 0, 0, 0);
  int send_cap = INT_MAX, recv_cap = INT_MAX;  // the messages per run, once a disturbed run has halved them
  b.send = overlap_side(clock, cfg, clean_runs(clock, send_book, send_cap, [&](std::uint64_t c, int m) {
                          return overlap_send_once(ep, st, clock, n, c, m);
                        }));
  b.recv = overlap_side(clock, cfg, clean_runs(clock, recv_book, recv_cap, [&](std::uint64_t c, int m) {
                          return overlap_recv_once(ep, st, clock, n, c, m);
                        }));
  b.send.messages = std::min(b.send.messages, send_cap);
  b.recv.messages = std::min(b.recv.messages, recv_cap);
  for (auto* side : {&b.send, &b.recv}) {
    SegmentBook& book = side == &b.send ? send_book : recv_book;
    if (!side->ok && book.disturbed() > 0)
      side->note += "; " + std::to_string(book.disturbed()) + " of " + std::to_string(book.measured()) +
                    " overlap runs were disturbed (segments)";
    side->segments = std::move(book);
  }
}

template <class EP>
BellSize bell_overlap_size(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg, std::uint32_t n) {
  BellSize b;
  b.bytes = n;
  overlap_sides(ep, st, clock, cfg, n, b);
  std::vector<double> rt;
  for (int i = 0; i < 200; ++i) rt.push_back(round_trip(ep, st, clock, n).total_ns);
  b.rtt = runs_figure({summarize(rt).median});
  return b;
}

// The queue depth for the flood at size n: q, 2q, 4q, ... while the time per message falls by more than
// 3% (the best of two short floods at each depth), up to the credits the AM layer may hand out.
template <class EP>
FloodQueue flood_queue(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg, std::uint32_t n) {
  FloodQueue fq;
  fq.requested = fq.used = cfg.queue_depth;
  fq.credits = ep.credit_limit();
  fq.deepest = std::max(cfg.queue_depth, std::min(1024, ep.credit_limit()));
  fq.completion_ns = completion_latency_ns(ep, st, clock, n, 21);
  const int m = std::min(cfg.messages, 2000);
  auto probe = [&](int q) {
    double best = NAN;
    for (int k = 0; k < 2; ++k) {
      const double t = flood_once(ep, st, clock, n, q, m).total_ns;
      if (std::isfinite(t) && !(t >= best)) best = t;
    }
    fq.probe.emplace_back(q, best);
    return best;
  };
  double t = probe(fq.used);
  if (!cfg.adapt_queue) return fq;
  fq.adapted = true;
  while (fq.used * 2 <= fq.deepest) {
    const double t2 = probe(fq.used * 2);
    if (!(t2 < 0.97 * t)) break;
    fq.used *= 2;
    t = t2;
    fq.limited = fq.used * 2 > fq.deepest;  // still falling at the deepest depth tried
  }
  return fq;
}

template <class EP>
std::vector<BellSize> bell_flood(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg,
                                 const std::function<void(const std::string&)>& progress) {
  std::vector<BellSize> out;
  for (std::uint32_t n : cfg.sizes) {
    progress("flood " + std::to_string(n) + " B");
    BellSize b;
    b.bytes = n;
    std::vector<double> g, gs, gp, r;
    flood_once(ep, st, clock, n, cfg.queue_depth, std::min(cfg.messages, 200));  // warm up
    b.queue = flood_queue(ep, st, clock, cfg, n);
    // Enough messages that the start (filling the queue) and the final reply cost under 1% of the total:
    // N >= 100 RTT / (time per message), within 4x the user's count.
    std::vector<double> rt0;
    for (int i = 0; i < 21; ++i) rt0.push_back(round_trip(ep, st, clock, n).total_ns);
    const double per = b.queue.probe.empty() ? NAN : b.queue.probe.back().second;
    int messages = cfg.messages;
    if (std::isfinite(per) && per > 0 && std::isfinite(median_of(rt0)))
      messages = static_cast<int>(
          std::clamp(100 * median_of(rt0) / per, static_cast<double>(cfg.messages), 4.0 * cfg.messages));
    b.queue.messages = messages;
    // Each flood run is a segment (common/disturbance.hpp): one during which another task held the
    // requester's or the replier's core timed that task, not the link, and is measured again. A steal that
    // comes back every few ms lands in every run of 10,000 messages, so the minimum over runs does not remove
    // it (a 1990s machine's g read 6832-6895 for 6200 at 10% stolen); a run after a disturbed one is half as
    // long, down to the length whose start and final reply cost under 0.7% (150 RTT / g), so that runs
    // fit between the steals. Bell et al. 4.2's figure is then the minimum over the clean runs; a figure
    // with fewer than half its runs clean within the budget has no value (refuse_disturbed). Why 150: a run of
    // 200 messages read g 1.4% high on a 1990s machine whose RTT is 2.9 g, and at 200 RTT / g (3.1 ms) a flood
    // with its replier's core stolen 0.5 ms of every 5 was refused in 1 run of 5 of the noisy-core lab.
    const double amortised = 150 * median_of(rt0) / per;  // NaN or inf where per or the round trip is unknown
    const int floor_messages =
        std::min(messages, std::isfinite(amortised) ? std::max(200, static_cast<int>(std::min(amortised, 1e9))) : 200);
    int run_messages = messages;
    SegmentWatch watch(clock, true);
    // At least 12 runs in all, so that a few runs wanted (--bell-runs 3) still get enough clean ones.
    b.segments = SegmentBook("flood runs", cfg.runs, (cfg.runs + 1) / 2, std::max(12, kSegmentBudget * cfg.runs));
    int lost = 0;
    while (!b.segments.done() && lost < cfg.runs) {
      throw_if_interrupted();
      // The kernel's accounting is read around the flood alone (its reads, tens of us, fall outside it).
      const CpuTimes before = read_cpu_times();
      watch.begin();
      const FloodTime ft = flood_once(ep, st, clock, n, b.queue.used, run_messages);
      const SegmentTag tag = watch.end();
      const CpuTimes after = read_cpu_times();
      if (!std::isfinite(ft.total_ns)) {  // a message lost: a run without a figure, not a disturbance
        ++lost;
        g.push_back(NAN), gs.push_back(NAN), gp.push_back(NAN), r.push_back(NAN);
        continue;
      }
      if (!b.segments.record(tag)) {
        run_messages = std::max(floor_messages, run_messages / 2);
        continue;
      }
      b.cpu.add(before, after, run_messages, tag.wall_ns);
      b.run_messages.push_back(run_messages);
      g.push_back(ft.total_ns);
      gs.push_back(ft.steady_ns);
      gp.push_back(ft.pace_ns);
      std::vector<double> rt;
      for (int i = 0; i < std::max(10, cfg.messages / 100); ++i) rt.push_back(round_trip(ep, st, clock, n).total_ns);
      r.push_back(summarize(rt).median);
    }
    b.gap = runs_figure(g);
    b.gap_steady = runs_figure(gs);
    b.gap_pace = runs_figure(gp);
    b.rtt = runs_figure(r);
    // Which of g, o_s and o_r the flood saw: Bell et al. use their tests in combination.
    if (cfg.infer_overheads && (n == cfg.sizes.front() || n == cfg.sizes.back())) {
      progress("flood " + std::to_string(n) + " B: overlap test (which stage limits the flood)");
      overlap_sides(ep, st, clock, cfg, n, b);
    }
    out.push_back(b);
  }
  return out;
}

template <class EP>
std::vector<BellSize> bell_overlap(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg,
                                   const std::function<void(const std::string&)>& progress) {
  std::vector<BellSize> out;
  for (std::uint32_t n : cfg.sizes) {
    progress("overlap " + std::to_string(n) + " B");
    out.push_back(bell_overlap_size(ep, st, clock, cfg, n));
  }
  return out;
}

}  // namespace logpb::methods
