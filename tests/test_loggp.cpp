// The parameter conversions of analysis/loggp: Kielmann et al.'s Table 1, Bell et al.'s g/G fit and the
// naive bulk model, on inputs whose answer is known.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/loggp.hpp"
#include "analysis/results_json.hpp"
#include "methods/table.hpp"

using namespace logpb::analysis;

TEST_CASE("Kielmann Table 1: g(m), G, PLogP's L and LogP's L from a LogGP machine") {
  // A LogGP machine: o_s = 1000, o_r = 1200, L = 3000, g(0) = 1500, G = 0.5 ns/B, no per-byte overheads.
  // Round trip of m bytes out and 0 back: 2 (o_s + L + o_r) + G m; g(m) = g(0) + G m.
  const double os = 1000, orr = 1200, L = 3000, g0 = 1500, G = 0.5;
  auto pt = [&](double m) { return PLogPPoint{2 * (os + L + orr) + G * m, 10, os, 5, orr, 5}; };
  const PLogPPoint p0 = pt(0), p1 = pt(1), p4k = pt(4096);
  const auto c = plogp_to_loggp(4096, p4k, p0, &p1, g0, 20);
  REQUIRE(c.g.valid);
  CHECK(c.g.value == Approx(g0 + G * 4096));
  CHECK(c.g.ci95 == Approx(std::sqrt(10 * 10 + 10 * 10 + 20 * 20)));
  REQUIRE(c.G.valid);
  CHECK(c.G.value == Approx((g0 + G * 4096) / 4096));
  // PLogP's L = (RTT(0) - 2 g(0)) / 2; LogP's L = that + g(1) - o_s(1) - o_r(1).
  REQUIRE(c.L_plogp.valid);
  CHECK(c.L_plogp.value == Approx((p0.rtt - 2 * g0) / 2));
  REQUIRE(c.L.valid);
  CHECK(c.L.value == Approx((p0.rtt - 2 * g0) / 2 + (g0 + G) - os - orr));
  CHECK(c.L.value == Approx(L + G).margin(1e-6));  // Table 1 gives back LogP's L (plus one byte's G)
}

TEST_CASE("Kielmann Table 1: no g(0), or a negative L, is never a figure") {
  const PLogPPoint p{10000, 10, 1000, 5, 1000, 5};
  const auto none = plogp_to_loggp(8, p, p, &p, NAN, NAN);
  CHECK_FALSE(none.g.valid);
  CHECK_FALSE(none.L.valid);
  CHECK(none.L.note.find("g(0)") != std::string::npos);
  // g(0) larger than half the round trip: (RTT(0) - 2 g(0)) / 2 < 0.
  const auto neg = plogp_to_loggp(8, p, p, &p, 6000, 10);
  CHECK_FALSE(neg.L_plogp.valid);
  CHECK(neg.L_plogp.raw == Approx(-1000));
  // Overheads at 1 byte beyond what the round trip leaves: LogP's L would be negative.
  const PLogPPoint heavy{10000, 10, 5000, 5, 5000, 5};
  const auto negL = plogp_to_loggp(1, heavy, p, &heavy, 4000, 10);
  CHECK(negL.L_plogp.valid);
  CHECK_FALSE(negL.L.valid);
  CHECK(negL.L.raw == Approx(1000 + 4000 - 10000));
}

TEST_CASE("Bell's g and G: the slope over the large sizes with its residual interval, and the crossover") {
  const std::vector<double> n{8, 64, 512, 4096, 32768};
  std::vector<double> gap, ci;
  for (double x : n) {
    gap.push_back(2000 + 0.25 * x);
    ci.push_back(5);
  }
  const auto f = fit_gap(n, gap, ci);
  REQUIRE(f.g.valid);
  CHECK(f.g.value == Approx(2002));
  REQUIRE(f.G.valid);
  CHECK(f.G.value == Approx(0.25));
  CHECK(f.G.ci95 == Approx(0).margin(1e-9));  // exactly on the line
  CHECK(f.crossover.value == Approx(2002 / 0.25));
  // Scatter about the line gives the slope an interval.
  gap[3] += 50;
  CHECK(fit_gap(n, gap, ci).G.ci95 > 0);
}

