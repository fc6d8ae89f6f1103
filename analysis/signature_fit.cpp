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
// The points a fit may use: those whose stop rule converged, when there are enough of them; a point that
// hit its sample or time cap has a wide, less trustworthy median.
Curve converged_only(const Curve& c, std::size_t min_points) {
  if (c.converged.size() != c.M.size()) return c;
  Curve k;
  k.delta_ns = c.delta_ns;
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

SendOnly send_only_cost(const Curve& c_all, double tolerance) {
  SendOnly r;
  const Curve c = converged_only(c_all, 4);
  const std::size_t n = c.M.size();
  if (n == 0) {
    r.o_s = Param::invalid("the Delta = 0 curve has no points");
    return r;
  }
  // The send-only plateau: the cheapest of the first few points, and every leading point within
  // tolerance of it: `tolerance` (a fraction) of the cheapest, or what its interval allows, whichever
  // is wider. A loose tolerance takes in the first transition point and biases o_s up. Points before
  // the cheapest that cost more (a cold first message) are skipped.
  const std::size_t head = std::min<std::size_t>(n, 4);
  const auto best =
      static_cast<std::size_t>(std::min_element(c.cost_ns.begin(), c.cost_ns.begin() + head) - c.cost_ns.begin());
  const double m = c.cost_ns[best];
  const double band = std::max(tolerance * m, 2 * safe_ci(c.ci95_ns[best], m));
  double sum = 0, var = 0;
  for (std::size_t i = 0; i < n; ++i) {
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
    const double sd = ci / 1.96;
    x.push_back(c.M[i]);
    y.push_back(c.M[i] * c.cost_ns[i]);
    w.push_back(1 / (sd * sd));
    r.used_M.push_back(c.M[i]);
  }
  const LineFit f = fit_line(x, y, w);
  if (!f.ok) {
    r.cost = Param::invalid("the steady-state fit failed");
    return r;
  }
  r.cost.value = f.slope;
  r.cost.ci95 = 1.96 * f.slope_se;
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
      const double si = safe_ci(c.ci95_ns[i], c.cost_ns[i]) * c.M[i] / 1.96,
                   sj = safe_ci(c.ci95_ns[j], c.cost_ns[j]) * c.M[j] / 1.96;
      var = (si * si + sj * sj) / ((c.M[j] - c.M[i]) * (c.M[j] - c.M[i]));
      return (tj - ti) / (c.M[j] - c.M[i]);
    };
    double v1 = 0, v2 = 0;
    const double s1 = slope(a, m, v1), s2 = slope(m, b, v2);
    const double allowed = std::max(0.05 * std::fabs(f.slope), 1.96 * std::sqrt(v1 + v2));
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

SignatureFit fit_signature(const std::vector<Curve>& curves, const Param& rtt, double raise_threshold, int window,
                           const Param& replier) {
  SignatureFit fit;
  fit.rtt = rtt;
  fit.replier = replier;
  if (curves.empty() || curves.front().delta_ns != 0) {
    fit.o_s = fit.g = fit.o_r = fit.L = Param::invalid("no Delta = 0 curve");
    fit.checks.push_back({"Delta = 0 curve measured", false, "the signature needs a Delta = 0 curve"});
    return fit;
  }
  const SendOnly so = send_only_cost(curves.front());
  fit.o_s = so.o_s;
  fit.o_s.note = fit.o_s.valid ? "mean send-only cost of the Delta = 0 curve" : fit.o_s.note;
  fit.send_only_M = so.used_M;
  const Steady st = steady_state_cost(curves.front());
  fit.g = st.cost;
  if (fit.g.valid) fit.g.note = "steady-state slope of the Delta = 0 curve";
  fit.steady_M = st.used_M;
  fit.checks.push_back({"steady state reached at Delta = 0", st.reached,
                        st.reached ? st.detail
                                   : "the issue time still bends over the largest M: the curve is in its transition (" +
                                         st.detail + ")"});
  fit.checks.push_back({"send-only regime seen", so.used_M.size() >= 2,
                        so.used_M.size() >= 2 ? "" : "only one point in the send-only plateau: o_s rests on it alone"});

  // o_r from every Delta that raised the steady state clearly above g.
  int k = 0;
  for (std::size_t i = 1; i < curves.size(); ++i) {
    DeltaFit df;
    df.delta_ns = curves[i].delta_ns;
    df.steady = steady_state_cost(curves[i]).cost;
    df.raised = fit.g.valid && df.steady.valid && df.steady.value >= raise_threshold * fit.g.value;
    if (df.raised && fit.o_s.valid) {
      const double v = df.steady.value - df.delta_ns - fit.o_s.value;
      df.o_r.value = df.o_r.raw = v;
      df.o_r.ci95 = std::sqrt(df.steady.ci95 * df.steady.ci95 + fit.o_s.ci95 * fit.o_s.ci95);
      df.o_r.valid = true;
      ++k;
    } else {
      df.o_r = Param::invalid(df.raised ? "o_s unknown" : "Delta <= Idle: the steady state stayed at g");
    }
    fit.per_delta.push_back(df);
  }
  if (k == 0) {
    fit.o_r = Param::invalid("no Delta raised the steady state above " + std::to_string(raise_threshold) +
                             " g: add larger Deltas (--deltas)");
    fit.checks.push_back({"a Delta raised the steady state", false, fit.o_r.note});
  } else {
    // The paper reads o_r off one Delta that raises the gap. Every raised Delta gives an estimate; their
    // median (the middle one, or the mean of two) is the figure, so one curve that a stall of the
    // machine bent cannot carry it.
    std::vector<const DeltaFit*> raised;
    for (const auto& d : fit.per_delta)
      if (d.o_r.valid) raised.push_back(&d);
    std::sort(raised.begin(), raised.end(),
              [](const DeltaFit* a, const DeltaFit* b) { return a->o_r.value < b->o_r.value; });
    const std::size_t mid = raised.size() / 2;
    double v, ci;
    if (raised.size() % 2) {
      v = raised[mid]->o_r.value;
      ci = raised[mid]->o_r.ci95;
    } else {
      v = (raised[mid - 1]->o_r.value + raised[mid]->o_r.value) / 2;
      ci = std::sqrt(fit.o_s.ci95 * fit.o_s.ci95 +
                     (std::pow(raised[mid - 1]->steady.ci95, 2) + std::pow(raised[mid]->steady.ci95, 2)) / 4);
    }
    if (v > 0) {
      fit.o_r.value = fit.o_r.raw = v;
      fit.o_r.ci95 = ci;
      fit.o_r.valid = true;
      fit.o_r.note =
          "g' - Delta - o_s: median over " + std::to_string(k) + " Delta curve(s) that raised the steady state";
    } else {
      fit.o_r = Param::invalid("g' - Delta - o_s is not positive: the Delta curves and o_s disagree", v);
    }
    fit.checks.push_back({"a Delta raised the steady state", true, std::to_string(k) + " curve(s)"});
    // Each raised Delta is an independent estimate of o_r; on a machine LogP describes they agree.
    double lo = INFINITY, hi = -INFINITY, ci_max = 0;
    for (const auto& d : fit.per_delta)
      if (d.o_r.valid) {
        lo = std::min(lo, d.o_r.value);
        hi = std::max(hi, d.o_r.value);
        ci_max = std::max(ci_max, d.o_r.ci95);
      }
    // Within 20% of o_r, or within the widest interval on each side.
    const bool agree = k < 2 || analysis::agree({lo, ci_max}, {hi, ci_max}, {Intervals::sum, 0.2, v}).agree;
    char buf[160];
    std::snprintf(buf, sizeof buf, "o_r from the raised Deltas ranges %.1f..%.1f ns%s", lo, hi,
                  agree ? "" : ": the per-reply cost depends on Delta, so LogP's o_r is not one number here");
    fit.checks.push_back({"o_r agrees across Deltas", agree, buf});
  }

  if (fit.rtt.valid && fit.o_s.valid && fit.o_r.valid) {
    const double v = fit.rtt.value / 2 - fit.o_s.value - fit.o_r.value;
    const double ci =
        std::sqrt(fit.rtt.ci95 * fit.rtt.ci95 / 4 + fit.o_s.ci95 * fit.o_s.ci95 + fit.o_r.ci95 * fit.o_r.ci95);
    if (v >= 0) {
      fit.L.value = fit.L.raw = v;
      fit.L.ci95 = ci;
      fit.L.valid = true;
      fit.L.note = "RTT/2 - o_s - o_r";
    } else {
      fit.L = Param::invalid("RTT/2 - o_s - o_r is negative: the overheads exceed half the round trip", v);
    }
  } else {
    fit.L = Param::invalid("needs RTT, o_s and o_r");
  }
  fit.checks.push_back({"L >= 0", fit.L.valid || !std::isfinite(fit.L.raw), fit.L.valid ? "" : fit.L.note});

  // What limits the steady state (Culler et al. 3.1 and 5). Idle = g - o_s - o_r is the time the NI
  // leaves the processor per message; when it is zero the processor is the bottleneck and the steady
  // state is o_s + o_r, which hides the NI's own gap (today's NIs: g of a few ns). With a window of W
  // requests per round trip, the steady state cannot be below RTT / W: the capacity bound.
  fit.window = window;
  if (fit.g.valid && fit.o_s.valid && fit.o_r.valid) {
    fit.idle.value = fit.idle.raw = fit.g.value - fit.o_s.value - fit.o_r.value;
    fit.idle.ci95 = std::sqrt(fit.g.ci95 * fit.g.ci95 + fit.o_s.ci95 * fit.o_s.ci95 + fit.o_r.ci95 * fit.o_r.ci95);
    fit.idle.valid = true;
    fit.idle.note = "g - o_s - o_r (Culler et al. 3.1): time the NI leaves the processor per message";
    // Idle >= 0 within its interval; a clearly negative Idle means the parameters do not form a LogP machine.
    const bool ok = fit.idle.value + fit.idle.ci95 + 0.02 * fit.g.value >= 0;
    char buf[160];
    std::snprintf(buf, sizeof buf, "Idle = %.1f +- %.1f ns%s", fit.idle.value, fit.idle.ci95,
                  ok ? "" : ": the steady state is cheaper than o_s + o_r, which LogP does not allow");
    fit.checks.push_back({"Idle >= 0", ok, buf});
  } else {
    fit.idle = Param::invalid("needs g, o_s and o_r");
  }
  const double cap = window > 0 && fit.rtt.valid ? fit.rtt.value / window : NAN;
  const double tol_g = fit.g.valid ? std::max(0.05 * fit.g.value, fit.g.ci95) : 0;
  const bool capacity = fit.g.valid && std::isfinite(cap) && fit.g.value <= cap + tol_g &&
                        (!fit.idle.valid || fit.o_s.value + fit.o_r.value < cap);
  const bool processor = fit.idle.valid && fit.idle.value <= std::max(fit.idle.ci95, 0.05 * fit.g.value);
  // The replier (Culler et al. 3.5): its turnaround reaches the steady state and clearly exceeds what the
  // requester spends per pair, so the requester idles waiting for replies with the NI not the cause.
  const double own = fit.o_s.valid && fit.o_r.valid ? fit.o_s.value + fit.o_r.value : NAN;
  const double own_ci = fit.o_s.valid && fit.o_r.valid ? std::hypot(fit.o_s.ci95, fit.o_r.ci95) : 0;
  const bool replier_bound =
      fit.g.valid && fit.replier.valid &&
      fit.replier.value >= fit.g.value - std::max(0.05 * fit.g.value, fit.g.ci95 + fit.replier.ci95) &&
      (!std::isfinite(own) || fit.replier.value > 1.1 * own + own_ci + fit.replier.ci95);
  if (!fit.g.valid) {
    fit.g_ni = Param::invalid("no steady state: " + fit.g.note);
  } else if (capacity) {
    fit.bottleneck = kBottleneckCapacity;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "hidden: the steady state is the capacity bound RTT / W = %.1f ns (W = %d requests "
                  "per round trip); the NI's gap is at most the steady-state cost. A larger --window would show more",
                  cap, window);
    fit.g_ni = Param::hidden(buf, fit.g.value, fit.g.ci95);
  } else if (replier_bound) {
    fit.bottleneck = kBottleneckReplier;
    // The requester's own o_s + o_r where both were measured; where one was not (L's or o_r's fit failed),
    // the sentence says so rather than print a NaN.
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
    fit.g_ni = Param::hidden(buf, fit.g.value, fit.g.ci95);
  } else if (processor) {
    fit.bottleneck = kBottleneckProcessor;
    fit.idle.note = "zero within its interval: the processor (o_s + o_r per request) is the bottleneck";
    fit.g_ni = Param::hidden(
        "hidden: Idle = g - o_s - o_r is zero, so the steady state is the processor's o_s + o_r "
        "(Culler et al. section 5: 'the gap is equal to o_s + o_r'); the NI's own gap is at most this",
        fit.g.value, fit.g.ci95);
  } else if (fit.idle.valid) {
    fit.bottleneck = kBottleneckNI;
    fit.g_ni = fit.g;
    fit.g_ni.note = "the NI's gap: Idle > 0, so the processor waits for the NI in the steady state";
  } else {
    fit.g_ni = Param::hidden(
        "o_r unknown, so Idle = g - o_s - o_r cannot tell the NI from the processor; the NI's gap "
        "is at most the steady-state cost",
        fit.g.value, fit.g.ci95);
  }
  // A time cannot be negative, whatever the bottleneck. A difference below zero within its interval (the
  // Idle >= 0 check's allowance) is reported as 0, its arithmetic kept in raw_value_ns; one below zero
  // beyond it is no time at all: the o_s + o_r measured here exceed the steady state, which the failed
  // check names, and the value is null with the computed number as raw_value_ns.
  if (fit.idle.valid && fit.idle.value < 0) {
    if (fit.idle.value + fit.idle.ci95 + 0.02 * fit.g.value >= 0) {
      fit.idle.value = 0;
      fit.idle.note += " (g - o_s - o_r came out negative within its interval; its value is in raw_value_ns)";
    } else {
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "g - o_s - o_r = %.1f +- %.1f ns, below zero beyond its interval: the o_s + o_r "
                    "measured here exceed the steady state, which LogP does not allow (see the check Idle >= 0)",
                    fit.idle.raw, fit.idle.ci95);
      fit.idle = Param::invalid(buf, fit.idle.raw);
    }
  }
  if (!fit.bottleneck.empty()) fit.g.note += " (bottleneck: " + fit.bottleneck + ")";

  auto ge = [&](const char* name, const Param& a, const Param& b, const char* why) {
    if (!a.valid || !b.valid) return;
    // Allow for the intervals: only a difference the data can resolve counts as a violation.
    const bool ok = at_least(a.estimate(), b.estimate());
    fit.checks.push_back({name, ok, ok ? "" : why});
  };
  ge("g >= o_s", fit.g, fit.o_s, "the steady-state gap is below the send overhead: LogP cannot describe this");
  ge("g >= o_r", fit.g, fit.o_r, "the steady-state gap is below the receive overhead: LogP cannot describe this");
  return fit;
}

void to_json(nlohmann::json& j, const SignatureFit& f) {
  nlohmann::json pd = nlohmann::json::array();
  for (const auto& d : f.per_delta)
    pd.push_back({{"delta_ns", d.delta_ns}, {"steady_ns", d.steady}, {"raised", d.raised}, {"o_r", d.o_r}});
  j = {{"o_s", f.o_s},
       {"o_r", f.o_r},
       {"g", f.g},
       {"L", f.L},
       {"rtt", f.rtt},
       {"idle", f.idle},
       {"g_ni", f.g_ni},
       {"bottleneck", f.bottleneck},
       {"replier_service", f.replier},
       {"window", f.window},
       {"send_only_M", f.send_only_M},
       {"steady_M", f.steady_M},
       {"per_delta", pd},
       {"checks", f.checks}};
}

}  // namespace logpb::analysis
