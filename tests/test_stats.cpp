#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "common/stats.hpp"

using namespace logpb;

TEST_CASE("summary of a known sample") {
  const Summary s = summarize({5, 1, 4, 2, 3});
  CHECK(s.n == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.mean == Approx(3));
  CHECK(s.median == Approx(3));
  CHECK(s.stdev == Approx(std::sqrt(2.5)));
  // t(0.975, 4) = 2.776
  CHECK(s.ci95_mean == Approx(2.776 * std::sqrt(2.5) / std::sqrt(5.0)).epsilon(1e-3));
  CHECK(std::isnan(s.ci95_median));  // too few samples for a distribution-free interval
}

TEST_CASE("Student-t quantiles come from Boost.Math") {
  CHECK(t975(1) == Approx(12.706).epsilon(1e-3));
  CHECK(t975(10) == Approx(2.228).epsilon(1e-3));
  CHECK(t975(1e6) == Approx(1.960).epsilon(1e-3));
  CHECK(std::isnan(t975(0)));
}

TEST_CASE("empty sample gives NaN, not garbage") {
  const Summary s = summarize({});
  CHECK(s.n == 0);
  CHECK(std::isnan(s.median));
}

TEST_CASE("median interval covers the true median of a large sample") {
  std::mt19937 rng(7);
  std::normal_distribution<double> d(100, 10);
  std::vector<double> v(2000);
  for (auto& x : v) x = d(rng);
  const Summary s = summarize(v);
  CHECK(std::fabs(s.median - 100) < s.ci95_median * 1.5);
  CHECK(s.ci95_median > 0);
  CHECK(s.ci95_median < 2);
}

TEST_CASE("stop rule: a steady quantity converges at the first batch") {
  StopRule r;
  std::mt19937 rng(1);
  std::normal_distribution<double> d(1000, 10);
  double t = 0;
  const Point p = measure_point(
      r, [&] { return d(rng); }, [&] { return t += 1; });
  CHECK(p.converged);
  CHECK(p.samples.size() == 50);
  CHECK(p.value == Approx(1000).epsilon(0.02));
}

TEST_CASE("stop rule: a wild quantity stops at the cap and says it did not converge") {
  StopRule r;
  r.max_samples = 300;
  r.estimator = Estimator::mean;
  std::mt19937 rng(2);
  std::exponential_distribution<double> d(1.0);
  double t = 0;
  const Point p = measure_point(
      r, [&] { return std::pow(d(rng), 4); }, [&] { return t += 1; });
  CHECK_FALSE(p.converged);
  CHECK(p.samples.size() == 300);
}

TEST_CASE("stop rule: the time cap ends a point") {
  StopRule r;
  r.max_seconds = 1e-6;
  r.rel_precision = 1e-9;
  double t = 0;
  int k = 0;
  const Point p = measure_point(
      r, [&] { return (++k % 2) ? 1.0 : 100.0; }, [&] { return t += 1e6; });
  CHECK_FALSE(p.converged);
  CHECK(p.samples.size() == 50);
}

TEST_CASE("weighted line fit recovers a line") {
  const std::vector<double> x{1, 2, 3, 4}, y{3, 5, 7, 9}, w{1, 1, 1, 1};
  const LineFit f = fit_line(x, y, w);
  REQUIRE(f.ok);
  CHECK(f.slope == Approx(2));
  CHECK(f.intercept == Approx(1));
  CHECK_FALSE(fit_line({1}, {1}, {1}).ok);
  CHECK_FALSE(fit_line({1, 1}, {1, 2}, {1, 1}).ok);  // no spread in x
}

TEST_CASE("estimator names") {
  CHECK(parse_estimator("mean") == Estimator::mean);
  CHECK_THROWS(parse_estimator("mode"));
}

TEST_CASE("one standard-error formula: a summary's mean and ci95_of_mean agree") {
  const std::vector<double> v{10, 12, 9, 11, 13, 8, 10};
  const Summary s = summarize(v);
  CHECK(s.ci95_mean == Approx(ci95_of_mean(s.stdev, 7)));
  CHECK(ci95_of_mean(2.0, 5) == Approx(2.776 * 2.0 / std::sqrt(5.0)).epsilon(1e-3));
  CHECK(std::isnan(ci95_of_mean(1.0, 1)));
  CHECK(ci95_student(1.0, 10) == Approx(t975(10)));
  CHECK(std::isnan(ci95_student(1.0, 0)));
}

