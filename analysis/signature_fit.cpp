#include "analysis/signature_fit.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.hpp"

namespace logpb::analysis {

namespace {
// A point whose interval is zero or unknown would get infinite weight; floor it at 0.1% of its value.
double safe_ci(double ci, double v) {
  const double floor = std::fabs(v) * 1e-3 + 1e-3;
  return std::isfinite(ci) && ci > floor ? ci : floor;
}
}  // namespace

namespace {
Param param_of_value(double v, double ci) {
  Param p;
  p.value = p.raw = v;
  p.ci95 = ci;
  p.valid = true;
  return p;
}

// The points a fit may use: those whose stop rule converged, when there are enough of them; a point that
// hit its sample or time cap has a wide, less trustworthy median.
Curve converged_only(const Curve& c, std::size_t min_points) {
  if (c.converged.size() != c.M.size()) return c;
  Curve k;
  k.delta_ns = c.delta_ns;
  k.max_burst_ns = c.max_burst_ns;
  for (std::size_t i = 0; i < c.M.size(); ++i)
    if (c.converged[i]) {
      k.M.push_back(c.M[i]);
      k.cost_ns.push_back(c.cost_ns[i]);
      k.ci95_ns.push_back(c.ci95_ns[i]);
      k.converged.push_back(true);
    }
  return k.M.size() >= min_points ? k : c;
}
}  // namespace

SendOnly send_only_cost(const Curve& c_all, double rtt_ns, int window, double tolerance) {
  SendOnly r;
  const Curve c = converged_only(c_all, 4);
  const std::size_t n = c.M.size();
  if (n == 0) {
    r.o_s = Param::invalid("the Delta = 0 curve has no points");
    return r;
  }
  // The send-only regime ends where the first replies come back, M = RTT / o_s, or where the window of W
  // requests is full, whichever comes first (Culler et al. 3.1). A point at or past that M holds receives
  // (or waits for the window) and is no send-only cost, however flat the curve looks there: on af_xdp
  // (RTT 8.7 us, 4.3 us a send) the unbounded plateau took M = 4..96, the whole curve, and o_s held the
  // receives. The limit needs o_s, which needs the limit: start from the cheapest point below RTT / cost
  // and shrink until the plateau's own mean gives the same limit.
  auto limit_for = [&](double os) {
    double lim = INFINITY;
    if (std::isfinite(rtt_ns) && rtt_ns > 0 && os > 0 && std::isfinite(os)) lim = rtt_ns / os;
    if (window > 0) lim = std::min(lim, window + 0.5);  // M <= W: a window of W holds W requests
    return lim;
  };
  double est = INFINITY;
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 4); ++i)
    if (c.cost_ns[i] > 0) est = std::min(est, c.cost_ns[i]);
  double lim = limit_for(est), lim_os = est;  // the limit, and the send cost it was taken from
  // The points below a limit, and the cheapest of the first few of them (the plateau's anchor).
  struct Below {
    std::size_t n = 0, best = 0;
  };
  auto below_of = [&](double limit) {
    Below b;
    while (b.n < n && c.M[b.n] < limit) ++b.n;
    const std::size_t head = std::min<std::size_t>(b.n, 4);
    if (head > 0)
      b.best = static_cast<std::size_t>(std::min_element(c.cost_ns.begin(), c.cost_ns.begin() + head) -
                                        c.cost_ns.begin());
    return b;
  };
  for (int iter = 0; iter < 8; ++iter) {
    // The send-only plateau: the cheapest of the first few points below the limit, and every leading point
    // within tolerance of it: `tolerance` (a fraction) of the cheapest, or what its interval allows,
    // whichever is wider. A loose tolerance takes in the first transition point and biases o_s up. Points
    // before the cheapest that cost more (a cold first message) are skipped.
    const auto [below, best] = below_of(lim);
    r.used_M.clear();
    if (below == 0) {
      // A send that costs a round trip or more (Soft-RoCE under TCG: the post runs the kernel's whole send):
      // no send-only point, but every request of a burst costs at least o_s, so the cheapest cost per
      // request of the first points bounds it from above.
      char buf[260];
      std::snprintf(buf, sizeof buf,
                    "no point of the Delta = 0 curve lies below M = %.3g, where the send-only regime ends "
                    "(RTT / o_s, or the window): no send-only cost to read; every request costs at least o_s, so "
                    "o_s <= %.1f ns, the cheapest cost per request of the first points",
                    lim, est);
      r.o_s = std::isfinite(est) && est > 0 ? Param::hidden(buf, est) : Param::invalid(buf);
      r.M_limit = lim;
      return r;
    }
    r.below_limit = below;
    const double m = c.cost_ns[best];
    const double band = std::max(tolerance * m, 2 * safe_ci(c.ci95_ns[best], m));
    double sum = 0, var = 0;
    for (std::size_t i = 0; i < below; ++i) {
      const bool within = c.cost_ns[i] <= m + band;
      if (!within) {
        if (i > best) break;
        continue;
      }
      r.used_M.push_back(c.M[i]);
      sum += c.cost_ns[i];
      const double ci = safe_ci(c.ci95_ns[i], c.cost_ns[i]);
      var += ci * ci;
    }
    const double k = static_cast<double>(r.used_M.size());
    r.o_s.value = sum / k;
    r.o_s.ci95 = std::sqrt(var) / k;
    // The plateau's mean puts its end lower: drop the points past it and read again. The limit never rises
    // again (a plateau of fewer points may cost less, but its points were already judged past the end).
    const double next = limit_for(r.o_s.value);
    if (next < lim) {
      lim = next;
      lim_os = r.o_s.value;
    }
    if (!(r.used_M.back() >= lim)) break;
  }
  // A plateau of one point where several lie below the limit: the points scatter beyond their intervals,
  // and not at random: on shm (real, 2-core EPYC VM, five default runs) M = 2, 3, 4, 6, 8 cost 70-85, 97-109,
  // 80-86, 78-85 and 63-69 ns in every run, the pattern repeating (the sends share cache lines with the
  // receiver's polls). That is the link's send cost depending on M, which LogP's one o_s does not model:
  // o_s is then the mean over the points below the limit from the cheapest of the first few on, with
  // the scatter as its interval (Student-t over the points), and `scatter` says so. Not when they only rise.
  if (r.used_M.size() == 1 && r.below_limit >= 2) {
    const auto [below_now, best] = below_of(lim);
    std::vector<double> xs;
    std::vector<double> ms;
    for (std::size_t i = best; i < below_now; ++i) {
      xs.push_back(c.cost_ns[i]);
      ms.push_back(c.M[i]);
    }
    // A curve that only rises from its cheapest point is the transition come early (a round trip shorter
    // than the limit assumed), not a scatter: o_s stays that one point, in doubt.
    const bool rising = std::is_sorted(xs.begin(), xs.end());
    if (xs.size() >= 2 && !rising) {
      const Estimate e = mean_ci95(xs);
      const double lo = *std::min_element(xs.begin(), xs.end()), hi = *std::max_element(xs.begin(), xs.end());
      r.used_M = ms;
      r.o_s.value = e.value;
      r.o_s.ci95 = std::max(e.ci95, r.o_s.ci95);
      r.o_s.ci_method = "Student-t over the send-only points' costs (they scatter with M)";
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "the send-only points M = %.0f..%.0f cost %.1f..%.1f ns, apart beyond their intervals: this "
                    "link's send cost moves with M",
                    ms.front(), ms.back(), lo, hi);
      r.scatter = buf;
    }
  }
  r.M_limit = std::isfinite(lim) ? lim : std::nan("");
  {
    char buf[200];
    if (!std::isfinite(lim))
      std::snprintf(buf, sizeof buf, "unbounded: neither the round trip nor the window is known");
    else if (window > 0 && lim == window + 0.5)
      std::snprintf(buf, sizeof buf, "M <= %d, the window (before the first reply is due)", window);
    else
      std::snprintf(buf, sizeof buf, "M < %.3g = RTT %.0f ns / a send of %.0f ns (the first reply is due)", lim,
                    rtt_ns, lim_os);
    r.limit_detail = buf;
  }
  r.o_s.valid = r.o_s.value > 0;
  r.o_s.raw = r.o_s.value;
  if (!r.o_s.valid) r.o_s = Param::invalid("the send-only cost is not positive: timer or clock problem", r.o_s.value);
  return r;
}

