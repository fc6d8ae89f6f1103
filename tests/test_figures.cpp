#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "analysis/figures.hpp"
#include "common/stats.hpp"

using namespace logpb;
using namespace logpb::analysis;

TEST_CASE("figures: a difference's half-width is the two in quadrature", "[figures]") {
  const Estimate d = difference({100, 3}, {110, 4});
  CHECK(d.value == 10);
  CHECK(d.ci95 == Approx(5));
  CHECK(std::isnan(difference({100, NAN}, {110, 4}).ci95));
}

TEST_CASE("figures: a ratio's half-width by the delta method", "[figures]") {
  const Estimate r = ratio({200, 6}, {100, 4});
  CHECK(r.value == 2);
  CHECK(r.ci95 == Approx(2 * std::hypot(0.03, 0.04)));  // relative half-widths 3% and 4%: 5% of 2
  CHECK(r.ci95 == Approx(0.1));
  CHECK(std::isnan(ratio({200, 6}, {0, 1}).value));  // no ratio of a non-positive figure
  CHECK(std::isnan(ratio({-1, 6}, {100, 1}).value));
}

TEST_CASE("figures: the mean of independent estimates", "[figures]") {
  const Estimate m = mean_of_independent({{10, 3}, {20, 4}});
  CHECK(m.value == 15);
  CHECK(m.ci95 == Approx(2.5));  // sqrt(9 + 16) / 2
  CHECK(std::isnan(mean_of_independent({}).value));
}

TEST_CASE("figures: agree by intervals in quadrature, by their sum, or by a share of a reference", "[figures]") {
  // |d| = 6 against half-widths 4 and 4: their sum (8) covers it, their quadrature (5.66) does not.
  const Estimate a{100, 4}, b{106, 4};
  const Agreement q = agree(a, b, {Intervals::quadrature});
  CHECK(q.difference == Approx(6));
  CHECK(q.allowed == Approx(std::sqrt(32.0)));
  CHECK_FALSE(q.agree);
  const Agreement s = agree(a, b, {Intervals::sum});
  CHECK(s.allowed == Approx(8));
  CHECK(s.agree);
  // Narrow intervals: only the share of the reference lets 6 ns pass.
  const Estimate c{100, 1}, d{106, 1};
  CHECK_FALSE(agree(c, d, {Intervals::sum, 0.05, 100}).agree);
  CHECK(agree(c, d, {Intervals::sum, 0.10, 100}).agree);
  CHECK(agree(c, d, {Intervals::sum, 0.10, 100}).allowed == Approx(10));
  // The wider of the two allowances counts.
  CHECK(agree(a, b, {Intervals::sum, 0.05, 100}).allowed == Approx(8));
  // Symmetric, and a difference exactly at the allowance agrees.
  CHECK_FALSE(agree(d, c, {Intervals::sum, 0.05, 100}).agree);
  CHECK(agree({100, 3}, {107, 4}, {Intervals::sum}).agree);
}

TEST_CASE("figures: an unknown interval leaves the share, or no judgement at all", "[figures]") {
  const Agreement none = agree({100, NAN}, {150, 1}, {Intervals::quadrature});
  CHECK(std::isnan(none.allowed));
  CHECK(none.agree);  // nothing can tell this difference from noise
  const Agreement share = agree({100, NAN}, {150, 1}, {Intervals::sum, 0.2, 100});
  CHECK(share.allowed == Approx(20));
  CHECK_FALSE(share.agree);
}

TEST_CASE("figures: at least, within the summed intervals", "[figures]") {
  CHECK(at_least({100, 3}, {105, 2}));  // 100 + 3 + 2 reaches 105
  CHECK_FALSE(at_least({100, 3}, {106, 2}));
  CHECK(at_least({110, 0}, {100, 0}));
}

TEST_CASE("figures: the mean of a few values with its Student-t interval", "[figures]") {
  const Estimate m = mean_ci95({100, 110, 105});
  CHECK(m.value == Approx(105));
  CHECK(m.ci95 == Approx(4.303 * 5 / std::sqrt(3.0)).epsilon(1e-3));  // sd 5, t(0.975, 2) = 4.303
  const Estimate one = mean_ci95({7});
  CHECK(one.value == 7);
  CHECK(std::isnan(one.ci95));
  CHECK(std::isnan(mean_ci95({}).value));
}

