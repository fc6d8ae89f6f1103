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
