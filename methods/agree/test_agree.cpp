// methods/agree/analysis.hpp: the one LogP table. Each quantity is taken from the method that defines it and
// held against a second one; a relation broken beyond the tolerance and both intervals fails with its cause;
// a method whose own checks on the figure failed is unjudged; a figure a method cannot observe is a bound. The
// records are small hand-written ones in the shape the methods write (their numbers are test inputs, not
// measurements); tests/e2e/agree.py runs `logpbench agree` on emulated machines.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "methods/agree/analysis.hpp"

using logpb::methods::agreed_parameters;
using logpb::methods::agreement;
using nlohmann::json;

namespace {

json p(double v, double ci) { return {{"value_ns", v}, {"ci95_ns", ci}}; }

// Four methods on one link; each figure's value and interval given per method.
json records(double sig_g, double kiel_g0, double o_r_avail, double ci = 5) {
  return {{"signature",
           {{"parameters",
             {{"o_s", p(1050, ci)},
              {"o_s_plus_o_r", p(2230, ci)},
              {"g", p(sig_g, ci)},
              {"rtt", p(8400, ci)},
              {"L", p(2000, ci)}}}}},
          {"kielmann",
           {{"parameters",
             {{"o_s_0", p(1030, ci)},
              {"o_r_0", p(1210, ci)},
              {"o_s_plus_o_r", p(2240, ci)},
              {"g0", p(kiel_g0, ci)},
              {"rtt", p(8450, ci)},
              {"L", p(1980, ci)}}}}},
          {"overlap",
           {{"parameters", {{"o_s_completion", p(1060, ci)}, {"o_r_stream", p(1200, ci)}, {"rtt", p(8450, ci)}}},
            {"per_size", json::array({{{"bytes", 8}}})}}},
          {"availability", {{"parameters", {{"o_s_completion", p(1040, ci)}, {"o_r", p(o_r_avail, ci)}}}}}};
}

const json kTransport = {{"local_completion", "the send CQE of the operation's last WR"}};

}  // namespace

TEST_CASE("agree: each quantity from its defining method, every relation holding") {
  const json a = agreement(records(7600, 7500, 1240), kTransport, 0);
  for (const char* k : {"o_s", "o_s_completion", "o_r", "o_r_stream", "o_s_plus_o_r", "g", "rtt", "L"}) {
    INFO(k << ": " << a[k].dump());
    CHECK(a[k]["verdict"] == "agree");
  }
  CHECK(a["o_r"]["defined_by"]["method"] == "kielmann");
  CHECK(a["o_r"]["cross_check"]["method"] == "availability");
  CHECK(a["o_r"]["methods"]["availability"]["value_ns"] == 1240);
  CHECK(a["o_r"]["explanation"].get<std::string>().find("agree within 10%") == 0);
  CHECK(a["g"]["methods"]["kielmann"]["key"] == "g0");
  CHECK(a["g"]["cross_check"]["relation"] == "at_least");
  // The signature's o_s holds a poll more than Kielmann's send call: above it is no disagreement.
  json r = records(7600, 7500, 1240);
  r["signature"]["parameters"]["o_s"] = p(1500, 5);
  CHECK(agreement(r, kTransport, 0)["o_s"]["verdict"] == "agree");
  r["signature"]["parameters"]["o_s"] = p(800, 5);  // below the send call alone: LogP cannot have it
  CHECK(agreement(r, kTransport, 0)["o_s"]["verdict"] == "fail");
}

TEST_CASE("agree: two methods that time one receive and part fail, with the definitions as the cause") {
  const json a = agreement(records(7600, 7500, 2500), kTransport, 0);
  REQUIRE(a["o_r"]["verdict"] == "fail");
  CHECK(a["o_r"]["max_rel_diff"].get<double>() == Approx(1290.0 / 2500));
  const auto why = a["o_r"]["explanation"].get<std::string>();
  CHECK(why.find("differ by 52%") == 0);
  CHECK(why.find("Cause:") != std::string::npos);
  CHECK(why.find("after waiting Delta > RTT") != std::string::npos);  // Kielmann's definition
  // A cause the run measured is given instead of the definitions.
  json r = records(7600, 7500, 2500);
  r["kielmann"]["parameters"]["o_r_0"]["mechanism"] = "the poll that finds the reply also reaps 3 send completions";
  const auto measured = agreement(r, kTransport, 0)["o_r"]["explanation"].get<std::string>();
  CHECK(measured.find("Cause: kielmann: the poll that finds the reply also reaps 3 send completions") !=
        std::string::npos);
}