Steady steady_state_cost(const Curve& c_all) {
  Steady r;
  const Curve c = converged_only(c_all, 5);
  const std::size_t n = c.M.size();
  if (n < 2) {
    r.cost = Param::invalid("fewer than two points: no steady state");
    return r;
  }
  // The tail: the points with M >= M_max / 2, at least three. Closer in, the curve may still be leaving
  // its transition (the window filling), which a weighted fit would let pull the slope up.
  const double mmax = c.M.back();
  std::size_t first = n;
  while (first > 0 && c.M[first - 1] >= mmax / 2) --first;
  first = std::min(first, n >= 3 ? n - 3 : 0);
  std::vector<double> x, y, w;
  for (std::size_t i = first; i < n; ++i) {
    const double ci = safe_ci(c.ci95_ns[i], c.cost_ns[i]) * c.M[i];
    const double sd = ci / kZ95;
    x.push_back(c.M[i]);
    y.push_back(c.M[i] * c.cost_ns[i]);
    w.push_back(1 / (sd * sd));
    r.used_M.push_back(c.M[i]);
  }
  r.last_cost = c.cost_ns.back();
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(c_all.max_burst_ns) && c.M[i] * c.cost_ns[i] <= c_all.max_burst_ns) {
      r.capped_cost = c.cost_ns[i];
      r.capped_M = c.M[i];
    }
  const LineFit f = fit_line(x, y, w);
  if (!f.ok) {
    r.cost = Param::invalid("the steady-state fit failed");
    return r;
  }
  r.cost.value = f.slope;
  r.cost.ci95 = slope_ci95_points(f);  // the points' own intervals propagated (known variances)
  r.cost.raw = f.slope;
  r.cost.valid = f.slope > 0;
  if (!r.cost.valid) r.cost = Param::invalid("the issue time does not grow with M: no steady state", f.slope);
  // In the steady state T(M) is a straight line: its slope over the first half of the tail equals the
  // one over the second half, within what the points' intervals can resolve (a curve still in its
  // transition bends upwards). Differences of noisy points are themselves noisy, so the test is
  // statistical, with a 5% allowance (the accuracy the truth matrix holds figures to).
  const std::size_t a = first, b = n - 1, m = (a + b + 1) / 2;
  if (b >= a + 2) {
    auto slope = [&](std::size_t i, std::size_t j, double& var) {
      const double ti = c.M[i] * c.cost_ns[i], tj = c.M[j] * c.cost_ns[j];
      const double si = safe_ci(c.ci95_ns[i], c.cost_ns[i]) * c.M[i] / kZ95,
                   sj = safe_ci(c.ci95_ns[j], c.cost_ns[j]) * c.M[j] / kZ95;
      var = (si * si + sj * sj) / ((c.M[j] - c.M[i]) * (c.M[j] - c.M[i]));
      return (tj - ti) / (c.M[j] - c.M[i]);
    };
    double v1 = 0, v2 = 0;
    const double s1 = slope(a, m, v1), s2 = slope(m, b, v2);
    const double allowed = std::max(0.05 * std::fabs(f.slope), kZ95 * std::sqrt(v1 + v2));
    r.reached = std::fabs(s2 - s1) <= allowed;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "slope of T(M) %.1f ns over M = %g..%g, %.1f ns over M = %g..%g (allowed difference %.1f ns)", s1,
                  c.M[a], c.M[m], s2, c.M[m], c.M[b], allowed);
    r.detail = buf;
  } else {
    r.reached = false;  // too few points to tell
    r.detail = "fewer than three points in the tail";
  }
  return r;
}

