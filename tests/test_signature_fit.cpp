// Extraction on synthetic signatures: exact ones from the LogP model of Culler et al. section 3.1,
// noisy ones, and degenerate ones that must come back as invalid with a reason.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "analysis/results_json.hpp"
#include "analysis/signature_fit.hpp"

using namespace logpb::analysis;

namespace {

const std::vector<double> kBursts{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};

// Issue time of M requests with compute delay d: send-only (o_s + d each) until the window of C fills
// or the first reply returns, then the bottleneck max(g, o_s + o_r + d) per message.
Curve synth(double os, double orr, double g, double rtt, int C, double d, double noise = 0, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, noise);
  Curve c;
  c.delta_ns = d;
  const double m0 = std::min<double>(C, std::floor(rtt / (os + d)) + 1);
  const double steady = std::max(g, os + orr + d);
  for (double M : kBursts) {
    const double T = M <= m0 ? M * (os + d) : m0 * (os + d) + (M - m0) * steady;
    const double cost = T / M * (1 + (noise > 0 ? n(rng) : 0));
    c.M.push_back(M);
    c.cost_ns.push_back(cost);
    c.ci95_ns.push_back(noise > 0 ? 1.96 * noise * cost / std::sqrt(50.0) : 0);
  }
  return c;
}

Param rtt_of(double v, double ci = 1) { return param_of(v, ci); }

std::vector<Curve> paragon(double noise = 0) {
  std::vector<Curve> cs;
  unsigned seed = 1;
  for (double d : {0.0, 3800.0, 7600.0, 15200.0, 30400.0})
    cs.push_back(synth(1400, 2200, 7600, 19800, 32, d, noise, seed++));
  return cs;
}

bool check_ok(const SignatureFit& f, const std::string& name) {
  for (const auto& c : f.checks)
    if (c.name == name) return c.ok;
  FAIL("no check named " << name);
  return false;
}

}  // namespace

TEST_CASE("exact Paragon signature gives back its parameters") {
  const SignatureFit f = fit_signature(paragon(), rtt_of(19800));
  REQUIRE(f.o_s.valid);
  REQUIRE(f.g.valid);
  REQUIRE(f.o_r.valid);
  REQUIRE(f.L.valid);
  CHECK(f.o_s.value == Approx(1400).epsilon(1e-6));
  CHECK(f.g.value == Approx(7600).epsilon(1e-6));
  CHECK(f.o_r.value == Approx(2200).epsilon(1e-6));
  CHECK(f.L.value == Approx(6300).epsilon(1e-6));
  CHECK(f.send_only_M.size() >= 5);
  // Delta = 3800 < Idle = 4000 leaves the steady state at g: it must not be used for o_r.
  CHECK_FALSE(f.per_delta[0].raised);
  CHECK(f.per_delta[1].raised);
  for (const auto& c : f.checks) CHECK(c.ok);
}

TEST_CASE("noisy signature (2% per point) stays within 10%") {
  const SignatureFit f = fit_signature(paragon(0.02), rtt_of(19800, 50));
  REQUIRE(f.o_r.valid);
  CHECK(f.o_s.value == Approx(1400).epsilon(0.1));
  CHECK(f.g.value == Approx(7600).epsilon(0.1));
  CHECK(f.o_r.value == Approx(2200).epsilon(0.1));
  CHECK(f.L.value == Approx(6300).epsilon(0.1));
  CHECK(f.o_s.ci95 > 0);
  CHECK(f.g.ci95 > 0);
}

TEST_CASE("a cold first message does not inflate o_s") {
  auto cs = paragon();
  cs[0].cost_ns[0] *= 3;
  const SignatureFit f = fit_signature(cs, rtt_of(19800));
  CHECK(f.o_s.value == Approx(1400).epsilon(1e-6));
}

TEST_CASE("no raising Delta: o_r and L are invalid and the check says why") {
  std::vector<Curve> cs{synth(1400, 2200, 7600, 19800, 32, 0), synth(1400, 2200, 7600, 19800, 32, 1000)};
  const SignatureFit f = fit_signature(cs, rtt_of(19800));
  CHECK(f.g.valid);
  CHECK_FALSE(f.o_r.valid);
  CHECK_THAT(f.o_r.note, Catch::Contains("--deltas"));
  CHECK_FALSE(f.L.valid);
  CHECK_FALSE(check_ok(f, "a Delta raised the steady state"));
}

