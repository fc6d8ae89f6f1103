// Sample statistics and the stop rule of Culler et al. section 3.3: repeat a point in batches of 50
// until its estimate is known to +-5% at 95% confidence, with a cap, and record whether it converged.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace logpb {

enum class Estimator { median, mean };
Estimator parse_estimator(const std::string& s);
const char* to_string(Estimator e);

struct Summary {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, stdev = 0;
  double median = 0, p90 = 0, p99 = 0, p999 = 0;
  double ci95_mean = 0;    // Student-t half-width of the mean
  double ci95_median = 0;  // half-width of the distribution-free (order statistic) interval of the median
  double value(Estimator e) const { return e == Estimator::median ? median : mean; }
  double ci95(Estimator e) const { return e == Estimator::median ? ci95_median : ci95_mean; }
};

// The two-sided 95% normal quantile (as rounded everywhere the project uses it): a half-width of a quantity
// whose variance is known, e.g. a point's own interval read as 1.96 standard errors.
inline constexpr double kZ95 = 1.96;
// Two-sided 95% Student-t quantile for `dof` degrees of freedom (Boost.Math).
double t975(double dof);
// The one standard-error formula: half-width of the 95% Student-t interval of a mean of n values with
// sample standard deviation sd, t(0.975, n-1) sd / sqrt(n). A summary's mean, runs combined into one
// figure and a fit's slope (with its own degrees of freedom) all use it. NaN for n < 2.
double ci95_of_mean(double sd, double n);
double ci95_student(double se, double dof);  // t(0.975, dof) x a standard error; NaN for dof < 1

// A number with its 95% half-width (NaN: none known).
struct Estimate {
  double value = NAN, ci95 = NAN;
};
// The mean of a handful of values (runs, ranks) with the Student-t half-width of ci95_of_mean, not floored
// at the clock's resolution (the values need not be times). NaN mean for none, NaN half-width for one.
Estimate mean_ci95(const std::vector<double>& v);

// The floor of every reported interval: the clock's resolution (a TSC that advances in 10 ns steps cannot
// tell a median to better than that, whatever the order statistics say). Set once, from the Clock.
void set_ci_floor_ns(double ns);
double ci_floor_ns();

// Half-width of the 95% percentile-bootstrap interval of stat(sample) (2000 resamples, fixed seed so a
// run's figures are reproducible from its raw data). For statistics with no closed-form interval: a
// minimum over runs, a median of differences, an inferred overhead. NaN for fewer than two values.
double bootstrap_ci95(const std::vector<double>& v, const std::function<double(const std::vector<double>&)>& stat,
                      int reps = 2000);
double median_of(std::vector<double> v);  // NaN when empty
// The value of rank k (0-based: k = 0 is the smallest) among v, found in place in linear time (v is
// reordered, not sorted). No interpolation: k = n / 2 is the upper median, n * 9 / 10 a 90th percentile.
template <class T>
T order_statistic(std::vector<T>& v, std::size_t k) {
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(k);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}
// Where in v its lower median sits (the value of rank (n - 1) / 2; equal values ranked by position): for
// the member a median picks, e.g. the run whose median is the median of the runs'. Requires v non-empty.
std::size_t lower_median_index(const std::vector<double>& v);
// The median of estimates: the middle one, or for an even count the mean of the two middle ones, whose
// half-width is then that of a mean of two independent values, hypot(a, b) / 2. NaN when empty.
Estimate median_of_estimates(std::vector<Estimate> v);
// Half-width of the distribution-free 95% interval of the median of sorted values: the order statistics at
// ranks n/2 -+ 1.96 sqrt(n)/2 (normal approximation to the binomial). Not floored (each caller floors at
// its own clock step). NaN below 6 values, where it is not bounded at all.
double median_ci95_of_sorted(const std::vector<double>& sorted);
// The q-quantile of sorted values, interpolated between order statistics: the one percentile
// definition every figure and table uses.
double quantile_of_sorted(const std::vector<double>& sorted, double q);
Summary summarize(std::vector<double> samples);  // by value: sorted in place
void to_json(nlohmann::json& j, const Summary& s);