std::vector<double> auto_deltas(double g_ns, const std::vector<double>& factors) {
  std::vector<double> d;
  for (double f : factors) {
    const double v = std::max(10.0, std::round(f * g_ns / 10) * 10);
    if (d.empty() || v > d.back()) d.push_back(v);
  }
  return d;
}

namespace {
// o_s from the send-only plateau of the Delta = 0 curve, and whether that plateau held more than one point.
// The check is returned, not pushed: the checks list the steady state first.
Check read_send_only(SignatureFit& fit, const Curve& zero, const Param& rtt, int window) {
  const SendOnly so = send_only_cost(zero, rtt.valid ? rtt.value : std::nan(""), window);
  fit.o_s = so.o_s;
  fit.o_s.note = fit.o_s.valid ? "mean send-only cost of the Delta = 0 curve, " + so.limit_detail : fit.o_s.note;
  fit.send_only_M = so.used_M;
  fit.send_only_M_limit = so.M_limit;
  // Properties of the link are notes, not doubts about a figure (issue 50 item 6): points that scatter with
  // M (send_only_cost's `scatter`), and one point below the limit (the round trip ends before a second send:
  // o_s is that point's mean over its repetitions). One point used of several below the limit that only rise
  // is a plateau not seen: in doubt.
  if (!so.scatter.empty()) {
    if (fit.o_s.valid) fit.o_s.note += "; " + so.scatter + ": o_s is their mean, its interval their scatter";
    return {"send-only regime seen", true, so.scatter + " (" + so.limit_detail + ")"};
  }
  if (so.used_M.size() == 1 && so.below_limit == 1) {
    if (fit.o_s.valid)
      fit.o_s.note +=
          "; one point (M = 1): this link's round trip is under two sends, so no second send "
          "is free of replies";
    return {"send-only regime seen", true,
            "one point, M = 1, is below the limit (" + so.limit_detail + "): the link allows no more"};
  }
  return {"send-only regime seen", so.used_M.size() >= 2,
          so.used_M.size() >= 2
              ? so.limit_detail
              : "only one point in the send-only plateau (" + so.limit_detail + "): o_s rests on it alone"};
}

// g: the steady-state slope of the Delta = 0 curve, before any check has judged it.
void read_steady_g(SignatureFit& fit, const Steady& st) {
  fit.g = st.cost;
  if (fit.g.valid) fit.g.note = "steady-state slope of the Delta = 0 curve";
  fit.steady_M = st.used_M;
  fit.checks.push_back({"steady state reached at Delta = 0", st.reached,
                        st.reached ? st.detail
                                   : "the issue time still bends over the largest M: the curve is in its transition (" +
                                         st.detail + ")"});
}

// One Delta > 0 curve: its steady state g', and g' - Delta when that state rose above g and was reached.
DeltaFit delta_fit(const Curve& c, const Param& slope, double raise_threshold) {
  DeltaFit df;
  df.delta_ns = c.delta_ns;
  const Steady s = steady_state_cost(c);
  df.steady = s.cost;
  df.reached = s.reached;
  df.steady_detail = s.detail;
  df.raised = slope.valid && df.steady.valid && df.steady.value >= raise_threshold * slope.value;
  df.used = df.raised && df.reached;
  if (df.used) {
    const double v = df.steady.value - df.delta_ns;
    df.o_s_plus_o_r.value = df.o_s_plus_o_r.raw = v;
    df.o_s_plus_o_r.ci95 = df.steady.ci95;
    df.o_s_plus_o_r.valid = true;
  } else if (df.raised) {
    df.o_s_plus_o_r = Param::invalid("the curve did not reach its steady state: " + s.detail);
  } else {
    df.o_s_plus_o_r = Param::invalid("Delta <= Idle: the steady state stayed at g");
  }
  return df;
}

// Fills fit.per_delta from curves[1..]; returns how many were used and, in words, those that raised the
// steady state without reaching it.
int read_delta_curves(SignatureFit& fit, const std::vector<Curve>& curves, const Param& slope, double raise_threshold,
                      std::string& unsteady) {
  int k = 0;
  for (std::size_t i = 1; i < curves.size(); ++i) {
    const DeltaFit df = delta_fit(curves[i], slope, raise_threshold);
    if (df.used) {
      ++k;
    } else if (df.raised) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "Delta = %.0f ns", df.delta_ns);
      unsteady += (unsteady.empty() ? "" : "; ") + std::string(buf) + " (" + df.steady_detail + ")";
    }
    fit.per_delta.push_back(df);
  }
  return k;
}