TEST_CASE("agree: a stream cheaper than one receive agrees; dearer fails") {
  json r = records(7600, 7500, 1240);
  r["overlap"]["parameters"]["o_r_stream"] = p(300, 5);  // four frames per poll share its fixed cost
  CHECK(agreement(r, kTransport, 0)["o_r_stream"]["verdict"] == "agree");
  r["overlap"]["parameters"]["o_r_stream"] = p(2000, 5);
  const json a = agreement(r, kTransport, 0);
  CHECK(a["o_r_stream"]["verdict"] == "fail");
  CHECK(a["o_r_stream"]["explanation"].get<std::string>().find("kielmann 1.210 us is below overlap 2.000 us") == 0);
}

TEST_CASE("agree: a difference the intervals cover is inconclusive") {
  // 1210 against 1400 is 14% apart; intervals of 100 each leave nothing beyond them.
  json r = records(7600, 7500, 1400, 100);
  const json a = agreement(r, kTransport, 0);
  CHECK(a["o_r"]["verdict"] == "inconclusive");
  CHECK(a["o_r"]["max_rel_diff_beyond_ci95"].get<double>() == Approx(0.0));
  CHECK(a["o_r"]["explanation"].get<std::string>().find("repeat with more --runs") != std::string::npos);
  // A wide interval never turns figures 10% apart into a failure.
  r["availability"]["parameters"]["o_r"] = p(1300, 5000);
  CHECK(agreement(r, kTransport, 0)["o_r"]["verdict"] == "agree");
}

TEST_CASE("agree: a method whose own checks on the figure failed is unjudged there") {
  json r = records(7600, 7500, 2500);
  r["availability"]["checks"] = json::array(
      {{{"name", "availability in [0,1] (recv 8 B)"}, {"ok", false}, {"about", {"availability"}}}});
  CHECK(agreement(r, kTransport, 0)["o_r"]["verdict"] == "fail");  // a check about another figure
  r["kielmann"]["checks"] = json::array({{{"name", "g(0) saturation converged"}, {"ok", false}}});
  const json a = agreement(r, kTransport, 0);
  CHECK(a["o_r"]["verdict"] == "unjudged");
  CHECK(a["o_r"]["explanation"].get<std::string>().find("kielmann: g(0) saturation converged") != std::string::npos);
  CHECK(a["o_r"]["methods"]["kielmann"]["failed_checks"][0] == "g(0) saturation converged");
  CHECK(a["o_s_completion"]["verdict"] == "agree");  // the other methods' figures are still judged
}

TEST_CASE("agree: a figure a method cannot observe is a bound, not a disagreement") {
  json r = records(2200, 1200, 1240);
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
  CHECK(why.find("kielmann g0 cannot be observed here (at most 1.300 us: hidden") != std::string::npos);
  // A negative figure is never a value.
  r["kielmann"]["parameters"]["L"] = {{"value_ns", -5.0}, {"ci95_ns", 1.0}};
  CHECK(agreement(r, kTransport, 0)["L"]["methods"]["kielmann"]["value_ns"].is_null());
}

TEST_CASE("agree: differences within the timer's own cost are no difference") {
  json r = records(52, 48, 30, 0.4);
  r["kielmann"]["parameters"]["o_r_0"] = p(10, 0.4);
  CHECK(agreement(r, kTransport, 0)["o_r"]["verdict"] == "fail");
  const json a = agreement(r, kTransport, 20);
  CHECK(a["o_r"]["verdict"] == "agree");
  CHECK(a["o_r"]["max_rel_diff"].get<double>() == Approx(20.0 / 30));  // the figures as measured
  CHECK(a["o_r"]["explanation"].get<std::string>().find("the timer's own cost (0.020 us)") != std::string::npos);
  CHECK(a["floor_ns"] == 20.0);
}