TEST_CASE("naive bulk model: T_0 and R_inf with intervals from the scatter; a negative T_0 is refused") {
  const std::vector<double> n{8, 64, 256, 1024, 4096};
  std::vector<double> T;
  for (double x : n) T.push_back(5000 + x / 2.0 + (x == 256 ? 30 : 0));
  const auto b = fit_naive_bulk(n, T);
  REQUIRE(b.T0.valid);
  REQUIRE(b.R_inf.valid);
  CHECK(b.R_inf.value == Approx(2).epsilon(0.01));
  CHECK(b.T0.ci95 > 0);
  CHECK(b.R_inf.ci95 > 0);
  std::vector<double> bent;
  for (double x : n) bent.push_back(x < 1000 ? 100 : 2 * x - 3000);
  CHECK_FALSE(fit_naive_bulk(n, bent).T0.valid);
}

namespace {
Param overhead(double v, double ci = 5) { return param_of(v, ci); }
}  // namespace

TEST_CASE("classify_flood: the NI only when neither overhead, the queue nor the credits reach the flood's time") {
  // A 1990s NI: g = 7600 ns against o_s = 1400 and o_r = 2200.
  const auto ni = classify_flood(7600, 20, overhead(1400), overhead(2200));
  CHECK(ni.stage == kStageNI);
  REQUIRE(ni.ni.valid);
  CHECK(ni.ni.value == 7600);
  // Today's NI: the receive overhead reaches the flood's time (within 5%); the NI's gap is hidden and
  // bounded by the flood's time, never published as a value.
  const auto recv = classify_flood(205, 2, overhead(150), overhead(200));
  CHECK(recv.stage == kStageRecv);
  CHECK_FALSE(recv.ni.valid);
  CHECK(recv.ni.upper_bound == Approx(205));
  const auto send = classify_flood(1000, 5, overhead(990), overhead(800));
  CHECK(send.stage == kStageSend);
  CHECK_FALSE(send.ni.valid);
}

TEST_CASE(
    "classify_flood: the overheads are held to the flood's steady pace, not to a total / N an interruption raised") {
  // Seen in e2e_truth_replier (o_s 300, o_r 500, g 200 emulated): the total / N read 576 ns, the receive
  // overhead 529, the steady pace 520. Against the total the receive overhead missed by 8% and the NI was named.
  CHECK(classify_flood(576, 10, overhead(350), overhead(529)).stage == kStageNI);
  FloodLimits lim;
  lim.pace_ns = 520;
  const auto c = classify_flood(576, 10, overhead(350), overhead(529), lim);
  CHECK(c.stage == kStageRecv);
  CHECK_FALSE(c.ni.valid);
  CHECK(c.ni.upper_bound == Approx(576));  // the bound is still the flood's whole time
  // A pace above the total (it cannot be faster than the total) changes nothing; an NI gap far above both
  // overheads stays the NI's.
  lim.pace_ns = 700;
  CHECK(classify_flood(576, 10, overhead(350), overhead(529), lim).stage == kStageNI);
  lim.pace_ns = 7500;
  CHECK(classify_flood(7600, 20, overhead(1400), overhead(2200), lim).stage == kStageNI);
}

TEST_CASE("classify_flood: a queue still limiting at the deepest q is named, and g_ni is no value") {
  // The old classifier named the NI here: both overheads stay far below the flood's time.
  FloodLimits q;
  q.queue_limited = true;
  q.queue_depth = 256;
  q.completion_ns = 6000;
  const auto c = classify_flood(1500, 10, overhead(500), overhead(600), q);
  CHECK(c.stage == kStageQueue);
  CHECK_FALSE(c.ni.valid);
  CHECK(c.ni.upper_bound == Approx(1500));
  CHECK(c.ni.note.find("q = 256") != std::string::npos);
  // The same flood with a queue that stopped limiting is the NI's.
  q.queue_limited = false;
  CHECK(classify_flood(1500, 10, overhead(500), overhead(600), q).stage == kStageNI);
  // Not doubled (--flood-queue fixed), but at its queue's bound: q = 8 with a 6 us completion passes at
  // most 4 sends per 6 us, 1500 ns each: the queue, not the NI.
  q.queue_depth = 8;
  const auto fixed = classify_flood(1500, 10, overhead(500), overhead(600), q);
  CHECK(fixed.stage == kStageQueue);
  CHECK_FALSE(fixed.ni.valid);
  CHECK(fixed.ni.note.find("queue's bound") != std::string::npos);
}