// In LogP the requester's cost per pair is one number: g' - Delta is flat in Delta. A trend is tested as a
// trend: a weighted line through the per-Delta estimates, failed when its slope is resolved (beyond its 95%
// interval, from the points' intervals or their scatter about the line, whichever is wider) and moves the
// figure by more than kPairSlopeShare over the Deltas used. (A sum of intervals let rxe's 3634, 2783, 707
// and 586 ns pass as agreeing.) Says the trend in words into `trend`; returns whether it is flat.
bool pair_cost_is_flat(const std::vector<const DeltaFit*>& used, double v, char (&trend)[320]) {
  if (used.size() < 2) {
    std::snprintf(trend, sizeof trend, "one Delta curve used: no trend can be told");
    return true;
  }
  std::vector<double> x, y, w;
  for (const auto* d : used) {
    const double sd = safe_ci(d->o_s_plus_o_r.ci95, d->o_s_plus_o_r.value) / kZ95;
    x.push_back(d->delta_ns);
    y.push_back(d->o_s_plus_o_r.value);
    w.push_back(1 / (sd * sd));
  }
  const LineFit lf = fit_line(x, y, w);
  if (!lf.ok) return true;
  const double dmin = *std::min_element(x.begin(), x.end()), dmax = *std::max_element(x.begin(), x.end());
  const double lo = *std::min_element(y.begin(), y.end()), hi = *std::max_element(y.begin(), y.end());
  // The points' intervals are known variances (normal quantile); a scatter about the line wider than they
  // allow widens the slope's error in their place, read with the same quantile.
  const double se = std::isfinite(lf.slope_se_resid) ? std::max(lf.slope_se, lf.slope_se_resid) : lf.slope_se;
  const double half = kZ95 * se;
  const double moves = std::fabs(lf.slope) * (dmax - dmin);
  // A trend also keeps its direction (Kendall's tau over the estimates in Delta order, at least kPairTrendTau
  // in size): one curve off the others tilts a line through four points without ordering them. On a
  // ConnectX-like emulation (slow state) the Deltas read 578, 435, 430 and 532 ns, a slope "resolved" at
  // -0.1287 +- 0.1277 with tau -1/3; rxe's 3634, 2783, 707 and 586 fall in order (tau -1).
  int in_order = 0, pairs = 0;  // pairs in the slope's direction less those against it
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      const double s = (x[j] - x[i]) * (y[j] - y[i]);
      in_order += s > 0 ? 1 : s < 0 ? -1 : 0;
      ++pairs;
    }
  const double tau = pairs > 0 ? static_cast<double>(in_order) / pairs : 0;
  const bool resolved = std::fabs(lf.slope) > half && std::fabs(tau) >= kPairTrendTau;
  std::snprintf(trend, sizeof trend,
                "o_s + o_r over Delta = %.0f..%.0f ns reads %.1f..%.1f ns: slope %.4f +- %.4f per ns of "
                "Delta (Kendall's tau %.2f), moving it %.1f ns (%.0f%% of %.1f; allowed %.0f%% when the slope is "
                "resolved and |tau| >= %.2f)",
                dmin, dmax, lo, hi, lf.slope, half, tau, moves, 100 * moves / std::fabs(v), v, 100 * kPairSlopeShare,
                kPairTrendTau);
  return !(resolved && moves > kPairSlopeShare * std::fabs(v));
}