TEST_CASE("figures: runs combine by the wider of the between-run and within-run intervals", "[figures]") {
  Param p;
  p.valid = true;
  p.value = 100;
  p.ci95 = 30;
  Param q = p;
  q.value = 102;
  const Combined c = combine_runs({p, q});
  CHECK(c.param.value == Approx(101));
  CHECK(c.param.ci95 == Approx(std::sqrt(1800.0) / 2));  // within: sqrt(30^2 + 30^2) / 2 = 21.2
  CHECK_THAT(c.ci_method, Catch::Contains("exceeds the between-run interval"));
  q.ci95 = p.ci95 = 0.1;
  const Combined d = combine_runs({p, q});
  CHECK(d.param.ci95 == Approx(12.706 * std::sqrt(2.0) / std::sqrt(2.0)).epsilon(1e-3));  // sd sqrt(2), t(1)
  CHECK(d.ci_method == "Student-t over 2 runs");
}

TEST_CASE("figures: a time within one clock step of zero is a bound, not a value", "[figures]") {
  Param p;
  p.valid = true;
  p.value = 10.0;
  p.ci95 = 0;
  const Param b = within_step(p, 10.0);
  CHECK_FALSE(b.valid);
  CHECK(b.upper_bound == Approx(10.0));
  CHECK(b.raw == Approx(10.0));
  CHECK_THAT(b.note, Catch::Contains("< 1 step (10 ns)"));
  // Its interval reaching past the step widens the bound, never narrows it below the step.
  p.value = 4;
  p.ci95 = 9;
  CHECK(within_step(p, 10.0).upper_bound == Approx(13));
  // A value past one step, an unknown step, or a figure already without a value are left alone.
  p.value = 10.5;
  CHECK(within_step(p, 10.0).valid);
  p.value = 3;
  CHECK(within_step(p, NAN).valid);
  CHECK(within_step(p, 0).valid);
  CHECK(within_step(Param::invalid("x"), 10).note == "x");
}

TEST_CASE("figures: runs combined within one step of zero give the step as their bound", "[figures]") {
  Param p;
  p.valid = true;
  p.value = 10.0;
  p.ci95 = 0.1;
  Param q = p;
  q.value = 9.9;
  const Combined c = combine_runs({p, q}, 10.02);
  CHECK_FALSE(c.param.valid);
  CHECK(c.param.upper_bound >= 10.02);
  CHECK(c.param.raw == Approx(9.95));
  nlohmann::json j = c;
  CHECK(j["value_ns"].is_null());
  CHECK(j["runs_ns"].size() == 2);  // each run's number is still on record
  // Without a step (a fraction, a per-byte cost) nothing changes.
  CHECK(combine_runs({p, q}).param.valid);
  // A lower bound (a steady state cut off in its transition) carries over: the lowest of the runs'.
  const Combined l = combine_runs({Param::at_least("cut off", 2600), Param::at_least("cut off", 2700)});
  CHECK(l.param.lower_bound == Approx(2600));
  nlohmann::json jl = l;
  CHECK(jl["lower_bound_ns"].get<double>() == Approx(2600));
}

TEST_CASE("figures: a point's interval is floored at the step over the messages its span held", "[figures]") {
  // 60 bursts of 512 messages that all read the same: one step of the span is 10 / 512 ns per message.
  const std::vector<double> same(60, 43.0);
  CHECK(point_ci95(same, true, 10, 512) == Approx(10.0 / 512));
  CHECK(point_ci95(same, false, 10, 512) == Approx(10.0 / 512));
  CHECK(point_ci95(same, true, 10, 1) == Approx(10.0));  // one message per span: one step
  // A real spread is kept: the order-statistic interval of the median.
  std::vector<double> spread;
  for (int i = 0; i < 100; ++i) spread.push_back(40 + 0.1 * i);
  const double ci = point_ci95(spread, true, 10, 512);
  CHECK(ci > 10.0 / 512);
  CHECK(ci < 2);
  CHECK(std::isnan(point_ci95({1, 2, 3}, true, 10, 4)));  // too few for an order-statistic interval
}
