// The overhead Bell et al.'s CPU-overlap test (section 4.3) reads off its T(c) curve (loops.hpp,
// detail::infer_overhead), on synthetic curves whose answer is known.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "methods/bell/loops.hpp"

using logpb::methods::OverlapPoint;
using logpb::methods::detail::infer_overhead;

namespace {

// One point of the overlap test on a machine with overhead o whose gap, seen at q = 1, is t0: a message
// costs max(t0, c + o), and its non-compute time is that less c (Bell et al. 4.3, Figure 3).
OverlapPoint point(double c, double t0, double o) {
  const double t = std::max(t0, c + o);
  return {c, t, t - c};
}
// The grid overlap_side walks: c in steps of T(0)/10 until two points lie past c = T(0).
std::vector<OverlapPoint> curve(double t0, double o) {
  std::vector<OverlapPoint> pts;
  for (int k = 0; k * t0 / 10 <= 1.1 * t0 + 1; ++k) pts.push_back(point(k * t0 / 10, t0, o));
  return pts;
}

}  // namespace

TEST_CASE("overlap: the overhead is read off the rising line") {
  for (const auto& [t0, o] : {std::pair{3000.0, 1000.0}, {7600.0, 2200.0}, {1500.0, 1400.0}}) {
    INFO("T(0) " << t0 << " ns, o " << o << " ns");
    CHECK(infer_overhead(curve(t0, o)) == Approx(o).epsilon(1e-9));
  }
  // The non-compute times on the line scatter by 2%: the median of those on the bottom.
  auto pts = curve(3000, 1000);
  int k = 0;
  for (auto& p : pts)
    if (p.c_ns > 2000) p.o_ns *= 1 + 0.02 * ((k++ % 3) - 1);
  CHECK(infer_overhead(pts) == Approx(1000).epsilon(0.021));
}

TEST_CASE("overlap: a point raised by a slowed peer does not pull the overhead up") {
  // Only two points lie past the knee (where overlap_side stops) and two earlier ones rose because the
  // peer lost its core during their runs: they carry waiting time, so their non-compute time sits far
  // above the bottom and must be left out.
  const double t0 = 3000, o = 1000;
  std::vector<OverlapPoint> pts{point(0, t0, o),    point(300, t0, o),  {600, 4200, 3600}, {900, 4000, 3100},
                                point(1200, t0, o), point(2700, t0, o), point(3000, t0, o)};
  CHECK(infer_overhead(pts) == Approx(o).epsilon(1e-9));
}

TEST_CASE("overlap: NaN points are skipped; no rise, one rise or no T(0) gives NaN") {
  auto pts = curve(3000, 1000);
  pts[3] = OverlapPoint{};  // a run that lost messages
  pts[pts.size() - 2].o_ns = NAN;
  CHECK(infer_overhead(pts) == Approx(1000).epsilon(1e-9));

  std::vector<OverlapPoint> flat;  // the curve stopped before the knee: nothing rose
  for (int k = 0; k <= 6; ++k) flat.push_back(point(k * 300, 3000, 1000));
  CHECK(std::isnan(infer_overhead(flat)));

  auto one = flat;  // a single point that rose is not a line
  one.push_back(point(2500, 3000, 1000));
  CHECK(std::isnan(infer_overhead(one)));
  one.push_back(point(2800, 3000, 1000));
  CHECK(infer_overhead(one) == Approx(1000).epsilon(1e-9));

  auto headless = curve(3000, 1000);
  headless.front().t_ns = NAN;
  CHECK(std::isnan(infer_overhead(headless)));
  CHECK(std::isnan(infer_overhead({})));
}

using logpb::methods::detail::knee_index;
using logpb::methods::detail::knee_overhead;

TEST_CASE("overlap: Bell et al.'s reading at the knee") {
  for (const auto& [t0, o] : {std::pair{3000.0, 1000.0}, {7600.0, 2200.0}, {1500.0, 1400.0}}) {
    INFO("T(0) " << t0 << " ns, o " << o << " ns");
    CHECK(knee_overhead(curve(t0, o), t0 / 20) == Approx(o).epsilon(1e-9));
  }
  // A NI that hands a standing queue up in batches: just past the knee a message costs o = 1000 alone, and
  // the further c grows past it the larger the batch and the less a message costs (down to 400; by less
  // than c grows, or T(c) would fall). The knee reads the single receive; the lowest point past it the
  // batched stream.
  const double t0 = 3000;
  std::vector<OverlapPoint> pts;
  for (int k = 0; k <= 14; ++k) {
    const double c = k * 300.0;
    const double o = c <= 2300 ? 1000 : std::max(400.0, 1000 - 0.5 * (c - 2300));
    pts.push_back(point(c, t0, o));
  }
  // The grid of 300 ns put the knee between 2100 (hidden) and 2400 (risen); halving added 2250 and 2325.
  pts.insert(pts.begin() + 9, point(2250, t0, 1000));
  pts.insert(pts.begin() + 10, point(2325, t0, 1000 - 0.5 * 25));
  std::sort(pts.begin() + 1, pts.end(), [](const auto& a, const auto& b) { return a.c_ns < b.c_ns; });
  const auto k = knee_index(pts);
  REQUIRE(k > 0);
  CHECK(pts[k].c_ns == 2250);
  CHECK(knee_overhead(pts, 100) == Approx(1000).margin(10));
  CHECK(infer_overhead(pts) == Approx(400).epsilon(0.06));
}

TEST_CASE("overlap: the knee ignores a point raised by chance before it, and needs a rise") {
  const double t0 = 3000, o = 1000;
  auto pts = curve(t0, o);
  pts[3] = {900, 3400, 2500};  // the peer lost its core during this point's runs
  const auto k = knee_index(pts);
  REQUIRE(k > 3);
  CHECK(knee_overhead(pts, 150) == Approx(o).epsilon(1e-9));

  std::vector<OverlapPoint> flat;  // the curve stopped before the knee: nothing rose
  for (int i = 0; i <= 6; ++i) flat.push_back(point(i * 300, 3000, 1000));
  CHECK(knee_index(flat) == 0);
  CHECK(std::isnan(knee_overhead(flat, 150)));
  CHECK(std::isnan(knee_overhead({}, 150)));
}