// o_s + o_r from every Delta that raised the steady state clearly above g, on a curve in its steady state
// (g' is an asymptote: a curve cut off in its transition shows a slope that is no g').
void read_pair_cost(SignatureFit& fit, int k, const std::string& unsteady, double raise_threshold) {
  if (!unsteady.empty() || k > 0)
    fit.checks.push_back({"steady state reached on every Delta curve used", k > 0,
                          unsteady.empty() ? std::to_string(k) + " curve(s), all in their steady state"
                                           : "not used, still in their transition: " + unsteady});
  if (k == 0) {
    fit.o_s_plus_o_r =
        Param::invalid(unsteady.empty() ? "no Delta raised the steady state above " + std::to_string(raise_threshold) +
                                              " g: add larger Deltas (--deltas)"
                                        : "no Delta curve that raised the steady state reached it: " + unsteady);
    fit.checks.push_back({"a Delta raised the steady state", false, fit.o_s_plus_o_r.note});
    return;
  }
  // The paper reads o_r off one Delta that raises the gap. Every raised Delta gives an estimate; their
  // median (the middle one, or the mean of two) is the figure, so one curve that a stall of the
  // machine bent cannot carry it.
  std::vector<const DeltaFit*> used;
  std::vector<Estimate> estimates;
  for (const auto& d : fit.per_delta)
    if (d.used) {
      used.push_back(&d);
      estimates.push_back(d.o_s_plus_o_r.estimate());
    }
  const Estimate med = median_of_estimates(estimates);
  const double v = med.value;
  // The Delta curves estimate one number; where they scatter beyond their own intervals, the scatter is the
  // error (Student's t over the k estimates). Seen on the ConnectX-like emulation (16 replies per poll, fast
  // state): 473, 600, 603 and 477 ns, each +- 10, so the pair read 538 +- 9 against a steady state of 579 and
  // Idle = 41 +- 10.5 named the NI, with g_ni = 579 for a truth of 5; the scatter gives +- 117, and the
  // classification stays with what it can tell (the processor, the NI's gap only bounded).
  double ci = med.ci95;
  if (k >= 2) {
    std::vector<double> xs;
    for (const auto& e : estimates) xs.push_back(e.value);
    const Estimate spread = mean_ci95(xs);
    if (std::isfinite(spread.ci95)) ci = std::max(ci, spread.ci95);
  }
  fit.checks.push_back({"a Delta raised the steady state", true, std::to_string(k) + " curve(s)"});
  char trend[320] = "";
  const bool flat = pair_cost_is_flat(used, v, trend);
  fit.checks.push_back(
      {"o_s + o_r does not move with Delta", flat,
       std::string(trend) +
           (flat ? "" : ": the requester's cost per pair depends on Delta, so it is not one LogP figure here")});
  if (!flat) {
    fit.o_s_plus_o_r = Param::invalid(std::string(trend) + ": it depends on Delta, so it is no LogP o_s + o_r", v);
  } else if (v > 0) {
    fit.o_s_plus_o_r.value = fit.o_s_plus_o_r.raw = v;
    fit.o_s_plus_o_r.ci95 = ci;
    fit.o_s_plus_o_r.valid = true;
    fit.o_s_plus_o_r.note = "g' - Delta: median over " + std::to_string(k) +
                            " Delta curve(s) that raised the steady state and reached it (Culler et al. 3.3)";
  } else {
    fit.o_s_plus_o_r = Param::invalid("g' - Delta is not positive: the Delta curves do not rise with Delta", v);
  }
}

// Where no Delta curve gave o_s + o_r, LogP still bounds it from above: the Delta = 0 curve's steady state is
// its slowest stage per request, and the requester's own o_s + o_r is one of them (Culler et al. 3.3). Only a
// reached steady state bounds it; a curve still in its transition would rise further.
void bound_pair_cost(SignatureFit& fit, const Steady& st) {
  if (fit.o_s_plus_o_r.valid || !st.reached || !st.cost.valid) return;
  fit.o_s_plus_o_r.upper_bound = st.cost.value + st.cost.ci95;
  fit.o_s_plus_o_r.note += "; at most the Delta = 0 curve's steady state, of which it is one stage";
}

// What o_s did not take of the pair. Not LogP's o_r: the empty poll each request makes before it sends
// is timed inside o_s, so a receive here is only the rest. Where the pair is only bounded, so is the rest.
void read_o_r_remainder(SignatureFit& fit) {
  if (!fit.o_s_plus_o_r.valid || !fit.o_s.valid) {
    fit.o_r_remainder = Param::invalid(fit.o_s.valid ? "needs o_s_plus_o_r: " + fit.o_s_plus_o_r.note
                                                     : "needs o_s: " + fit.o_s.note);
    if (fit.o_s.valid && std::isfinite(fit.o_s_plus_o_r.upper_bound) &&
        fit.o_s_plus_o_r.upper_bound - (fit.o_s.value - fit.o_s.ci95) > 0)
      fit.o_r_remainder.upper_bound = fit.o_s_plus_o_r.upper_bound - (fit.o_s.value - fit.o_s.ci95);
    return;
  }
  const double v = fit.o_s_plus_o_r.value - fit.o_s.value;
  const double ci = std::hypot(fit.o_s_plus_o_r.ci95, fit.o_s.ci95);
  if (v > 0) {
    fit.o_r_remainder = param_of_value(v, ci);
    fit.o_r_remainder.note =
        "o_s_plus_o_r - o_s: what the send-only cost did not take; not LogP's o_r (the empty poll before each "
        "request is inside o_s)";
    return;
  }
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "o_s_plus_o_r - o_s = %.1f +- %.1f ns is not positive: the send-only cost o_s is not below the "
                "cost per request/reply pair, so no remainder is left for the receive",
                v, ci);
  fit.o_r_remainder = Param::invalid(buf, v);
  if (v + ci > 0) fit.o_r_remainder.upper_bound = v + ci;
}

