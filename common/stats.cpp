#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include <boost/math/distributions/students_t.hpp>
#include <nlohmann/json.hpp>

namespace logpb {

Estimator parse_estimator(const std::string& s) {
  if (s == "median") return Estimator::median;
  if (s == "mean") return Estimator::mean;
  throw std::invalid_argument("estimator must be 'median' or 'mean', not '" + s + "'");
}
const char* to_string(Estimator e) { return e == Estimator::median ? "median" : "mean"; }

double t975(double dof) {
  if (!(dof >= 1)) return std::nan("");
  boost::math::students_t dist(dof);
  return boost::math::quantile(boost::math::complement(dist, 0.025));
}

double ci95_student(double se, double dof) { return dof >= 1 ? t975(dof) * se : std::nan(""); }

double ci95_of_mean(double sd, double n) { return n >= 2 ? ci95_student(sd / std::sqrt(n), n - 1) : std::nan(""); }

Estimate mean_ci95(const std::vector<double>& v) {
  Estimate e;
  if (v.empty()) return e;
  const double n = static_cast<double>(v.size());
  double mean = 0, ss = 0;
  for (double x : v) mean += x;
  mean /= n;
  for (double x : v) ss += (x - mean) * (x - mean);
  e.value = mean;
  if (v.size() >= 2) e.ci95 = ci95_of_mean(std::sqrt(ss / (n - 1)), n);
  return e;
}

namespace {
double g_ci_floor_ns = 0;
}  // namespace
void set_ci_floor_ns(double ns) { g_ci_floor_ns = std::isfinite(ns) && ns > 0 ? ns : 0; }
double ci_floor_ns() { return g_ci_floor_ns; }

double median_of(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::size_t lower_median_index(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  return idx.at((idx.size() - 1) / 2);
}

Estimate median_of_estimates(std::vector<Estimate> v) {
  if (v.empty()) return {};
  std::stable_sort(v.begin(), v.end(), [](const Estimate& a, const Estimate& b) { return a.value < b.value; });
  const std::size_t mid = v.size() / 2;
  if (v.size() % 2) return v[mid];
  return {(v[mid - 1].value + v[mid].value) / 2, std::hypot(v[mid - 1].ci95, v[mid].ci95) / 2};
}

double median_ci95_of_sorted(const std::vector<double>& v) {
  if (v.size() < 6) return std::nan("");
  const double n = static_cast<double>(v.size());
  const double half = kZ95 * std::sqrt(n) / 2;
  const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(n / 2 - half)));
  const auto hi = static_cast<std::size_t>(std::min(n - 1, std::ceil(n / 2 + half)));
  return (v[hi] - v[lo]) / 2;
}

double bootstrap_ci95(const std::vector<double>& v, const std::function<double(const std::vector<double>&)>& stat,
                      int reps) {
  if (v.size() < 2) return std::nan("");
  std::mt19937_64 rng(0x6c6f677062ull);
  std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
  std::vector<double> r(v.size()), out;
  out.reserve(static_cast<std::size_t>(reps));
  for (int k = 0; k < reps; ++k) {
    for (auto& x : r) x = v[pick(rng)];
    const double s = stat(r);
    if (std::isfinite(s)) out.push_back(s);
  }
  if (out.size() < 20) return std::nan("");
  std::sort(out.begin(), out.end());
  const double lo = quantile_of_sorted(out, 0.025);
  const double hi = quantile_of_sorted(out, 0.975);
  return std::max((hi - lo) / 2, g_ci_floor_ns);
}

double quantile_of_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return std::nan("");
  const double pos = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) {
    s.min = s.max = s.mean = s.median = s.p90 = s.p99 = s.p999 = std::nan("");
    s.ci95_mean = s.ci95_median = std::nan("");
    return s;
  }
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stdev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0;
  s.median = quantile_of_sorted(v, 0.5);
  s.p90 = quantile_of_sorted(v, 0.90);
  s.p99 = quantile_of_sorted(v, 0.99);
  s.p999 = quantile_of_sorted(v, 0.999);
  const double n = static_cast<double>(v.size());
  s.ci95_mean = v.size() > 1 ? std::max(ci95_of_mean(s.stdev, n), g_ci_floor_ns) : std::nan("");
  s.ci95_median = v.size() >= 6 ? std::max(median_ci95_of_sorted(v), g_ci_floor_ns) : std::nan("");
  return s;
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = {{"n", s.n},
       {"min_ns", s.min},
       {"max_ns", s.max},
       {"mean_ns", s.mean},
       {"stdev_ns", s.stdev},
       {"median_ns", s.median},
       {"p90_ns", s.p90},
       {"p99_ns", s.p99},
       {"p999_ns", s.p999},
       {"ci95_mean_ns", s.ci95_mean},
       {"ci95_median_ns", s.ci95_median}};
}

void to_json(nlohmann::json& j, const StopRule& r) {
  j = {{"rel_precision", r.rel_precision},   {"confidence", 0.95},           {"batch", r.batch},
       {"min_samples", r.min_samples},       {"max_samples", r.max_samples}, {"max_seconds_per_point", r.max_seconds},
       {"estimator", to_string(r.estimator)}};
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w) {
  LineFit f;
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n || w.size() != n) return f;
  double sw = 0, sx = 0, sy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(w[i] > 0) || !std::isfinite(w[i])) return f;
    sw += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
  }
  const double mx = sx / sw, my = sy / sw;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += w[i] * (x[i] - mx) * (x[i] - mx);
    sxy += w[i] * (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) return f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  // With weights = 1/variance these are the textbook standard errors of a weighted fit.
  f.slope_se = std::sqrt(1.0 / sxx);
  f.intercept_se = std::sqrt(1.0 / sw + mx * mx / sxx);
  // From the scatter about the line: the residual variance s^2 = sum w r^2 / (n - 2) in place of 1.
  f.dof = static_cast<int>(n) - 2;
  if (f.dof >= 1) {
    double rss = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = y[i] - f.intercept - f.slope * x[i];
      rss += w[i] * r * r;
    }
    const double s2 = rss / f.dof;
    f.slope_se_resid = std::sqrt(s2 / sxx);
    f.intercept_se_resid = std::sqrt(s2 * (1.0 / sw + mx * mx / sxx));
  }
  f.ok = true;
  return f;
}

LineFit fit_line_ols(const std::vector<double>& x, const std::vector<double>& y) {
  return fit_line(x, y, std::vector<double>(x.size(), 1.0));
}

double slope_ci95_points(const LineFit& f) { return kZ95 * f.slope_se; }
double slope_ci95_resid(const LineFit& f) { return ci95_student(f.slope_se_resid, f.dof); }
double intercept_ci95_points(const LineFit& f) { return kZ95 * f.intercept_se; }
double intercept_ci95_resid(const LineFit& f) { return ci95_student(f.intercept_se_resid, f.dof); }

namespace {
double larger_known(double points, double resid) { return std::isfinite(resid) ? std::max(points, resid) : points; }
}  // namespace
double slope_ci95(const LineFit& f) { return larger_known(slope_ci95_points(f), slope_ci95_resid(f)); }
double intercept_ci95(const LineFit& f) { return larger_known(intercept_ci95_points(f), intercept_ci95_resid(f)); }

}  // namespace logpb
