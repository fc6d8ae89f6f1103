// LoGPC (Moritz & Frank, seed 001_…) against the paper's own numbers. Units: Alewife cycles.
// Reference values that are not printed in the paper were computed by hand from the equations (the
// quadratic of eq. 7 solved in closed form, in Python), never by this library.
//
// What reproduces and what does not:
// - Eq. 11 (3.875), Table 4's LogP 316, LoPC 453, asynchronous 137, and eq. 14's long-message bound 2.17
//   (the paper's "2.2" / "2.22") reproduce exactly.
// - Table 4's C_n = 23 (synchronous) and 31 (asynchronous) do not come out of eqs. 5-7 with the message
//   as 16 bytes (8-byte header, two 4-byte arguments) crossing a channel at one byte per cycle: the
//   equations give C_n = 1.69 (closed, q = c = 2) and 2.96 (open, m = 1/137), so LoGPC predicts 456, not
//   499. The paper gives neither the flit width nor the channel cycle. Both of its figures do come out
//   with one channel occupancy per message of about 44 cycles at the open, contention-free rates
//   (23 at s = 43.5 with m = 2/316, 31 at s = 45.3 with m = 1/137): the paper's numbers are consistent
//   with each other, and with a message holding a channel about 2.7 cycles per byte.
// - Eq. 14's 2.17 needs that same reading: the channel occupancy is B (one byte per cycle) while
//   T = 2 G B uses G = 0.5 cycles/byte. Taking the channel time per byte to be G itself gives 1.39.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "analysis/logpc.hpp"

using namespace logpb::analysis::logpc;
using Catch::Matchers::WithinAbs;

