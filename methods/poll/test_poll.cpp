// The poll model's analysis (methods/poll/analysis.*) on synthetic polls whose a and b are known.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "methods/poll/analysis.hpp"

namespace P = logpb::methods::poll_fit;

namespace {

// Polls on a machine whose poll costs a + b x frames, quantized to a clock of `step` ns, with a
// deterministic scatter of +-jitter and one poll in 25 stretched by an interruption.
std::vector<P::Sample> polls(double a, double b, const std::vector<int>& counts, int reps, double step, double jitter,
                             double (*shape)(double, double, int) = nullptr) {
  std::vector<P::Sample> v;
  std::uint64_t x = 88172645463325252ull;
  for (int r = 0; r < reps; ++r)
    for (int k : counts) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const double u = static_cast<double>(x % 10007) / 10006.0;  // 0..1
      double t = shape ? shape(a, b, k) : a + b * k;
      t += (2 * u - 1) * jitter;
      if (r % 25 == 7) t += 35000;  // a VM's tick
      v.push_back({k, k, std::round(t / step) * step});
    }
  return v;
}

}  // namespace

TEST_CASE("poll fit recovers a and b, and its intervals hold them", "[poll]") {
  const std::vector<int> ks{1, 2, 4, 8, 16, 32};
  const auto s = polls(60, 25, ks, 200, 10, 15);
  const P::Fit f = P::fit_poll(s, 10);
  REQUIRE(f.fixed.valid);
  REQUIRE(f.per_frame.valid);
  CHECK(std::fabs(f.fixed.value - 60) <= f.fixed.ci95);
  CHECK(std::fabs(f.per_frame.value - 25) <= f.per_frame.ci95);
  CHECK(f.per_frame.ci95 < 5);  // tight enough to tell 25 from 20
  CHECK(f.linear);
  CHECK(f.points.size() == ks.size());
  REQUIRE(f.one_frame.valid);
  CHECK(std::fabs(f.one_frame.value - 85) <= 10);
  const auto single = P::single_prediction(f);
  REQUIRE(single.valid);
  CHECK(std::fabs(single.value - 85) <= single.ci95);
}

TEST_CASE("poll fit: a curve that is not a line fails the linearity check", "[poll]") {
  const std::vector<int> ks{1, 2, 4, 8, 16, 32};
  const auto s = polls(60, 25, ks, 200, 10, 5, [](double a, double b, int k) { return a + b * k * k / 4.0; });
  const P::Fit f = P::fit_poll(s, 10);
  CHECK_FALSE(f.linear);
  CHECK(f.linear_detail.find("off the line") != std::string::npos);
}

TEST_CASE("poll fit: one frame count cannot part a and b", "[poll]") {
  const auto s = polls(60, 25, {1}, 200, 10, 5);
  const P::Fit f = P::fit_poll(s, 10);
  CHECK_FALSE(f.fixed.valid);
  CHECK_FALSE(f.per_frame.valid);
  CHECK(f.fixed.note.find("cannot be parted") != std::string::npos);
  REQUIRE(f.one_frame.valid);
  CHECK(f.one_frame.value == Approx(90).margin(10));
  const auto single = P::single_prediction(f);
  CHECK(single.valid);
  CHECK(single.value == f.one_frame.value);
}

TEST_CASE("poll fit: a negative intercept beyond its interval is no figure", "[poll]") {
  // Time falls short of proportional at one frame: a line through it meets zero frames below zero.
  std::vector<P::Sample> s;
  for (int r = 0; r < 50; ++r)
    for (int k : {1, 2, 4, 8}) s.push_back({k, k, 100.0 * k - 80 + (r % 3)});
  const P::Fit f = P::fit_poll(s, 1);
  CHECK_FALSE(f.fixed.valid);
  CHECK(f.fixed.raw < 0);
  CHECK(f.per_frame.valid);
}

TEST_CASE("poll fit: frame counts with too few polls are left out", "[poll]") {
  auto s = polls(60, 25, {1, 2, 4}, 50, 1, 2);
  s.push_back({8, 8, 10000});  // one stray poll at 8 frames: not a point
  const P::Fit f = P::fit_poll(s, 1);
  CHECK(f.points.size() == 3);
  CHECK(f.per_frame.value == Approx(25).margin(2));
}