// L = RTT/2 - o_s_plus_o_r, and the check that it is not negative.
void read_latency(SignatureFit& fit) {
  if (fit.rtt.valid && fit.o_s_plus_o_r.valid) {
    const double v = fit.rtt.value / 2 - fit.o_s_plus_o_r.value;
    const double ci = std::sqrt(fit.rtt.ci95 * fit.rtt.ci95 / 4 + fit.o_s_plus_o_r.ci95 * fit.o_s_plus_o_r.ci95);
    if (v >= 0) {
      fit.L = param_of_value(v, ci);
      fit.L.note = "RTT/2 - o_s_plus_o_r";
    } else {
      fit.L = Param::invalid("RTT/2 - o_s_plus_o_r is negative: the overheads exceed half the round trip", v);
    }
  } else {
    fit.L = Param::invalid("needs RTT and o_s_plus_o_r");
    // A pair bounded from above bounds L = RTT/2 - o_s_plus_o_r from below.
    if (fit.rtt.valid && std::isfinite(fit.o_s_plus_o_r.upper_bound) &&
        (fit.rtt.value - fit.rtt.ci95) / 2 - fit.o_s_plus_o_r.upper_bound > 0) {
      fit.L.lower_bound = (fit.rtt.value - fit.rtt.ci95) / 2 - fit.o_s_plus_o_r.upper_bound;
      fit.L.note += ", so it is at least RTT/2 less the pair's bound";
    }
  }
  fit.checks.push_back({"L >= 0", fit.L.valid || !std::isfinite(fit.L.raw), fit.L.valid ? "" : fit.L.note});
}

// Idle = g - (o_s + o_r) is the time the NI leaves the processor per message (Culler et al. 3.1); LogP
// does not let it be negative: every request/reply pair costs the requester o_s + o_r. A slope below that
// beyond its interval is a curve still filling its window (the requester sends ahead of its replies), not
// a steady state: g is then only known to be at least the slope seen, and the NI's gap not bounded at all.
// Returns whether Idle is negative beyond its interval.
bool read_idle(SignatureFit& fit, const Param& slope) {
  if (!slope.valid || !fit.o_s_plus_o_r.valid) {
    fit.idle = Param::invalid("needs g and o_s_plus_o_r");
    return false;
  }
  fit.idle.value = fit.idle.raw = slope.value - fit.o_s_plus_o_r.value;
  fit.idle.ci95 = std::hypot(slope.ci95, fit.o_s_plus_o_r.ci95);
  fit.idle.valid = true;
  fit.idle.note = "g - o_s_plus_o_r (Culler et al. 3.1): time the NI leaves the processor per message";
  const bool ok = fit.idle.value + fit.idle.ci95 + 0.02 * slope.value >= 0;
  char buf[240];
  std::snprintf(buf, sizeof buf, "Idle = %.1f +- %.1f ns%s", fit.idle.value, fit.idle.ci95,
                ok ? ""
                   : ": the Delta = 0 slope is cheaper than the o_s + o_r every pair costs, which LogP does not "
                     "allow: the curve is still in its transition (or the pair costs more at Delta > 0 than at 0)");
  fit.checks.push_back({"Idle >= 0", ok, buf});
  return !ok;
}

// g when the Delta = 0 curve showed no steady state: a lower bound, with the reason in words.
void bound_g_in_transition(SignatureFit& fit, const Steady& st, const Param& slope, const Curve& zero) {
  char buf[640];
  const double mmax = zero.M.empty() ? 0.0 : zero.M.back();
  if (!st.reached)
    std::snprintf(buf, sizeof buf,
                  "the Delta = 0 curve did not reach its steady state up to M = %g (the issue time still bends: "
                  "%s): g is at least its slope, %.1f ns, or its average cost at that M, %.1f ns, whichever is lower "
                  "(a lower bound: the cost per message still rises towards the steady state); a longer burst "
                  "would show it (--bursts or --max-burst-time)",
                  mmax, st.detail.c_str(), slope.value, st.last_cost);
  else
    std::snprintf(buf, sizeof buf,
                  "the Delta = 0 slope, %.1f ns up to M = %g, is below the o_s + o_r = %.1f ns a pair costs on the "
                  "Delta curves (Idle < 0 beyond its interval), which LogP does not allow: the curve is still "
                  "filling its window (its cost still rising towards the steady state, which a longer burst would "
                  "show), or a pair costs less when nothing separates the requests (replies drained several to a "
                  "poll). g is at least this slope or the average cost at that M, %.1f ns, whichever is lower: "
                  "a lower bound, not a value",
                  slope.value, mmax, fit.o_s_plus_o_r.value, st.last_cost);
  // The bound: the lower of the slope and the average cost at the largest M. A curve rising towards its
  // steady state averages below it, and its slope may not: a stall in the last points (a VM's, a loaded
  // core's) steepens the slope past the truth, as one run capped at 120 us read 4890 ns for 4500.
  // Past the run's burst cap even converged points can hold stalls (a loaded core: 15176 ns a message at
  // M = 746 for 4500), so where the cap is known the bound is the average of the longest burst within it.
  double floor = std::isfinite(st.last_cost) ? std::min(slope.value, st.last_cost) : slope.value;
  if (std::isfinite(st.capped_cost)) floor = std::min(floor, st.capped_cost);
  std::string why = buf;
  if (std::isfinite(st.capped_cost) && floor == st.capped_cost) {
    char more[200];
    std::snprintf(more, sizeof more,
                  "; past the burst cap stalls can inflate both, so the bound is the average cost of the longest "
                  "burst within the cap, %.1f ns at M = %g",
                  st.capped_cost, st.capped_M);
    why += more;
  }
  fit.g = Param::at_least(why, floor);
  fit.g.raw = slope.value;
}

