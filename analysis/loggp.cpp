#include "analysis/loggp.hpp"

#include <cmath>
#include <cstdio>

#include "common/stats.hpp"

namespace logpb::analysis {

GapFit fit_gap(const std::vector<double>& sizes, const std::vector<double>& gap, const std::vector<double>& ci) {
  GapFit f;
  const std::size_t n = sizes.size();
  if (n == 0 || gap.size() != n) {
    f.g = f.G = f.crossover = Param::invalid("no sizes measured");
    return f;
  }
  f.g.value = f.g.raw = gap[0];
  f.g.ci95 = ci.size() == n && std::isfinite(ci[0]) ? ci[0] : 0;
  f.g.valid = gap[0] > 0;
  f.g.note = "per-message time at the smallest size";
  if (!f.g.valid) f.g = Param::invalid("no positive gap at the smallest size", gap[0]);
  // G: the slope over the larger half of the sizes (at least two), where bytes dominate.
  std::vector<double> x, y, w;
  for (std::size_t i = n / 2; i < n; ++i) {
    x.push_back(sizes[i]);
    y.push_back(gap[i]);
    w.push_back(1);
    f.large_sizes.push_back(sizes[i]);
  }
  if (x.size() < 2 && n >= 2) {
    x.insert(x.begin(), sizes[n - 2]);
    y.insert(y.begin(), gap[n - 2]);
    w.push_back(1);
  }
  const LineFit lf = fit_line_ols(x, y);
  if (!lf.ok) {
    f.G = f.crossover = Param::invalid("fewer than two sizes: no per-byte gap");
    return f;
  }
  // Ordinary least squares: the slope's interval from the residuals (none through two points).
  const double se = lf.dof >= 1 ? ci95_student(lf.slope_se_resid, lf.dof) : 0;
  f.G.value = f.G.raw = lf.slope;
  f.G.ci95 = se;
  f.G.valid = lf.slope > 0;
  f.G.note = "slope of the per-message time over the larger sizes (ns per byte)";
  if (!f.G.valid) f.G = Param::invalid("the per-message time does not grow with size here: no G", lf.slope);
  if (f.g.valid && f.G.valid) {
    f.crossover.value = f.crossover.raw = f.g.value / f.G.value;
    f.crossover.ci95 =
        f.crossover.value * std::sqrt(std::pow(f.g.ci95 / f.g.value, 2) + std::pow(f.G.ci95 / f.G.value, 2));
    f.crossover.valid = true;
    f.crossover.note = "bytes at which G*n equals g (Bell et al.'s 'large message')";
  } else {
    f.crossover = Param::invalid("needs g and G");
  }
  return f;
}

Bottleneck classify_flood(double gap, double gap_ci, const Param& o_s, const Param& o_r, const FloodLimits& lim) {
  Bottleneck b;
  if (!std::isfinite(gap)) {
    b.ni = Param::invalid("no flood time");
    return b;
  }
  const double ci = std::isfinite(gap_ci) ? gap_ci : 0;
  // A hidden NI gap is bounded by the flood's time itself, without its interval: a flood that ran at that
  // time per message proves the NI passed messages at least that fast.
  char buf[320];
  // The queue first: a flood whose time still falls with a deeper queue measured the queue, whatever
  // the overheads say (q sends per local completion time at most).
  // Bell et al.'s flood waits for the oldest half of its q sends to complete before it issues more, so no
  // flood is faster than q/2 sends per local completion time; one at that bound measured the queue even
  // where q was not doubled (--flood-queue fixed).
  const double queue_bound = std::isfinite(lim.completion_ns) && lim.queue_depth > 0
                                 ? lim.completion_ns / std::max(1, lim.queue_depth / 2)
                                 : NAN;
  if (lim.queue_limited || (!lim.queue_adapted && std::isfinite(queue_bound) && gap <= 1.1 * queue_bound)) {
    b.stage = kStageQueue;
    std::snprintf(buf, sizeof buf,
                  "hidden: %s at q = %d (one send's local completion takes %.0f ns: at most q/2 sends per %.0f ns), "
                  "so the flood measured its queue; a deeper --queue-depth would show more; the NI's gap is at most "
                  "the flood's time",
                  lim.queue_limited ? "the time per message still fell when q was doubled"
                                    : "the flood runs at its queue's bound",
                  lim.queue_depth, lim.completion_ns, lim.completion_ns);
    b.ni = Param::hidden(buf, gap);
    return b;
  }
  // Credits: C one-way messages in flight, half of them returned a round trip after the receiver took
  // them, so no flood is faster than RTT / (C / 2) per message. A flood at that bound measured it.
  const double credit_bound = lim.credits >= 2 && std::isfinite(lim.rtt_ns) ? lim.rtt_ns / (lim.credits / 2) : NAN;
  if (std::isfinite(credit_bound) && gap <= 1.1 * credit_bound) {
    b.stage = kStageCredits;
    std::snprintf(buf, sizeof buf,
                  "hidden: the flood's %.0f ns per message is the credit bound RTT / (C/2) = %.0f ns (C = %d credits, "
                  "RTT %.0f ns); more credits (--credits) would show more; the NI's gap is at most the flood's time",
                  gap, credit_bound, lim.credits, lim.rtt_ns);
    b.ni = Param::hidden(buf, gap);
    return b;
  }
  // An overhead "reaches" the flood's time when it is within 5% of it, or within the two intervals.
  // The intervals count for at most 10% of the flood's time: an overlap inference made wide by one
  // preempted run (its bootstrap interval then spans microseconds) must not make any overhead "reach".
  // Like with like: a robust overhead against the flood's robust pace where it was measured (FloodLimits::pace_ns),
  // never above the total / N.
  const double pace = std::isfinite(lim.pace_ns) && lim.pace_ns > 0 ? std::min(gap, lim.pace_ns) : gap;
  auto reaches = [&](const Param& o) {
    const double slack = std::min(0.10 * pace, ci + (std::isfinite(o.ci95) ? o.ci95 : 0));
    return o.valid && o.value >= pace - std::max(0.05 * pace, slack);
  };
  const bool s = reaches(o_s), r = reaches(o_r);
  if (s || r) {
    b.stage = s && (!r || o_s.value >= o_r.value) ? kStageSend : kStageRecv;
    b.ni = Param::hidden("hidden: the flood runs at the " + b.stage + " (the overlap test's " +
                             (b.stage == kStageSend ? "o_s" : "o_r") +
                             " reaches the time per message), so the NI's "
                             "own gap is at most the flood's time",
                         gap);
  } else if (o_s.valid && o_r.valid) {
    b.stage = kStageNI;
    b.ni.value = b.ni.raw = gap;
    b.ni.ci95 = ci;
    b.ni.valid = true;
    b.ni.note = "the NI's gap: both overheads stay below the flood's time per message (and its steady pace)";
  } else {
    b.ni = Param::hidden(
        "the overheads are unknown at this size, so the flood cannot tell the NI's gap from an "
        "overhead; the NI's gap is at most the flood's time",
        gap);
  }
  return b;
}

NaiveBulk fit_naive_bulk(const std::vector<double>& sizes, const std::vector<double>& T) {
  NaiveBulk b;
  const LineFit lf = fit_line_ols(sizes, T);
  if (!lf.ok) {
    b.T0 = b.R_inf = Param::invalid("fewer than two sizes");
    return b;
  }
  // Intervals from the scatter of T(n) about the line (none through two sizes); R_inf = 1 / slope carries
  // the slope's relative interval.
  const double slope_ci = lf.dof >= 1 ? ci95_student(lf.slope_se_resid, lf.dof) : 0;
  const double T0_ci = lf.dof >= 1 ? ci95_student(lf.intercept_se_resid, lf.dof) : 0;
  b.R_inf.value = b.R_inf.raw = lf.slope > 0 ? 1 / lf.slope : NAN;
  b.R_inf.valid = lf.slope > 0;
  b.R_inf.ci95 = lf.slope > 0 ? slope_ci / (lf.slope * lf.slope) : 0;
  b.R_inf.note = "bytes per ns (GB/s), 1 / slope of T(n)";
  if (!b.R_inf.valid) b.R_inf = Param::invalid("T(n) does not grow with n", lf.slope);
  b.T0.value = b.T0.raw = lf.intercept;
  b.T0.ci95 = T0_ci;
  // Culler et al. section 4: T_0 is only a fitting constant; a negative one shows the model does not hold.
  if (lf.intercept < 0) {
    b.T0 =
        Param::invalid("T_0 of the naive fit is negative: T(n) is not linear in n and T_0 means nothing", lf.intercept);
    b.warning = b.T0.note;
  } else {
    b.T0.valid = true;
    b.T0.note =
        "intercept of T(n) = T_0 + n / R_inf: a fitting constant, not a start-up cost (Culler et al. section 4)";
  }
  return b;
}

LogGPFromPLogP plogp_to_loggp(std::uint32_t m, const PLogPPoint& x, const PLogPPoint& zero, const PLogPPoint* one,
                              double g0, double g0_ci) {
  LogGPFromPLogP d;
  if (!std::isfinite(g0)) {
    d.g = d.G = d.L_plogp = d.L = Param::invalid("needs g(0), whose saturation did not converge");
    return d;
  }
  auto param = [](double v, double ci, const std::string& how = "") {
    Param p;
    p.value = p.raw = v;
    p.ci95 = std::isfinite(ci) ? ci : 0;
    p.valid = std::isfinite(v);
    p.ci_method = how;
    if (!p.valid) p = Param::invalid("not measured");
    return p;
  };
  auto sq = [](double a) { return a * a; };
  // g(m) = RTT(m) - RTT(0) + g(0): the extra time m bytes cost a round trip, on top of the small gap.
  auto gap = [&](const PLogPPoint& p) { return p.rtt - zero.rtt + g0; };
  auto gap_ci = [&](const PLogPPoint& p) { return std::sqrt(sq(p.rtt_ci) + sq(zero.rtt_ci) + sq(g0_ci)); };
  const double ci = gap_ci(x);
  d.g = param(gap(x), ci, "RTT(m) - RTT(0) + g(0): intervals added in quadrature");
  if (m > 0) d.G = param(gap(x) / m, ci / m);
  if (gap(x) < 0 && gap(x) + ci >= 0) {
    // Below zero but within its interval of it: g(m) is too small for these round trips to tell from 0
    // (on shm, g(0) of ~50 ns against two RTTs' intervals of ~10 ns each). Its interval's reach bounds it.
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "g(m) = RTT(m) - RTT(0) + g(0) = %.1f ns is within its interval (%.1f ns) of zero: these round "
                  "trips cannot tell it from 0; it is below %.1f ns",
                  gap(x), ci, gap(x) + ci);
    d.g = Param::hidden(buf, gap(x) + ci);
    d.g.raw = gap(x);
    if (m > 0) {
      d.G = Param::hidden(buf, (gap(x) + ci) / m);
      d.G.raw = gap(x) / m;
    }
  } else if (gap(x) < 0) {
    // RTT(0) exceeds RTT(m) by more than g(0) and the intervals: the two round trips were not timed alike
    // (a cold start, interruptions), since m more bytes never make a round trip faster. Bounded by RTT(m),
    // as g(0) is at most RTT(0) (a saturation of one message is a round trip).
    d.g_contradicts = true;
    const std::string why =
        "g(m) = RTT(m) - RTT(0) + g(0) is negative: RTT(0) exceeds RTT(m) by more than g(0), "
        "so the two round trips were not timed under the same conditions";
    d.g = Param::hidden(why, x.rtt, x.rtt_ci);
    d.g.raw = gap(x);
    if (m > 0) {
      d.G = Param::hidden(why, x.rtt / m, x.rtt_ci / m);
      d.G.raw = gap(x) / m;
    }
  }
  const double Lp = (zero.rtt - 2 * g0) / 2;
  const double Lp_ci = std::sqrt(sq(zero.rtt_ci) + 4 * sq(g0_ci)) / 2;
  d.L_plogp = Lp >= 0 ? param(Lp, Lp_ci) : Param::invalid("(RTT(0) - 2 g(0)) / 2 is negative", Lp);
  if (one) {
    // Table 1: LogP's L = L + g(1) - o_s(1) - o_r(1).
    const double L = Lp + gap(*one) - one->o_s - one->o_r;
    const double L_ci = std::sqrt(sq(Lp_ci) + sq(gap_ci(*one)) + sq(one->o_s_ci) + sq(one->o_r_ci));
    if (gap(*one) < 0)
      d.L = Param::invalid("LogP's L by Table 1 needs g(1), which is negative here (RTT(1) < RTT(0) - g(0))", L);
    else
      d.L = L >= 0 ? param(L, L_ci) : Param::invalid("LogP's L by Table 1 is negative", L);
  }
  return d;
}

}  // namespace logpb::analysis
