// Bursts that held an interruption are left out of their point (methods::leave_out_interrupted).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "common/stats.hpp"
#include "methods/signature/loops.hpp"

using logpb::median_of;
using logpb::methods::leave_out_interrupted;

namespace {
// n bursts of M messages at `clean` ns a message with a little spread; `hit` of them (spread through the
// list) held one interruption of `len` ns.
std::vector<double> bursts(int n, int hit, int M, double clean, double len, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> spread(0, 0.005 * clean);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(clean + spread(rng) + (i < hit ? len / M : 0));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}
std::vector<double> kept(const std::vector<double>& v, const std::vector<bool>& k) {
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (k[i]) out.push_back(v[i]);
  return out;
}
}  // namespace

TEST_CASE("interrupted bursts: the clean median is recovered where most bursts were hit", "[signature][interrupt]") {
  // The cloud truth machine at M = 97: 3531 ns a message clean, 40 us interruptions, 30 of 50 bursts hit.
  const auto v = bursts(50, 30, 97, 3531, 40e3);
  CHECK(median_of(v) > 3531 * 1.05);  // what the plain median read
  double cut = NAN;
  const auto k = leave_out_interrupted(v, 97, 40e3, cut);
  const auto clean = kept(v, k);
  CHECK(clean.size() == 20);
  CHECK(median_of(clean) == Approx(3531).epsilon(0.01));
  CHECK(std::isfinite(cut));
}

TEST_CASE("interrupted bursts: nothing is left out without a measured length or without a hit",
          "[signature][interrupt]") {
  double cut = 0;
  const auto hit = bursts(50, 30, 97, 3531, 40e3);
  for (bool b : leave_out_interrupted(hit, 97, NAN, cut)) CHECK(b);
  CHECK(std::isnan(cut));
  const auto none = bursts(50, 0, 97, 3531, 40e3);
  for (bool b : leave_out_interrupted(none, 97, 40e3, cut)) CHECK(b);
  // Short bursts: one interruption is far above every clean one, and there is none.
  const auto small = bursts(50, 0, 1, 300, 40e3);
  for (bool b : leave_out_interrupted(small, 1, 40e3, cut)) CHECK(b);
}

TEST_CASE("interrupted bursts: a point where nearly every burst was hit stands as measured",
          "[signature][interrupt]") {
  // 45 of 50 hit: the lower quartile is itself interrupted, and fewer than a quarter would remain.
  const auto v = bursts(50, 45, 97, 3531, 40e3);
  double cut = 0;
  const auto k = leave_out_interrupted(v, 97, 40e3, cut);
  for (bool b : k) CHECK(b);
  CHECK(std::isnan(cut));
}

TEST_CASE("interrupted bursts: a real spread wider than half an interruption is kept", "[signature][interrupt]") {
  // A jittery NI at M = 8: bursts spread over +-20% (600 ns), an interruption would add 5 us a message.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(2400, 3600);
  std::vector<double> v;
  for (int i = 0; i < 50; ++i) v.push_back(u(rng));
  double cut = 0;
  for (bool b : leave_out_interrupted(v, 8, 40e3, cut)) CHECK(b);
}