TEST_CASE("OLS line: residual standard errors by the textbook formula, none through two points") {
  // y = 1 + 2x with residuals +-0.5: s^2 = sum r^2 / (n - 2), se(slope) = sqrt(s^2 / Sxx).
  const std::vector<double> x{0, 1, 2, 3}, y{1.5, 2.5, 5.5, 6.5};
  const LineFit f = fit_line_ols(x, y);
  REQUIRE(f.ok);
  CHECK(f.dof == 2);
  const double mx = 1.5, sxx = 5;
  double rss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) rss += std::pow(y[i] - f.intercept - f.slope * x[i], 2);
  CHECK(f.slope_se_resid == Approx(std::sqrt(rss / 2 / sxx)));
  CHECK(f.intercept_se_resid == Approx(std::sqrt(rss / 2 * (0.25 + mx * mx / sxx))));
  const LineFit two = fit_line_ols({1, 2}, {3, 5});
  REQUIRE(two.ok);
  CHECK(std::isnan(two.slope_se_resid));
}

TEST_CASE("bootstrap interval uses the interpolated percentile and covers a known spread") {
  std::mt19937 rng(3);
  std::normal_distribution<double> d(50, 5);
  std::vector<double> v(400);
  for (auto& x : v) x = d(rng);
  // The mean of 400 draws with sd 5 has a 95% half-width near 1.96 * 5 / 20 = 0.49.
  const double ci = bootstrap_ci95(v, [](const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x;
    return s / static_cast<double>(r.size());
  });
  CHECK(ci == Approx(0.49).epsilon(0.2));
  CHECK(std::isnan(bootstrap_ci95({1.0}, median_of)));
}

TEST_CASE("order statistics: the value of a rank in place, and where the lower median sits") {
  std::vector<float> v{5, 1, 4, 2, 3, 6};
  CHECK(order_statistic(v, v.size() / 2) == 4);  // the upper median of an even count
  CHECK(order_statistic(v, 0) == 1);
  CHECK(order_statistic(v, v.size() * 9 / 10) == 6);
  std::vector<int> one{7};
  CHECK(order_statistic(one, 0) == 7);
  CHECK(lower_median_index({30, 10, 20}) == 2);
  CHECK(lower_median_index({30, 10, 20, 40}) == 2);  // rank (4 - 1) / 2 = 1: 20
  CHECK(lower_median_index({5}) == 0);
  CHECK(lower_median_index({2, 1, 2, 2}) == 0);  // equal values ranked by position: 1, 2@0, 2@2, 2@3
}

TEST_CASE("median of estimates: the middle one, or the mean of two with their intervals as a mean's") {
  const Estimate odd = median_of_estimates({{30, 3}, {10, 1}, {20, 2}});
  CHECK(odd.value == 20);
  CHECK(odd.ci95 == 2);
  const Estimate even = median_of_estimates({{40, 4}, {10, 1}, {20, 3}, {30, 4}});
  CHECK(even.value == 25);
  CHECK(even.ci95 == Approx(std::hypot(3.0, 4.0) / 2));
  CHECK(std::isnan(median_of_estimates({}).value));
}

TEST_CASE("distribution-free interval of the median: the order statistics at n/2 -+ 1.96 sqrt(n)/2") {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(i);
  // n = 100: ranks floor(50 - 9.8) = 40 and ceil(50 + 9.8) = 60, half of their distance.
  CHECK(median_ci95_of_sorted(v) == Approx(10));
  CHECK(std::isnan(median_ci95_of_sorted({1, 2, 3, 4, 5})));
  const Summary s = summarize(v);
  CHECK(s.ci95_median == Approx(std::max(10.0, ci_floor_ns())));
}

TEST_CASE("a fitted slope's interval: known variances with 1.96, the scatter with Student-t on n - 2 dof") {
  // y = 1 + 2x with residuals +-0.5 (as above), each point's own standard error 0.1.
  const std::vector<double> x{0, 1, 2, 3}, y{1.5, 2.5, 5.5, 6.5}, w(4, 1 / 0.01);
  const LineFit f = fit_line(x, y, w);
  REQUIRE(f.ok);
  CHECK(slope_ci95_points(f) == Approx(1.96 * f.slope_se));
  CHECK(slope_ci95_resid(f) == Approx(t975(2) * f.slope_se_resid));
  CHECK(t975(2) == Approx(4.303).epsilon(1e-3));
  // The scatter (residuals of 0.5) is wider than the points' 0.1 allow: the Student-t interval is the one.
  CHECK(slope_ci95(f) == Approx(slope_ci95_resid(f)));
  CHECK(intercept_ci95(f) == Approx(std::max(intercept_ci95_points(f), intercept_ci95_resid(f))));
  // Through two points there is no scatter to read: the points' own intervals alone.
  const LineFit two = fit_line({1, 2}, {3, 5}, {1, 1});
  REQUIRE(two.ok);
  CHECK(std::isnan(slope_ci95_resid(two)));
  CHECK(slope_ci95(two) == Approx(1.96 * two.slope_se));
  // A perfect line of noisy points keeps the points' intervals.
  const LineFit exact = fit_line({0, 1, 2}, {1, 3, 5}, {1, 1, 1});
  CHECK(slope_ci95(exact) == Approx(1.96 * exact.slope_se));
}