// A negative Idle: held at zero within its interval, withdrawn beyond it; no Idle without a g.
void settle_idle(SignatureFit& fit, bool idle_broken) {
  if (fit.idle.valid && fit.idle.value < 0) {
    if (!idle_broken) {
      fit.idle.value = 0;
      fit.idle.note += " (g - o_s_plus_o_r came out negative within its interval; its value is in raw_value_ns)";
    } else {
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "g - o_s_plus_o_r = %.1f +- %.1f ns, below zero beyond its interval: the slope of the Delta = 0 "
                    "curve is no steady state (see the check Idle >= 0)",
                    fit.idle.raw, fit.idle.ci95);
      fit.idle = Param::invalid(buf, fit.idle.raw);
    }
  } else if (fit.g_in_transition) {
    fit.idle = Param::invalid("needs g, and the Delta = 0 curve did not reach its steady state", fit.idle.raw);
  }
}

// The replier (Culler et al. 3.5): its turnaround reaches the steady state and clearly exceeds what the
// requester spends per pair, so the requester idles waiting for replies with the NI not the cause.
bool replier_bound(const SignatureFit& fit) {
  const double own = fit.o_s_plus_o_r.valid ? fit.o_s_plus_o_r.value : NAN;
  const double own_ci = fit.o_s_plus_o_r.valid ? fit.o_s_plus_o_r.ci95 : 0;
  return fit.replier.valid &&
         fit.replier.value >= fit.g.value - std::max(0.05 * fit.g.value, fit.g.ci95 + fit.replier.ci95) &&
         (!std::isfinite(own) || fit.replier.value > 1.1 * own + own_ci + fit.replier.ci95);
}

// g_ni hidden behind the replier's own service time; the requester's o_s + o_r where it was measured,
// where it was not the sentence says so rather than print a NaN.
Param hidden_by_replier(const SignatureFit& fit) {
  const double own = fit.o_s_plus_o_r.valid ? fit.o_s_plus_o_r.value : NAN;
  char spends[96];
  if (std::isfinite(own))
    std::snprintf(spends, sizeof spends, "the requester spends %.1f ns per pair, so it waits", own);
  else
    std::snprintf(spends, sizeof spends, "the requester's own o_s + o_r was not measured; it waits");
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "hidden: the replier's own service time, %.1f ns per request (its o_r + handler + o_s, "
                "as it timed it), is the steady state; %s for the "
                "replier (Culler et al. 3.5). The NI's gap is at most the steady-state cost",
                fit.replier.value, spends);
  return Param::hidden(buf, fit.g.value, fit.g.ci95);
}

// What limits the steady state (Culler et al. 3.1 and 5), judged only once every check that can withdraw
// g or Idle has run. Idle = 0: the processor is the bottleneck and the steady state is o_s + o_r, which
// hides the NI's own gap (today's NIs: g of a few ns). With a window of W requests per round trip, the
// steady state cannot be below RTT / W: the capacity bound. Needs a valid g.
void classify_bottleneck(SignatureFit& fit) {
  const double cap = fit.window > 0 && fit.rtt.valid ? fit.rtt.value / fit.window : NAN;
  const double tol_g = std::max(0.05 * fit.g.value, fit.g.ci95);
  const double own = fit.o_s_plus_o_r.valid ? fit.o_s_plus_o_r.value : NAN;
  const bool capacity = std::isfinite(cap) && fit.g.value <= cap + tol_g && (!std::isfinite(own) || own < cap);
  const bool processor = fit.idle.valid && fit.idle.value <= std::max(fit.idle.ci95, 0.05 * fit.g.value);
  if (capacity) {
    fit.bottleneck = kBottleneckCapacity;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "hidden: the steady state is the capacity bound RTT / W = %.1f ns (W = %d requests "
                  "per round trip); the NI's gap is at most the steady-state cost. A larger --window would show more",
                  cap, fit.window);
    fit.g_ni = Param::hidden(buf, fit.g.value, fit.g.ci95);
  } else if (replier_bound(fit)) {
    fit.bottleneck = kBottleneckReplier;
    fit.g_ni = hidden_by_replier(fit);
  } else if (processor) {
    fit.bottleneck = kBottleneckProcessor;
    fit.idle.note = "zero within its interval: the processor (o_s + o_r per request) is the bottleneck";
    fit.g_ni = Param::hidden(
        "hidden: Idle = g - o_s_plus_o_r is zero, so the steady state is the processor's o_s + o_r "
        "(Culler et al. section 5: 'the gap is equal to o_s + o_r'); the NI's own gap is at most this",
        fit.g.value, fit.g.ci95);
  } else if (fit.idle.valid) {
    fit.bottleneck = kBottleneckNI;
    fit.g_ni = fit.g;
    fit.g_ni.note = "the NI's gap: Idle > 0, so the processor waits for the NI in the steady state";
  } else {
    fit.g_ni = Param::hidden(
        "o_s_plus_o_r unknown, so Idle = g - o_s_plus_o_r cannot tell the NI from the processor; the NI's gap "
        "is at most the steady-state cost",
        fit.g.value, fit.g.ci95);
  }
  fit.g.note += " (bottleneck: " + fit.bottleneck + ")";
  if (fit.bottleneck.empty()) fit.g.note = "steady-state slope of the Delta = 0 curve";
}
}  // namespace

