// methods/agree/analysis.hpp: the verdict per shared parameter, the intervals it allows, the named definitions
// when figures part, and a figure a method could not observe. The records are small hand-written ones in
// the shape the methods write (their numbers are test inputs, not measurements); tests/e2e/agree.py runs
// `logpbench agree` on emulated machines.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "methods/agree/analysis.hpp"

using logpb::analysis::agreed_parameters;
using logpb::analysis::agreement;
using nlohmann::json;

namespace {

json p(double v, double ci) { return {{"value_ns", v}, {"ci95_ns", ci}}; }

// Four methods on one link; each figure's value and interval given per method.
json records(double sig_g, double kiel_g0, double os_avail, double ci = 5) {
  return {
      {"signature",
       {{"parameters",
         {{"o_s", p(1000, ci)}, {"o_r", p(1200, ci)}, {"g", p(sig_g, ci)}, {"rtt", p(8400, ci)}, {"L", p(2000, ci)}}}}},
      {"kielmann",
       {{"parameters",
         {{"o_s", p(1030, ci)},
          {"o_r", p(1210, ci)},
          {"g0", p(kiel_g0, ci)},
          {"rtt", p(8450, ci)},
          {"L", p(1980, ci)}}}}},
      {"overlap",
       {{"parameters", {{"o_s", p(1060, ci)}, {"o_r", p(1240, ci)}, {"rtt", p(8450, ci)}}},
        {"per_size", json::array({{{"bytes", 8}}})}}},
      {"availability", {{"parameters", {{"o_s", p(os_avail, ci)}, {"o_r", p(1240, ci)}}}}}};
}

const json kTransport = {{"local_completion", "the send CQE of the operation's last WR"}};

}  // namespace

TEST_CASE("agree: figures within 10% agree, each method's value kept") {
  const json a = agreement(records(7600, 7500, 1040), kTransport, 0);
  for (const char* k : {"o_s", "o_r", "g", "rtt", "L"}) {
    INFO(k << ": " << a[k].dump());
    CHECK(a[k]["verdict"] == "agree");
    CHECK(a[k]["explanation"].get<std::string>().find("agree within 10%") == 0);
  }
  CHECK(a["o_s"]["methods"].size() == 4);
  CHECK(a["o_s"]["methods"]["availability"]["value_ns"] == 1040);
  CHECK(a["g"]["methods"]["kielmann"]["key"] == "g0");
  CHECK(a["g"]["max_rel_diff"].get<double>() == Approx(100.0 / 7600));
}

TEST_CASE("agree: a request/reply steady state against a one-way saturation is named") {
  const json a = agreement(records(2200, 1200, 1040), kTransport, 0);
  REQUIRE(a["g"]["verdict"] == "differ");
  CHECK(a["g"]["max_rel_diff"].get<double>() == Approx(1000.0 / 2200));
  const auto why = a["g"]["explanation"].get<std::string>();
  CHECK(why.find("signature 2.200 us above kielmann 1.200 us") != std::string::npos);
  CHECK(why.find("request/reply steady state") != std::string::npos);
  CHECK(why.find("one-way saturation") != std::string::npos);
  CHECK(a["o_s"]["verdict"] == "agree");  // one parameter's difference leaves the others alone
}

TEST_CASE("agree: an overhead that waits for local completion names what that is on the transport") {
  const json a = agreement(records(7600, 7500, 2500), kTransport, 0);
  REQUIRE(a["o_s"]["verdict"] == "differ");
  const auto why = a["o_s"]["explanation"].get<std::string>();
  CHECK(why.find("availability 2.500 us above") != std::string::npos);
  CHECK(why.find("the send CQE of the operation's last WR") != std::string::npos);
  const json dpdk = {{"local_completion", {{"mechanism", "tx completion"}, {"meaning", "immediate"}}}};
  const auto dpdk_why = agreement(records(7600, 7500, 2500), dpdk, 0)["o_s"]["explanation"].get<std::string>();
  CHECK(dpdk_why.find("immediate (tx completion)") != std::string::npos);
}

