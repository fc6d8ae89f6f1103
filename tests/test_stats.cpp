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