struct StopRule {
  double rel_precision = 0.05;  // stop once ci95 / value <= this
  int batch = 50;
  int min_samples = 50;
  int max_samples = 2000;
  double max_seconds = 2.0;  // per point, so a slow point cannot hold a whole run
  Estimator estimator = Estimator::median;
};
void to_json(nlohmann::json& j, const StopRule& r);

struct Point {
  Summary summary;
  double value = 0, ci95 = 0;  // by the rule's estimator
  bool converged = false;
  int discarded = 0;            // samples returned as NaN (a message was lost during them): re-measured
  std::vector<double> samples;  // kept for the raw curve (each sample already averages a burst)
};

// Runs `sample()` (which returns one measurement, in ns) in batches until the rule is met. `clock_ns`
// gives elapsed wall time in ns for the time cap. Statistics are computed only between batches.
template <class Sample, class Now>
Point measure_point(const StopRule& rule, Sample&& sample, Now&& clock_ns) {
  Point p;
  p.samples.reserve(static_cast<std::size_t>(rule.max_samples));
  const double t0 = clock_ns();
  for (;;) {
    for (int i = 0; i < rule.batch && static_cast<int>(p.samples.size()) < rule.max_samples; ++i) {
      const double x = sample();
      if (x == x) {
        p.samples.push_back(x);
      } else if (++p.discarded > rule.max_samples) {
        break;  // the caller sees a point with (almost) no samples and discarded > 0
      } else {
        --i;
      }
    }
    if (p.discarded > rule.max_samples && p.samples.size() < 2) {
      p.summary = summarize(p.samples);
      p.value = p.ci95 = std::nan("");
      return p;
    }
    // Before min_samples there is nothing to decide: the samples follow one another with no summary
    // (quantiles, intervals: microseconds of other work) between them to cool the caches they run in.
    if (static_cast<int>(p.samples.size()) < std::min(rule.min_samples, rule.max_samples) &&
        (clock_ns() - t0) * 1e-9 <= rule.max_seconds)
      continue;
    p.summary = summarize(p.samples);
    p.value = p.summary.value(rule.estimator);
    p.ci95 = p.summary.ci95(rule.estimator);
    const int n = static_cast<int>(p.samples.size());
    // An interval already at the clock's resolution (the floor of every interval) cannot narrow further: a
    // point of 160 ns on a TSC that steps by 10 ns is as precise as that clock allows, and would otherwise
    // never reach 5% and be left out of fits as unconverged.
    if (n >= rule.min_samples && p.value > 0 && p.ci95 <= std::max(rule.rel_precision * p.value, ci_floor_ns())) {
      p.converged = true;
      break;
    }
    if (n >= rule.max_samples || (clock_ns() - t0) * 1e-9 > rule.max_seconds) break;
  }
  return p;
}

// Weighted least-squares line y = a + b x; weights are 1/variance (pass equal weights for OLS).
struct LineFit {
  double intercept = 0, slope = 0;
  double slope_se = 0, intercept_se = 0;  // from the weights taken as 1/variance
  // From the scatter about the line (ordinary least squares: the data's own noise), with n - 2 degrees
  // of freedom; NaN with two points, where a line fits exactly and says nothing of its error.
  double slope_se_resid = NAN, intercept_se_resid = NAN;
  int dof = 0;
  bool ok = false;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w);
// Unweighted: fit_line with equal weights, its interval from the residuals (slope_se_resid).
LineFit fit_line_ols(const std::vector<double>& x, const std::vector<double>& y);

// 95% half-widths of a fitted coefficient, the one rule every fit uses. From the points' own intervals
// (the weights are known variances: kZ95 x slope_se) and from the scatter about the line (a variance the
// fit estimates itself: Student-t on its n - 2 degrees of freedom; NaN with fewer than three points).
double slope_ci95_points(const LineFit& f);
double slope_ci95_resid(const LineFit& f);
double intercept_ci95_points(const LineFit& f);
double intercept_ci95_resid(const LineFit& f);
// The larger of the two (the points' alone where there is no scatter to read), so that neither a line
// through two points nor a perfect fit of noisy points looks exact.
double slope_ci95(const LineFit& f);
double intercept_ci95(const LineFit& f);

}  // namespace logpb