TEST_CASE("agree: a difference the intervals cover is inconclusive, not a difference") {
  // 1000 against 1300 is 23% apart; intervals of 100 each leave 100, 7.7% of 1300.
  json r = records(7600, 7500, 1300, 100);
  r.erase("overlap");
  r["signature"]["parameters"]["o_s"] = p(1000, 100);
  r["kielmann"]["parameters"]["o_s"] = p(1150, 100);
  const json a = agreement(r, kTransport, 0);
  CHECK(a["o_s"]["verdict"] == "inconclusive");
  CHECK(a["o_s"]["max_rel_diff"].get<double>() == Approx(300.0 / 1300));
  CHECK(a["o_s"]["max_rel_diff_beyond_ci95"].get<double>() == Approx(100.0 / 1300));
  const auto why = a["o_s"]["explanation"].get<std::string>();
  CHECK(why.find("cover all but 8%") != std::string::npos);
  CHECK(why.find("availability +-0.100 us") != std::string::npos);
  CHECK(why.find("local completion") != std::string::npos);  // the definitions still follow
  r["availability"]["parameters"]["o_s"] = p(1300, 10);
  r["signature"]["parameters"]["o_s"] = p(1000, 10);
  CHECK(agreement(r, kTransport, 0)["o_s"]["verdict"] == "differ");
  // A wide interval never turns figures 10% apart into a difference, nor into agreement past 10%.
  r["kielmann"]["parameters"]["o_s"] = p(1050, 10);
  r["availability"]["parameters"]["o_s"] = p(1090, 5000);
  CHECK(agreement(r, kTransport, 0)["o_s"]["verdict"] == "agree");
}

TEST_CASE("agree: a figure a method cannot observe is a bound, not a disagreement") {
  json r = records(2200, 1200, 1040);
  r["kielmann"]["parameters"]["g0"] = {{"value_ns", nullptr},
                                       {"ci95_ns", nullptr},
                                       {"upper_bound_ns", 1300.0},
                                       {"error", "hidden: the flood runs at the receive overhead"}};
  const json a = agreement(r, kTransport, 0);
  CHECK(a["g"]["verdict"] == "not compared");
  CHECK(a["g"]["max_rel_diff"].is_null());
  CHECK(a["g"]["methods"]["kielmann"]["upper_bound_ns"] == 1300.0);
  const auto why = a["g"]["explanation"].get<std::string>();
  CHECK(why.find("only signature observed it") == 0);
  CHECK(why.find("kielmann cannot observe it here (at most 1.300 us: hidden") != std::string::npos);
  // A negative figure is never a value.
  r["kielmann"]["parameters"]["L"] = {{"value_ns", -5.0}, {"ci95_ns", 1.0}};
  CHECK(agreement(r, kTransport, 0)["L"]["methods"]["kielmann"]["value_ns"].is_null());
}

TEST_CASE("agree: differences within the timer's own cost are no difference") {
  json r = records(52, 48, 30, 0.4);
  r.erase("overlap");
  r["signature"]["parameters"]["o_s"] = p(10, 0.4);
  r["kielmann"]["parameters"]["o_s"] = p(20, 0.4);
  CHECK(agreement(r, kTransport, 0)["o_s"]["verdict"] == "differ");
  const json a = agreement(r, kTransport, 20);
  CHECK(a["o_s"]["verdict"] == "agree");
  CHECK(a["o_s"]["max_rel_diff"].get<double>() == Approx(20.0 / 30));  // the figures as measured
  CHECK(a["o_s"]["explanation"].get<std::string>().find("the timer's own cost (0.020 us)") != std::string::npos);
  CHECK(a["floor_ns"] == 20.0);
  r["availability"]["parameters"]["o_s"] = p(45, 0.4);
  CHECK(agreement(r, kTransport, 20)["o_s"]["verdict"] == "differ");
}

TEST_CASE("agree: the usual table's figures name their source") {
  json r = records(2200, 1200, 1040);
  json ps = agreed_parameters(r);
  CHECK(ps["o_s"]["source"] == "signature o_s");
  CHECK(ps["g"]["source"] == "kielmann g0");
  CHECK(ps["g"]["value_ns"] == 1200);
  r["kielmann"]["parameters"]["g0"] = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", "did not converge"}};
  ps = agreed_parameters(r);
  CHECK(ps["g"]["source"] == "signature g");
}