TEST_CASE("a round trip shorter than the overheads gives no negative L") {
  const SignatureFit f = fit_signature(paragon(), rtt_of(5000));
  CHECK_FALSE(f.L.valid);
  CHECK(f.L.raw < 0);
  CHECK_THAT(f.L.note, Catch::Contains("negative"));
  CHECK_FALSE(check_ok(f, "L >= 0"));
}

TEST_CASE("a curve still in transition is flagged") {
  std::vector<Curve> cs{synth(1400, 2200, 7600, 19800, 32, 0)};
  for (auto& c : cs[0].cost_ns) c = 1400;  // never leaves the send-only regime
  cs[0].cost_ns.back() = 2000;
  const SignatureFit f = fit_signature(cs, rtt_of(19800));
  CHECK_FALSE(check_ok(f, "steady state reached at Delta = 0"));
}

TEST_CASE("degenerate inputs are refused, not computed") {
  SECTION("no curves") {
    const SignatureFit f = fit_signature({}, rtt_of(1000));
    CHECK_FALSE(f.o_s.valid);
    CHECK_FALSE(f.g.valid);
  }
  SECTION("first curve is not Delta = 0") {
    const SignatureFit f = fit_signature({synth(1400, 2200, 7600, 19800, 32, 500)}, rtt_of(1000));
    CHECK_FALSE(f.o_s.valid);
  }
  SECTION("empty Delta = 0 curve") {
    const SignatureFit f = fit_signature({Curve{}}, rtt_of(1000));
    CHECK_FALSE(f.o_s.valid);
    CHECK_FALSE(f.g.valid);
  }
  SECTION("single point") {
    Curve c;
    c.M = {1};
    c.cost_ns = {100};
    c.ci95_ns = {std::nan("")};
    const SignatureFit f = fit_signature({c}, rtt_of(1000));
    CHECK(f.o_s.valid);
    CHECK_FALSE(f.g.valid);
  }
  SECTION("issue time that shrinks with M") {
    Curve c;
    c.M = {1, 2, 4, 8};
    c.cost_ns = {100, 40, 10, 1};
    c.ci95_ns = {1, 1, 1, 1};
    const SignatureFit f = fit_signature({c}, rtt_of(1000));
    CHECK_FALSE(f.g.valid);
    CHECK(std::isnan(f.g.value));
  }
}

TEST_CASE("automatic Delta grid") {
  const auto d = auto_deltas(7600, {0.5, 1, 2, 4});
  REQUIRE(d.size() == 4);
  CHECK(d[0] == 3800);
  CHECK(d[3] == 30400);
  CHECK(auto_deltas(1, {0.5, 1})[0] == 10);  // never below 10 ns, never repeated
  CHECK(auto_deltas(1, {0.5, 1}).size() == 1);
}

TEST_CASE("runs combine into a mean, an honest interval and a spread") {
  std::vector<Param> v{rtt_of(100, 1), rtt_of(110, 1), rtt_of(105, 1)};
  const Combined c = combine_runs(v);
  REQUIRE(c.param.valid);
  CHECK(c.param.value == Approx(105));
  CHECK(c.min == 100);
  CHECK(c.max == 110);
  CHECK(c.param.ci95 == Approx(4.303 * 5 / std::sqrt(3.0)).epsilon(1e-3));  // t(0.975, 2) = 4.303
  v.push_back(Param::invalid("lost"));
  const Combined d = combine_runs(v);
  CHECK_THAT(d.param.note, Catch::Contains("1 of 4"));
  const Combined e = combine_runs({Param::invalid("nope")});
  CHECK_FALSE(e.param.valid);
  CHECK(e.param.note == "nope");
}

TEST_CASE("one Delta curve bent by a stall does not carry o_r") {
  auto cs = paragon();
  for (std::size_t i = 0; i < cs[2].M.size(); ++i)
    if (cs[2].M[i] >= 64) cs[2].cost_ns[i] += 500 * (cs[2].M[i] - 48) / cs[2].M[i];  // its tail bends upwards
  const SignatureFit f = fit_signature(cs, rtt_of(19800));
  REQUIRE(f.o_r.valid);
  CHECK(f.o_r.value == Approx(2200).epsilon(1e-6));
  CHECK(f.per_delta[1].o_r.value > 2400);
  CHECK_FALSE(check_ok(f, "o_r agrees across Deltas"));
}

