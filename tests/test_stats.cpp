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
  const Point p = measure_point(r, [&] { return d(rng); }, [&] { return t += 1; });
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
  const Point p = measure_point(r, [&] { return std::pow(d(rng), 4); }, [&] { return t += 1; });
  CHECK_FALSE(p.converged);
  CHECK(p.samples.size() == 300);
}

TEST_CASE("stop rule: the time cap ends a point") {
  StopRule r;
  r.max_seconds = 1e-6;
  r.rel_precision = 1e-9;
  double t = 0;
  int k = 0;
  const Point p = measure_point(r, [&] { return (++k % 2) ? 1.0 : 100.0; }, [&] { return t += 1e6; });
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
