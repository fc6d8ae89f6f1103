// Kielmann et al.'s summary (analysis/kielmann) on runs whose figures are made up: a cold RTT(0) that
// makes g(m) negative, a saturation held back by one-way credits, and a check failing at many sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "methods/kielmann/analysis.hpp"

using namespace logpb;

namespace {

// A run as the DPDK memif gave it before its rings were warm: RTT(0) timed at 6.7 us, every later size
// at about 2 us, g(0) = 474 ns, and o_r above g(m) at most sizes.
methods::KielmannResult cold_start_run() {
  methods::KielmannResult r;
  r.g0 = 474;
  r.g0_ci = 16;
  r.g0_n = 10240;
  r.g0_converged = true;
  r.g0_ci_method = "distribution-free interval of the median of 7 streams";
  r.credits = 256;
  for (std::uint32_t m : {0u, 1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
    methods::KielmannSize k;
    k.bytes = m;
    k.rtt = m == 0 ? 6660 : 2000 + m;
    k.rtt_ci = 20;
    k.o_s = 350;
    k.o_s_ci = 10;
    k.o_r = 3000;
    k.o_r_ci = 10;
    k.g = k.rtt - 6660 + r.g0;
    r.sizes.push_back(k);
  }
  return r;
}

}  // namespace

TEST_CASE("Kielmann: a negative g(m) is never a value, and a check failing at many sizes is one line") {
  const auto s = methods::kielmann_summary({cold_start_run()});
  const auto& g = s["parameters"]["g"];
  CHECK(g["value_ns"].is_null());
  REQUIRE(g.contains("upper_bound_ns"));
  CHECK(g["upper_bound_ns"].get<double>() > 0);
  CHECK(g["error"].get<std::string>().find("negative") != std::string::npos);
  CHECK(s["parameters"]["G"]["value_ns"].is_null());
  CHECK(s["parameters"]["L"]["value_ns"].is_null());
  for (const auto& e : s["per_size"])
    if (e["g"]["value_ns"].is_number()) CHECK(e["g"]["value_ns"].get<double>() >= 0);
  int negative = 0, receive = 0;
  for (const auto& c : s["checks"]) {
    const auto name = c["name"].get<std::string>();
    if (name.rfind("g(m) >= 0", 0) == 0) {
      ++negative;
      CHECK_FALSE(c["ok"].get<bool>());
      CHECK(c["sizes"].size() == 7);  // every size but 0
    }
    CHECK(name.rfind("o_r <= g", 0) != 0);  // a property of the link: a note, never a failed check
  }
  for (const auto& n : s["notes"])
    if (n["name"] == "o_r > g") ++receive;
  CHECK(negative == 1);
  CHECK(receive <= 1);  // one line whatever the sizes, where it shows at all
  CHECK(s["parameters"]["g0"]["ci_method"].get<std::string>().find("Student") == std::string::npos);
}

TEST_CASE("Kielmann: a g(m) below 0 within its interval is a bound, not a failed check") {
  // shm's shape: g(0) = 50 ns, and RTT(m) up to 40 ns below RTT(0), each with an interval of 30 ns (the
  // interval of g(m) is then about 43 ns): the round trips cannot tell g(m) from 0 at the small sizes.
  auto r = cold_start_run();
  r.g0 = 50;
  r.g0_ci = 5;
  for (auto& k : r.sizes) {
    k.rtt = k.bytes == 0 ? 600 : 510 + k.bytes;
    k.rtt_ci = 30;
    k.o_r = 40;
    k.g = k.rtt - 600 + r.g0;
  }
  const auto s = methods::kielmann_summary({r});
  for (const auto& c : s["checks"])
    if (c["name"].get<std::string>().rfind("g(m) >= 0", 0) == 0) CHECK(c["ok"].get<bool>());
  bool bounded = false;
  for (const auto& e : s["per_size"]) {
    if (e["g"]["value_ns"].is_number()) CHECK(e["g"]["value_ns"].get<double>() >= 0);
    if (e["g"]["value_ns"].is_null() && e["g"].contains("upper_bound_ns")) {
      bounded = true;
      CHECK(e["g"]["upper_bound_ns"].get<double>() > 0);
      CHECK(e["g"]["error"].get<std::string>().find("cannot tell it from 0") != std::string::npos);
    }
  }
  CHECK(bounded);
}

TEST_CASE("Kielmann: a saturation the credits may hold back names them and hides g_ni") {
  auto r = cold_start_run();
  for (auto& k : r.sizes) {
    k.rtt = 2000 + k.bytes;
    k.o_r = 5;
    k.o_s = 5;
    k.g = k.rtt - 2000 + 20;
  }
  // 256 credits returned once 128 are spent over a 2 us round trip: at most one message per 15.6 ns.
  r.g0 = 20;
  r.g0_ci = 1;
  const auto limited = methods::kielmann_summary({r});
  const auto& gni = limited["parameters"]["g_ni"];
  CHECK(gni["value_ns"].is_null());
  REQUIRE(gni.contains("upper_bound_ns"));
  CHECK(gni["upper_bound_ns"].get<double>() == Approx(21));
  CHECK(gni["error"].get<std::string>().find("credits") != std::string::npos);
  CHECK(limited["parameters"]["g0"]["bottleneck"].get<std::string>().find("credits") != std::string::npos);
  CHECK(limited["parameters"]["g0"]["credit_bound_ns"].get<double>() == Approx(2000.0 / 128));

  // The same run with 64 times the credits: the credit round trip allows 0.24 ns a message, far below g(0).
  r.credits = 256 * 64;
  const auto free = methods::kielmann_summary({r});
  CHECK(free["parameters"]["g0"]["bottleneck"].get<std::string>().find("credits") == std::string::npos);
  CHECK(free["parameters"]["g_ni"]["value_ns"].is_number());
}

TEST_CASE("kielmann's progress is a number the loops report, not text parsed back") {
  methods::KielmannConfig cfg;
  std::vector<double> seen;
  // Messages up to 4 bytes: size 0 and 2^0..2^2, four sizes expected.
  methods::detail::KielmannProgress p(cfg, 4, [&](double x) { seen.push_back(x); });
  for (int i = 0; i < 5; ++i) p.size_started();  // the adaptive range added a fifth
  REQUIRE(seen.size() == 5);
  CHECK(seen[0] == 0);
  CHECK(seen[1] == Approx(0.25));
  CHECK(seen[3] == Approx(0.75));
  CHECK(seen[4] == Approx(0.8));  // past the expected count: sizes done over one more than done
  cfg.compare_saturation = true;
  seen.clear();
  methods::detail::KielmannProgress q(cfg, 4, [&](double x) { seen.push_back(x); });
  for (int i = 0; i < 4; ++i) q.size_started();
  for (int i = 0; i < 4; ++i) q.saturation_started();
  REQUIRE(seen.size() == 8);
  CHECK(seen[3] == Approx(0.375));  // the fast phase is half the run
  CHECK(seen[4] == Approx(0.5));
  CHECK(seen[7] == Approx(0.875));
  CHECK(std::is_sorted(seen.begin(), seen.end()));
}