TEST_CASE("a replier whose turnaround is the steady state is named, and its g is no NI gap (Culler 3.5)") {
  // The requester spends o_s + o_r = 800 ns per pair; the replier's o_r + h + o_s is 2800 ns, so the
  // steady state is 2800 and Idle = 2000 > 0: the old classifier named the network interface here.
  std::vector<Curve> cs;
  unsigned seed = 1;
  for (double d : {0.0, 1400.0, 2800.0, 5600.0}) cs.push_back(synth(300, 500, 2800, 7600, 32, d, 0, seed++));
  const SignatureFit without = fit_signature(cs, rtt_of(7600), 1.2, 32);
  CHECK(without.bottleneck == kBottleneckNI);  // with nothing from the replier, Idle > 0 is all it has
  const SignatureFit f = fit_signature(cs, rtt_of(7600), 1.2, 32, rtt_of(2800, 50));
  CHECK(f.bottleneck == kBottleneckReplier);
  CHECK_FALSE(f.g_ni.valid);
  CHECK(f.g_ni.upper_bound == Approx(2800).epsilon(0.02));
  CHECK(f.g.value == Approx(2800).epsilon(0.01));
  // A replier as fast as the requester (a symmetric pair) is not the bottleneck: the NI here.
  const SignatureFit fast = fit_signature(cs, rtt_of(7600), 1.2, 32, rtt_of(800, 10));
  CHECK(fast.bottleneck == kBottleneckNI);
}

TEST_CASE("a replier-bound steady state without the requester's o_r says so in words, not as a NaN") {
  // Only the Delta = 0 curve: o_r has no rise to be read from, so o_s + o_r is unknown. The hidden g_ni's
  // reason once printed "the requester spends nan ns per pair" (raw shm, scripts/raw-vs-mpi).
  const std::vector<Curve> cs{synth(300, 500, 2800, 7600, 32, 0)};
  const SignatureFit f = fit_signature(cs, rtt_of(7600), 1.2, 32, rtt_of(2800, 50));
  REQUIRE_FALSE(f.o_r.valid);
  REQUIRE(f.bottleneck == kBottleneckReplier);
  CHECK_THAT(f.g_ni.note, Catch::Contains("o_s + o_r was not measured"));
  CHECK_THAT(f.g_ni.note, !Catch::Contains("nan"));
}

TEST_CASE("an Idle below zero beyond its interval is no value, in any regime") {
  // The Delta = 0 curve settles at g = 1000 ns while the Delta curves read o_r = 1500 off their rise: o_s +
  // o_r = 1800 exceeds the steady state, which LogP does not allow (a receive that costs more when the
  // requester computes between sends, as MPI's progress can). The fit must neither print -800 nor call it 0.
  std::vector<Curve> cs{synth(300, 100, 1000, 7000, 32, 0)};
  unsigned seed = 2;
  for (double d : {1000.0, 2000.0, 4000.0}) cs.push_back(synth(300, 1500, 1000, 7000, 32, d, 0, seed++));
  const SignatureFit f = fit_signature(cs, rtt_of(7000), 1.2, 32);
  INFO("o_s " << f.o_s.value << " o_r " << f.o_r.value << " g " << f.g.value << " idle raw " << f.idle.raw);
  REQUIRE(f.o_r.valid);
  CHECK(f.o_r.value == Approx(1500).epsilon(0.05));
  CHECK_FALSE(f.idle.valid);
  CHECK(f.idle.raw < -500);
  CHECK(f.idle.note.find("below zero beyond its interval") != std::string::npos);
  CHECK_FALSE(check_ok(f, "Idle >= 0"));
  // Within its interval a negative Idle is still shown as 0, its arithmetic kept in raw.
  std::vector<Curve> near{synth(300, 100, 1000, 7000, 32, 0)};
  for (double d : {1000.0, 2000.0, 4000.0}) near.push_back(synth(300, 710, 1000, 7000, 32, d, 0, seed++));
  const SignatureFit z = fit_signature(near, rtt_of(7000), 1.2, 32);
  INFO("near: o_r " << z.o_r.value << " idle raw " << z.idle.raw << " ci " << z.idle.ci95);
  CHECK(z.idle.valid);
  CHECK(z.idle.value == 0);
  CHECK(z.idle.raw < 0);
}