TEST_CASE("agree: the table's figures name their source and their cross-check") {
  json r = records(2200, 1200, 1240);
  const json a = agreement(r, kTransport, 0);
  json ps = agreed_parameters(r, a);
  CHECK(ps["o_s"]["source"] == "kielmann o_s_0");
  CHECK(ps["o_r"]["source"] == "kielmann o_r_0");
  CHECK(ps["o_r"]["cross_check"]["method"] == "availability");
  CHECK(ps["o_r"]["cross_check"]["verdict"] == "agree");
  CHECK(ps["o_s_plus_o_r"]["source"] == "signature o_s_plus_o_r");
  CHECK(ps["g"]["source"] == "kielmann g0");
  CHECK(ps["g"]["value_ns"] == 1200);
  // Where the defining method has no value, a cross-check of the same thing stands in, named as such; one
  // that only bounds it never does.
  r["kielmann"]["parameters"]["o_r_0"] = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", "lost"}};
  r["kielmann"]["parameters"]["g0"] = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", "did not converge"}};
  ps = agreed_parameters(r);
  CHECK(ps["o_r"]["source"].get<std::string>().find("availability o_r (the defining method, kielmann") == 0);
  CHECK(ps["g"]["source"] == "kielmann g0");
  CHECK(ps["g"]["value_ns"].is_null());
}

TEST_CASE("agree: a figure within one clock step of zero is a bound, in the table and its verdicts") {
  json r = records(7600, 7500, 1240);
  r["kielmann"]["parameters"]["o_s_0"] = p(10, 2);   // one step of a 10 ns clock
  r["signature"]["parameters"]["o_s"] = p(12, 5);  // its interval reaches past the step
  const json a = agreement(r, kTransport, 0, 0.10, 10.0);
  CHECK(a["o_s"]["verdict"] == "not compared");
  CHECK(a["o_s"]["methods"]["kielmann"]["value_ns"].is_null());
  CHECK(a["o_s"]["methods"]["kielmann"]["upper_bound_ns"].get<double>() == Approx(12));
  const json ps = agreed_parameters(r, a, 10.0);
  CHECK(ps["o_s"]["value_ns"].is_null());
  CHECK(ps["o_s"]["raw_value_ns"] == 10.0);
  CHECK(ps["o_r"]["value_ns"] == 1210);  // far from the step: unchanged
  // Without a step (an old record), nothing changes.
  CHECK(agreement(r, kTransport, 0)["o_s"]["methods"]["kielmann"]["value_ns"] == 10);
}

TEST_CASE("agree: the signature's round trip is Kielmann's plus the empty poll its request makes first") {
  // af_xdp as measured: Kielmann's RTT 7.9 us, the signature's 9.45 us, an empty poll 1.38 us (a system call).
  json r = records(7600, 7500, 1240);
  r["signature"]["parameters"]["rtt"] = p(9450, 50);
  r["kielmann"]["parameters"]["rtt"] = p(7900, 200);
  CHECK(agreement(r, kTransport, 0)["rtt"]["verdict"] == "fail");  // no poll phase: 16% apart, unexplained
  r["poll"] = {{"parameters", {{"poll_empty", p(1380, 20)}}}};
  const json a = agreement(r, kTransport, 0)["rtt"];
  INFO(a.dump());
  CHECK(a["verdict"] == "agree");
  CHECK(a["empty_poll_added_ns"] == 1380);
  CHECK(a["explanation"].get<std::string>().find("kielmann + an empty poll 9.280 us") != std::string::npos);
  CHECK(a["methods"]["kielmann"]["value_ns"] == 7900);  // the table shows each method's own figure
  r["poll"]["parameters"]["poll_empty"] = p(10, 2);     // an empty poll that explains nothing
  CHECK(agreement(r, kTransport, 0)["rtt"]["verdict"] == "fail");
}
