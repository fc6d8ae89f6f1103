#include "loggp.hpp"

#include <cmath>

#include "../common/stats.hpp"

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
  const LineFit lf = fit_line(x, y, w);
  if (!lf.ok) {
    f.G = f.crossover = Param::invalid("fewer than two sizes: no per-byte gap");
    return f;
  }
  double se = 0;
  if (x.size() > 2) {  // ordinary least squares: the slope's standard error from the residuals
    double rss = 0, mx = 0, sxx = 0;
    for (double v : x) mx += v;
    mx /= static_cast<double>(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = y[i] - lf.intercept - lf.slope * x[i];
      rss += r * r;
      sxx += (x[i] - mx) * (x[i] - mx);
    }
    se = std::sqrt(rss / static_cast<double>(x.size() - 2) / sxx) * t975(static_cast<double>(x.size() - 2));
  }
  f.G.value = f.G.raw = lf.slope;
  f.G.ci95 = se;
  f.G.valid = lf.slope > 0;
  f.G.note = "slope of the per-message time over the larger sizes (ns per byte)";
  if (!f.G.valid) f.G = Param::invalid("the per-message time does not grow with size here: no G", lf.slope);
  if (f.g.valid && f.G.valid) {
    f.crossover.value = f.crossover.raw = f.g.value / f.G.value;
    f.crossover.ci95 = f.crossover.value * std::sqrt(std::pow(f.g.ci95 / f.g.value, 2) + std::pow(f.G.ci95 / f.G.value, 2));
    f.crossover.valid = true;
    f.crossover.note = "bytes at which G*n equals g (Bell et al.'s 'large message')";
  } else {
    f.crossover = Param::invalid("needs g and G");
  }
  return f;
}

Bottleneck classify_flood(double gap, double gap_ci, const Param& o_s, const Param& o_r) {
  Bottleneck b;
  if (!std::isfinite(gap)) {
    b.ni = Param::invalid("no flood time");
    return b;
  }
  const double ci = std::isfinite(gap_ci) ? gap_ci : 0;
  // An overhead "reaches" the flood's time when it is within 5% of it, or within the two intervals.
  auto reaches = [&](const Param& o) {
    return o.valid && o.value >= gap - std::max(0.05 * gap, ci + (std::isfinite(o.ci95) ? o.ci95 : 0));
  };
  const bool s = reaches(o_s), r = reaches(o_r);
  if (s || r) {
    b.stage = s && (!r || o_s.value >= o_r.value) ? kStageSend : kStageRecv;
    b.ni = Param::hidden("hidden: the flood runs at the " + b.stage + " (the overlap test's " +
                             (b.stage == kStageSend ? "o_s" : "o_r") + " reaches the time per message), so the NI's "
                             "own gap is at most the flood's time",
                         gap, ci);
  } else if (o_s.valid && o_r.valid) {
    b.stage = kStageNI;
    b.ni.value = b.ni.raw = gap;
    b.ni.ci95 = ci;
    b.ni.valid = true;
    b.ni.note = "the NI's gap: both overheads stay below the flood's time per message";
  } else {
    b.ni = Param::hidden("the overheads are unknown at this size, so the flood cannot tell the NI's gap from an "
                         "overhead; the NI's gap is at most the flood's time",
                         gap, ci);
  }
  return b;
}

NaiveBulk fit_naive_bulk(const std::vector<double>& sizes, const std::vector<double>& T) {
  NaiveBulk b;
  std::vector<double> w(sizes.size(), 1);
  const LineFit lf = fit_line(sizes, T, w);
  if (!lf.ok) {
    b.T0 = b.R_inf = Param::invalid("fewer than two sizes");
    return b;
  }
  b.R_inf.value = b.R_inf.raw = lf.slope > 0 ? 1 / lf.slope : NAN;
  b.R_inf.valid = lf.slope > 0;
  b.R_inf.ci95 = 0;
  b.R_inf.note = "bytes per ns (GB/s), 1 / slope of T(n)";
  if (!b.R_inf.valid) b.R_inf = Param::invalid("T(n) does not grow with n", lf.slope);
  b.T0.value = b.T0.raw = lf.intercept;
  b.T0.ci95 = 0;
  // Culler et al. section 4: T_0 is only a fitting constant; a negative one shows the model does not hold.
  if (lf.intercept < 0) {
    b.T0 = Param::invalid("T_0 of the naive fit is negative: T(n) is not linear in n and T_0 means nothing", lf.intercept);
    b.warning = b.T0.note;
  } else {
    b.T0.valid = true;
    b.T0.note = "intercept of T(n) = T_0 + n / R_inf: a fitting constant, not a start-up cost (Culler et al. section 4)";
  }
  return b;
}

}  // namespace logpb::analysis