TEST_CASE("empty poll: median of spans, floored at a step over the span, hidden below it", "[poll]") {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(20 + (i % 5) * 0.1);
  const auto p = P::empty_poll(v, 32, 10);
  REQUIRE(p.valid);
  CHECK(p.value == Approx(20.2).margin(0.11));
  CHECK(p.ci95 >= 10.0 / 32);
  const auto tiny = P::empty_poll(std::vector<double>(100, 0.1), 32, 10);
  CHECK_FALSE(tiny.valid);
  CHECK(std::isfinite(tiny.upper_bound));
  CHECK_FALSE(P::empty_poll({1, 2, 3}, 32, 10).valid);
}

TEST_CASE("stream counts: frames per poll that found something, its median, the empty share", "[poll]") {
  // 10 empty polls, 5 of one frame, 5 of three: 20 frames in 10 polls that found something.
  const P::Stream s = P::stream_of({10, 5, 0, 5});
  CHECK(s.polls == 20);
  CHECK(s.empty == 10);
  CHECK(s.frames == 20);
  CHECK(s.mean == Approx(2.0));
  CHECK(s.median == Approx(1.0));
  CHECK(s.empty_share_of_polls == Approx(0.5));
  const P::Stream full = P::stream_of({0, 0, 0, 0, 0, 0, 0, 0, 100});
  CHECK(full.mean == Approx(8));
  CHECK(full.median == Approx(8));
}

TEST_CASE("the relation: Kielmann's a + b against Bell's a / f + b", "[poll]") {
  logpb::analysis::Param a, b;
  a.valid = b.valid = true;
  a.value = 100, a.ci95 = 8;
  b.value = 20, b.ci95 = 2;
  const auto at4 = P::stream_prediction(a, b, 4);
  REQUIRE(at4.valid);
  CHECK(at4.value == Approx(45));
  CHECK(at4.ci95 == Approx(std::hypot(2.0, 2.0)));
  const auto at1 = P::stream_prediction(a, b, 1);
  CHECK(at1.value == Approx(120));  // f = 1: the stream pays the whole poll, as Kielmann's receive does
  CHECK_FALSE(P::stream_prediction(a, b, 0).valid);
  a.valid = false;
  CHECK_FALSE(P::stream_prediction(a, b, 4).valid);
}

TEST_CASE("receive batch from a transport's description", "[poll]") {
  std::string src;
  CHECK(P::receive_batch({{"kind", "shm"}, {"ni", "wire"}}, src) == 1);
  CHECK(src.find("shm") != std::string::npos);
  CHECK(P::receive_batch({{"kind", "shm"}, {"rx_batch", 8}}, src) == 8);
  CHECK(P::receive_batch({{"cq_batch", 16}}, src) == 16);
  CHECK(P::receive_batch({{"burst", 32}}, src) == 32);
  CHECK(P::receive_batch({{"kind", "other"}}, src) == 1);
  CHECK(src.find("names no receive batch") != std::string::npos);
}

TEST_CASE("frame counts: powers of two below the batch, then the batch, capped", "[poll]") {
  CHECK(P::frame_counts(16, 100) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(P::frame_counts(12, 100) == std::vector<int>{1, 2, 4, 8, 12});
  CHECK(P::frame_counts(32, 10) == std::vector<int>{1, 2, 4, 8, 10});
  CHECK(P::frame_counts(1, 100) == std::vector<int>{1});
}

TEST_CASE("stream receive: period less computation, median over blocks", "[poll]") {
  std::vector<double> period, compute;
  for (int i = 0; i < 50; ++i) {
    period.push_back(1000 + 45 + (i == 7 ? 5000 : 0));
    compute.push_back(1000);
  }
  const auto p = P::stream_receive(period, compute, 64, 10);
  REQUIRE(p.valid);
  CHECK(p.value == Approx(45));
  CHECK_FALSE(P::stream_receive({100, 100, 100, 100, 100, 100}, {200, 200, 200, 200, 200, 200}, 64, 10).valid);
}