TEST_CASE("classify_flood: a flood at the credit bound RTT / (C/2) measured the credits") {
  FloodLimits lim;
  lim.credits = 16;
  lim.rtt_ns = 40000;  // a credit frame back every 8 messages after a 40 us round trip: 5000 ns per message
  const auto c = classify_flood(5100, 20, overhead(2000), overhead(2000), lim);
  CHECK(c.stage == kStageCredits);
  CHECK_FALSE(c.ni.valid);
  // Far above the bound, the credits do not limit: the NI does.
  lim.credits = 256;
  CHECK(classify_flood(5100, 20, overhead(2000), overhead(2000), lim).stage == kStageNI);
  // Unknown overheads: hidden, never a value.
  CHECK_FALSE(classify_flood(5100, 20, Param::invalid("not run"), Param::invalid("not run")).ni.valid);
}

TEST_CASE("transport_share: a small AM's round trip over its transport's bare loop, split per message") {
  nlohmann::json d = {
      {"parameters", {{"rtt", {{"value_ns", 361.0}, {"ci95_ns", 10.0}}}}},
      {"meta",
       {{"transport", {{"kind", "mpi"}}},
        {"flags", {{"size", 0}}},
        {"harness", {{"send_ns", {{"value_ns", 6.3}}}, {"recv_ns", {{"value_ns", 4.5}}}}},
        {"transport_floor", {{"rtt", {{"value_ns", 271.0}, {"ci95_ns", 10.0}}}}}}}};
  auto t = transport_share(d);
  REQUIRE(t);
  CHECK(t->transport == "mpi");
  CHECK(t->over_floor_ns == Approx(45.0));
  CHECK(t->am_layer_ns == Approx(10.8));
  CHECK(t->transport_ns == Approx(34.2));
  CHECK(t->ci95_ns == Approx(std::sqrt(200.0) / 2));
  d["meta"]["flags"]["size"] = 64;  // a ping-pong of -s 64: its rtt is not the small AM's
  CHECK_FALSE(transport_share(d));
  d["meta"]["flags"]["size"] = 0;
  // A bare loop slower than the run's round trip (tcp on lo: 18.6 us against 14.5 us): no split, and no
  // negative figure printed; one a little below zero, within its interval, is only a bound.
  d["meta"]["transport_floor"] = {{"rtt", {{"value_ns", 18584.0}, {"ci95_ns", 50.0}}}};
  d["parameters"]["rtt"] = {{"value_ns", 14537.0}, {"ci95_ns", 10.0}};
  t = transport_share(d);
  REQUIRE(t);
  CHECK(t->floor_above());
  for (const char* k : {"rtt", "o_s", "o_r"}) CHECK(logpb::methods::transport_share_note(d, k).find('-') == std::string::npos);
  CHECK(logpb::methods::transport_share_note(d, "rtt").find("no split") != std::string::npos);
  d["meta"]["transport_floor"]["rtt"]["value_ns"] = 14537.0 - 2 * 10.8 + 4.0;  // transport -2 ns, +- 25
  t = transport_share(d);
  REQUIRE(t);
  CHECK_FALSE(t->floor_above());
  CHECK(t->transport_ns < 0);
  CHECK(logpb::methods::transport_share_note(d, "rtt").find("under") != std::string::npos);
  CHECK(logpb::methods::transport_share_note(d, "rtt").find('-') == std::string::npos);
  d["meta"].erase("transport_floor");  // a transport that records no bare loop
  CHECK_FALSE(transport_share(d));
}