namespace {
// Alewife (section 3.3): a 4 x 8 mesh, no end-around, bidirectional channels. The paper's model treats it
// as n = 2 with the average per-dimension distance k_d = 3.875 / 2 (eq. 11).
Network alewife() {
  Network net = kary(4, 2, false, true);
  net.k_d = 3.875 / 2;
  return net;
}
const LogGP kTable1{15, 122, 21, 15, 0.5};  // two-argument message: o_s 15, o_r 122, L 21; g ~ o_s (2.1)
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("eq. 11: Alewife's average distance", "[logpc]") {
  CHECK_THAT(mesh_average_distance(8) + mesh_average_distance(4), WithinAbs(3.875, 1e-12));
  CHECK_THAT(mesh_average_distance(2), WithinAbs(0.5, 1e-12));
  CHECK_THAT(torus_average_distance(4, false), WithinAbs(1.5, 1e-12));  // section 4: (k - 1) / 2
  CHECK_THAT(torus_average_distance(4, true), WithinAbs(1.0, 1e-12));
  CHECK_THAT(torus_average_distance(5, true), WithinAbs(1.2, 1e-12));
  CHECK(kary(4, 3, false, true).nodes == 64);
  CHECK_THROWS(kary(4, 2, false, false));
  CHECK_THROWS(kary(1, 2, true, true));
}

TEST_CASE("eqs. 3-6 agree with eq. 9's closed form", "[logpc]") {
  const Network net = alewife();
  const double m = 1.0 / 300, s = 40;
  const double rho = channel_utilisation(net, m, s);
  CHECK_THAT(rho, WithinAbs(s * m * net.k_d / 2, 1e-15));  // eq. 4
  const double eq9 = (net.n + 1) * (net.k_d - 1) * s * s * m / 2 / (1 - m * s * net.k_d / 2);
  CHECK_THAT(network_contention(net, m, s), WithinAbs(eq9, 1e-9));
  CHECK_THAT(network_contention(net, m, s), WithinAbs(net.n * net.k_d * switch_delay(net, m, s), 1e-12));  // eq. 6
  // Saturation: rho >= 1 gives no finite delay.
  CHECK(std::isinf(network_contention(net, saturation_rate(net, s) * 1.01, s)));
  CHECK_THAT(channel_utilisation(net, saturation_rate(net, s), s), WithinAbs(1.0, 1e-12));
}

TEST_CASE("eqs. 13-14: Alewife's long-message bound is 2.17", "[logpc]") {
  const Network net = alewife();
  for (double B : {1000.0, 32000.0, 320000.0}) {  // T_c / T does not depend on B (m_c = 1 / F B)
    const FixedPoint fp = long_message_bound(net, B, 0.5, 1.0);
    REQUIRE(fp.converged);
    // F solves 2F^2 - 3.9375 F - 0.875 = 0: F = 2.170332, T = 2 G B = B.
    CHECK_THAT(fp.T_c / B, WithinAbs(2.170332, 5e-6));
    CHECK_THAT(1 / (fp.m_c * B), WithinAbs(2.170332, 5e-6));
    CHECK(fp.rho < 1);
  }
  // The channel holding a byte for G (not one cycle): F = 1.388740.
  const FixedPoint g = long_message_bound(net, 1000, 0.5, 0.5);
  CHECK_THAT(g.T_c / 1000, WithinAbs(1.388740, 5e-6));
  const LongAllToAll r = long_all_to_all(kTable1, net, 4096, 1.0);
  CHECK_THAT(r.T, WithinAbs(4096, 1e-9));
  CHECK_THAT(r.ratio, WithinAbs(2.170332, 5e-6));
}

TEST_CASE("eq. 7 closed by bisection equals the quadratic's root", "[logpc]") {
  const Network net = alewife();
  for (auto [q, T, c, s] : {std::tuple{2.0, 453.0, 2.0, 16.0}, {1.0, 137.0, 1.0, 60.0}, {2.0, 100.0, 2.0, 50.0}}) {
    // m (T + c A m / (1 - b m)) = q with A = (n+1)(k_d-1) s^2 / 2, b = s k_d / 2:
    // (c A - T b) m^2 + (T + q b) m - q = 0, the root below 1 / b.
    const double A = (net.n + 1) * (net.k_d - 1) * s * s / 2, b = s * net.k_d / 2;
    const double a2 = c * A - T * b, a1 = T + q * b, a0 = -q;
    double root = -1;
    for (double sg : {1.0, -1.0}) {
      const double x = (-a1 + sg * std::sqrt(a1 * a1 - 4 * a2 * a0)) / (2 * a2);
      if (x > 0 && x < 1 / b) root = x;
    }
    REQUIRE(root > 0);
    const FixedPoint fp = close_injection(net, s, T, q, c);
    REQUIRE(fp.converged);
    CHECK_THAT(fp.m_c, WithinAbs(root, root * 1e-9));
    CHECK_THAT(fp.T_c, WithinAbs(q / root, 1e-6));
  }
}

TEST_CASE("Table 4 of LoGPC from Table 1 (cycles)", "[logpc]") {
  const Network net = alewife();
  const double s = 16;  // 8-byte header + two 4-byte arguments, one byte per channel cycle
  const SyncAllToAll sy = sync_all_to_all(kTable1, net, s);
  CHECK(sy.logp == 316);
  CHECK(sy.C_r == 137);
  CHECK(sy.lopc == 453);
  REQUIRE(sy.fp.converged);
  // Not the paper's 23 / 499 (see the top of this file): the equations give 1.6926 and 456.385.
  CHECK_THAT(sy.C_n, WithinAbs(1.69258, 1e-4));
  CHECK_THAT(sy.logpc, WithinAbs(456.385, 1e-3));

  const AsyncAllToAll as = async_all_to_all(kTable1, net, s);
  CHECK(as.logp == 137);
  CHECK(as.logpc == 137);  // contention is latency here, not sender time (Table 4: 137 / 137 / 137)
  CHECK_FALSE(as.saturated);
  CHECK_THAT(as.C_n, WithinAbs(2.962963, 1e-6));  // paper: 31

  // The channel occupancy at which the equations give the paper's C_n, at the open contention-free rates.
  CHECK_THAT(network_contention(net, 2.0 / 316, 43.526), WithinAbs(23.0, 0.01));
  CHECK_THAT(network_contention(net, 1.0 / 137, 45.305), WithinAbs(31.0, 0.01));
}

TEST_CASE("saturation is reported, never a number", "[logpc]") {
  const Network net = alewife();
  const LogGP fast{1, 1, 21, 1, 0.5};                        // o_s + o_r = 2 cycles: m = 1/2 per cycle
  const AsyncAllToAll as = async_all_to_all(fast, net, 16);  // rho = 16 * 0.5 * 0.97 = 7.75
  CHECK(as.open.saturated);
  CHECK(as.saturated);
  CHECK(std::isinf(as.open.C_n));
  CHECK_FALSE(as.open.note.empty());
  REQUIRE(as.closed.converged);  // the closed model always has a root below saturation
  CHECK(as.closed.rho < 1);
  CHECK(as.logpc > as.logp);
  CHECK_THAT(as.logpc, WithinAbs(1 / as.closed.m_c, 1e-6));
}

TEST_CASE("the crossbar has no switch contention", "[logpc]") {
  const Network x = crossbar(16);
  CHECK(network_contention(x, 0.1, 100) == 0);
  const SyncAllToAll sy = sync_all_to_all(kTable1, x, 16);
  CHECK(sy.C_n == 0);
  CHECK(sy.logpc == sy.lopc);
  CHECK(std::isinf(saturation_rate(x, 16)));
}

TEST_CASE("K-to-1 and 1-to-K (Culler et al. section 3.5)", "[logpc]") {
  const LogGP meiko{1700, 1600, 7500, 13600, kNaN};  // ns; g > o_s + o_r
  for (int K : {1, 3, 7, 15}) {
    const KToOne r = k_to_one(meiko, K);
    CHECK_THAT(r.ratio, WithinAbs(K, 1e-12));
    CHECK_THAT(r.g_k, WithinAbs(K * 13600.0, 1e-9));
    CHECK_THAT(r.queueing, WithinAbs((K - 1) * 13600.0, 1e-9));
    CHECK(r.replier_bound);
  }
  const LogGP modern{300, 400, 1000, 5, kNaN};  // g < o_s + o_r: the replier's overheads bind
  CHECK_THAT(k_to_one(modern, 4).g_k, WithinAbs(2800, 1e-9));
  CHECK_THAT(one_to_k(modern, 4).gain, WithinAbs(1.0, 1e-12));
  CHECK_THAT(one_to_k(modern, 4).g_k, WithinAbs(700, 1e-12));
}

TEST_CASE("a missing parameter makes its predictions missing", "[logpc]") {
  const Network net = alewife();
  LogGP p = kTable1;
  p.o_s = kNaN;
  CHECK(std::isnan(sync_all_to_all(p, net, 16).logp));
  CHECK(std::isnan(sync_all_to_all(p, net, 16).logpc));
  CHECK(std::isnan(async_all_to_all(p, net, 16).logpc));
  CHECK(std::isnan(k_to_one(p, 3).g_k));
  p = kTable1;
  p.G = kNaN;
  CHECK(std::isnan(long_all_to_all(p, net, 1000, 1).T_c));
  p.g = kNaN;
  CHECK(std::isnan(async_all_to_all(p, net, 16).logp));
  CHECK(std::isnan(k_to_one(p, 3).ratio));
}