SignatureFit fit_signature(const std::vector<Curve>& curves, const Param& rtt, double raise_threshold, int window,
                           const Param& replier, double step_ns) {
  SignatureFit fit;
  fit.rtt = rtt;
  fit.replier = replier;
  fit.window = window;
  fit.step_ns = step_ns;
  if (curves.empty() || curves.front().delta_ns != 0) {
    fit.o_s = fit.g = fit.o_s_plus_o_r = fit.o_r_remainder = fit.L = Param::invalid("no Delta = 0 curve");
    fit.checks.push_back({"Delta = 0 curve measured", false, "the signature needs a Delta = 0 curve"});
    return fit;
  }
  const Check send_only = read_send_only(fit, curves.front(), rtt, window);
  const Steady st = steady_state_cost(curves.front());
  const Param slope = st.cost;  // what the Delta = 0 curve's tail shows, before any check has judged it
  read_steady_g(fit, st);
  fit.checks.push_back(send_only);

  std::string unsteady;
  const int k = read_delta_curves(fit, curves, slope, raise_threshold, unsteady);
  read_pair_cost(fit, k, unsteady, raise_threshold);
  bound_pair_cost(fit, st);
  read_o_r_remainder(fit);
  read_latency(fit);

  const bool idle_broken = read_idle(fit, slope);
  fit.g_in_transition = slope.valid && (!st.reached || idle_broken);
  if (fit.g_in_transition) bound_g_in_transition(fit, st, slope, curves.front());
  settle_idle(fit, idle_broken);

  // Allow for the intervals: only a difference the data can resolve counts as a violation.
  if (fit.g.valid && fit.o_s.valid) {
    const bool ok = at_least(fit.g.estimate(), fit.o_s.estimate());
    fit.checks.push_back(
        {"g >= o_s", ok, ok ? "" : "the steady-state gap is below the send overhead: LogP cannot describe this"});
  }
  if (!fit.g.valid) {
    fit.g_ni =
        fit.g_in_transition
            ? Param::invalid("no steady state was seen, so nothing bounds the NI's gap from above: " + fit.g.note)
            : Param::invalid("no steady state: " + fit.g.note);
    return fit;
  }
  classify_bottleneck(fit);
  return fit;
}

void to_json(nlohmann::json& j, const SignatureFit& f) {
  const double s = f.step_ns;
  nlohmann::json pd = nlohmann::json::array();
  for (const auto& d : f.per_delta)
    pd.push_back({{"delta_ns", d.delta_ns},
                  {"steady_ns", d.steady},
                  {"steady_reached", d.reached},
                  {"steady_detail", d.steady_detail},
                  {"raised", d.raised},
                  {"used", d.used},
                  {"o_s_plus_o_r", d.o_s_plus_o_r}});
  j = {{"o_s", within_step(f.o_s, s)},
       {"o_s_plus_o_r", within_step(f.o_s_plus_o_r, s)},
       {"o_r_remainder", within_step(f.o_r_remainder, s)},
       {"g", within_step(f.g, s)},
       {"L", within_step(f.L, s)},
       {"rtt", within_step(f.rtt, s)},
       {"idle", within_step(f.idle, s)},
       {"g_ni", within_step(f.g_ni, s)},
       {"bottleneck", f.bottleneck},
       {"replier_service", within_step(f.replier, s)},
       {"window", f.window},
       {"clock_step_ns", std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr)},
       {"g_in_transition", f.g_in_transition},
       {"send_only_M", f.send_only_M},
       {"send_only_M_limit",
        std::isfinite(f.send_only_M_limit) ? nlohmann::json(f.send_only_M_limit) : nlohmann::json(nullptr)},
       {"steady_M", f.steady_M},
       {"per_delta", pd},
       {"checks", f.checks}};
}

}  // namespace logpb::analysis
