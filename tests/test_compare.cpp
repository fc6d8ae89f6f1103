// `logpbench compare` (analysis/compare.hpp): interval arithmetic, null values, names, refusals, the
// line format. The documents here are small hand-written results in the shape the methods write (their
// numbers are arbitrary test inputs, not measurements); tests/e2e/compare.py compares real runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "methods/descriptor.hpp"

using nlohmann::json;
namespace cmp = logpb::analysis::compare;
namespace methods = logpb::methods;

namespace {

json result(const std::string& transport, const std::string& bench, json params, json extra = json::object()) {
  json d = {{"schema", "logpbench/1"},
            {"status", "complete"},
            {"meta",
             {{"host", "h"},
              {"cpu", "c"},
              {"version", "v"},
              {"flags", {{"transport", transport}, {"bench", bench}, {"window", 32}, {"json", "x.json"}}}}},
            {"parameters", params}};
  for (const auto& [k, v] : extra.items()) d[k] = v;
  return d;
}

json p(double v, double ci) { return {{"value_ns", v}, {"ci95_ns", ci}}; }

const cmp::Row& row(const cmp::Pair& pr, const std::string& label) {
  for (const auto& r : pr.rows)
    if (r.a.label == label) return r;
  FAIL("no row " << label);
  return pr.rows.front();
}

}  // namespace

TEST_CASE("compare: a difference's interval is the runs' half-widths in quadrature", "[compare]") {
  const auto d = cmp::difference(cmp::figure_of(p(312, 4)), cmp::figure_of(p(905, 11)), "raw", "mpi");
  REQUIRE(d.valid);
  CHECK(d.value == 593);
  CHECK(d.ci95 == Approx(std::sqrt(4.0 * 4 + 11 * 11)));
  // Other minus baseline: a faster second run is a negative "added".
  const auto n = cmp::difference(cmp::figure_of(p(905, 3)), cmp::figure_of(p(312, 4)), "a", "b");
  CHECK(n.value == -593);
  CHECK(n.ci95 == Approx(5));
  // A run without an interval: the value, and no invented interval.
  const auto u = cmp::difference(cmp::figure_of(json{{"value_ns", 10}}), cmp::figure_of(p(30, 2)), "a", "b");
  CHECK(u.valid);
  CHECK(u.value == 20);
  CHECK(std::isnan(u.ci95));
  CHECK(u.error.find("a gave none") != std::string::npos);
}

TEST_CASE("compare: a null value stays null, with its bound and reason, and its difference is n/a", "[compare]") {
  const json hidden = {{"value_ns", nullptr},
                       {"ci95_ns", nullptr},
                       {"upper_bound_ns", 1241.9},
                       {"error", "hidden: the flood runs at o_r"}};
  const auto h = cmp::figure_of(hidden);
  CHECK_FALSE(h.valid);
  CHECK(h.upper_bound == 1241.9);
  CHECK(cmp::format_figure(h, cmp::Unit::ns) == "hidden, at most 1241.9 ns (hidden: the flood runs at o_r)");
  const auto d = cmp::difference(cmp::figure_of(p(100, 1)), h, "raw", "mpi");
  CHECK_FALSE(d.valid);
  CHECK(d.error == "mpi has no value: hidden: the flood runs at o_r");
  CHECK(cmp::format_figure(d, cmp::Unit::ns) == "n/a (mpi has no value: hidden: the flood runs at o_r)");
  // NaN in JSON is null; a null without a bound is n/a, never 0.
  const auto z = cmp::figure_of(json{{"value_ns", nullptr}, {"error", "fewer than two sizes"}});
  CHECK(cmp::format_figure(z, cmp::Unit::ns_per_byte) == "n/a (fewer than two sizes)");

  const json a = result("shm", "flood", {{"g_ni", p(100, 1)}, {"o_s", p(50, 2)}});
  const json b = result("mpi", "flood", {{"g_ni", hidden}, {"o_s", p(80, 3)}});
  const auto pr = cmp::compare_pair(a, b, "raw", "mpi", methods::compare_reading);
  const auto line = cmp::format_line(pr, row(pr, "g_ni"));
  CHECK(line ==
        "raw-vs-mpi g_ni: raw 100.0 ± 1.0 ns, mpi hidden, at most 1241.9 ns (hidden: the flood runs at o_r), "
        "added n/a (mpi has no value: hidden: the flood runs at o_r)");
  CHECK(line.find("mpi 0") == std::string::npos);
  CHECK_FALSE(row(pr, "g_ni").resolved);
}

TEST_CASE("compare: the line format", "[compare]") {
  const json a = result("shm", "signature", {{"o_s", p(312, 4)}, {"G", p(0.25, 0.01)}});
  const json b = result("mpi", "signature", {{"o_s", p(905, 11)}, {"G", p(0.5, 0.02)}});
  const auto pr = cmp::compare_pair(a, b, "raw", "mpi", methods::compare_reading);
  CHECK(cmp::format_line(pr, row(pr, "o_s")) ==
        "raw-vs-mpi o_s: raw 312.0 ± 4.0 ns, mpi 905.0 ± 11.0 ns, added 593.0 ± 11.7 ns");
  CHECK(cmp::format_line(pr, row(pr, "G")) ==
        "raw-vs-mpi G: raw 0.2500 ± 0.0100 ns/B, mpi 0.5000 ± 0.0200 ns/B, added 0.2500 ± 0.0224 ns/B");
  CHECK(row(pr, "o_s").resolved);
}

TEST_CASE("compare: per-size figures are labelled by size and matched by size", "[compare]") {
  const json per_a = json::array({{{"bytes", 8}, {"g", p(100, 1)}}, {{"bytes", 4096}, {"g", p(400, 4)}}});
  const json per_b = json::array({{{"bytes", 4096}, {"g", p(700, 3)}}, {{"bytes", 65536}, {"g", p(900, 9)}}});
  const json a = result("shm", "flood", {{"g", p(100, 1)}}, {{"per_size", per_a}});
  const json b = result("mpi", "flood", {{"g", p(200, 1)}}, {{"per_size", per_b}});
  const auto pr = cmp::compare_pair(a, b, "raw", "mpi", methods::compare_reading);
  CHECK(cmp::format_line(pr, row(pr, "g(4096)")) ==
        "raw-vs-mpi g(4096): raw 400.0 ± 4.0 ns, mpi 700.0 ± 3.0 ns, added 300.0 ± 5.0 ns");
  CHECK(pr.only_a == std::vector<std::string>{"g(8)"});
  CHECK(pr.only_b == std::vector<std::string>{"g(65536)"});

  // Bulk: the round trip is T(n), and BW(n) = n / T(n) with T's interval carried over.
  const json bulk =
      result("shm", "bulk", {{"T0", p(1, 1)}},
             {{"per_size", json::array({{{"bytes", 1000}, {"rtt", p(2000, 100)}, {"bandwidth_bytes_per_ns", 0.5}}})}});
  const auto q = cmp::quantities(bulk, methods::compare_reading);
  bool t = false, bw = false;
  for (const auto& x : q) {
    if (x.label == "T(1000)") t = x.fig.value == 2000;
    if (x.label == "BW(1000)") {
      bw = x.unit == cmp::Unit::gb_per_s && x.fig.value == Approx(0.5) &&
           x.fig.ci95 == Approx(1000.0 * 100 / (2000.0 * 2000));
    }
  }
  CHECK(t);
  CHECK(bw);

  // Availability: a fraction, null with its reason when outside [0,1].
  const json av = result(
      "shm", "availability", {{"o_s", p(1, 1)}},
      {{"per_size",
        json::array(
            {{{"bytes", 64},
              {"o_s", p(10, 1)},
              {"send", {{"availability", 0.9}, {"availability_ci95", 0.02}}},
              {"recv", {{"availability", nullptr}, {"availability_error", "overhead exceeds the transfer time"}}}}})}});
  for (const auto& x : cmp::quantities(av, methods::compare_reading)) {
    if (x.label == "availability_send(64)") CHECK(cmp::format_figure(x.fig, x.unit) == "0.900 ± 0.020");
    if (x.label == "availability_recv(64)")
      CHECK(cmp::format_figure(x.fig, x.unit) == "n/a (overhead exceeds the transfer time)");
  }
}

TEST_CASE("compare: default names", "[compare]") {
  const json sig = json::object({{"o_s", p(1, 1)}});
  CHECK(cmp::default_names({result("shm", "signature", sig), result("mpi", "signature", sig)}) ==
        std::vector<std::string>{"shm", "mpi"});
  CHECK(cmp::default_names({result("shm", "signature", sig), result("shm", "flood", sig)}) ==
        std::vector<std::string>{"shm-signature", "shm-flood"});
  CHECK(cmp::default_names({result("shm", "signature", sig), result("shm", "signature", sig),
                            result("mpi", "flood", sig)}) == std::vector<std::string>{"A", "B", "C"});
  CHECK(cmp::parse_names("raw,mpi", 2) == std::vector<std::string>{"raw", "mpi"});
  CHECK_THROWS_WITH(cmp::parse_names("raw", 2), Catch::Contains("1 name(s) for 2 files"));
  CHECK_THROWS_WITH(cmp::parse_names("raw,raw", 2), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(cmp::parse_names("raw,", 2), Catch::Contains("empty name"));
  CHECK_THROWS_WITH(cmp::parse_names("raw,m pi", 2), Catch::Contains("space"));
}

TEST_CASE("compare: refusals", "[compare]") {
  CHECK_THROWS_AS(cmp::check_result(json::array(), "x"), cmp::Refused);
  CHECK_THROWS_WITH(cmp::check_result(json{{"schema", "logpbench-model/1"}}, "m.json"),
                    Catch::Contains("not a measured result"));
  CHECK_THROWS_WITH(cmp::check_result(json{{"schema", "other"}}, "o.json"), Catch::Contains("not a logpbench result"));
  CHECK_THROWS_WITH(cmp::check_result(json{{"schema", "logpbench/1"}, {"meta", json::object()}}, "p.json"),
                    Catch::Contains("without 'parameters'"));
  CHECK_NOTHROW(cmp::check_result(result("shm", "signature", json::object()), "ok.json"));
  // Different benches with nothing in common: refused; with something in common: compared, with a warning.
  const json pp = result("shm", "pingpong", {{"rtt", p(1000, 10)}});
  const json kto =
      result("shm", "k-to-one", json::object(),
             {{"per_k", json::array({{{"k", 1}, {"g", p(5, 1)}, {"ratio", {{"value", 1.0}, {"ci95", 0.1}}}}})}});
  CHECK_THROWS_WITH(cmp::compare_pair(pp, kto, "A", "B", methods::compare_reading),
                    Catch::Contains("share no parameter"));
  const json sig = result("shm", "signature", {{"rtt", p(900, 10)}});
  const auto pr = cmp::compare_pair(pp, sig, "A", "B", methods::compare_reading);
  CHECK(pr.rows.size() == 1);
  const auto w = cmp::knob_warnings({pp, sig}, {"A", "B"});
  REQUIRE(w.size() >= 2);
  bool bench = false, knob = false;
  for (const auto& s : w) {
    bench = bench || s.find("A ran pingpong, B ran signature") != std::string::npos;
    knob = knob || s.find("bench pingpong vs signature") != std::string::npos;
  }
  CHECK(bench);
  CHECK(knob);
}

TEST_CASE("compare: warnings name the knobs, host and CPU that differ, not the output paths", "[compare]") {
  json a = result("shm", "signature", {{"o_s", p(1, 1)}});
  json b = a;
  b["meta"]["flags"]["json"] = "other.json";  // where it was written: not a knob
  b["meta"]["flags"]["transport"] = "mpi";    // what is compared: named in every line instead
  CHECK(cmp::knob_warnings({a, b}, {"A", "B"}).empty());
  b["meta"]["flags"]["window"] = 8;
  b["meta"]["flags"]["emulate"] = "os=1.4us";
  b["meta"]["cpu"] = "another";
  b["status"] = "failed";
  const auto w = cmp::knob_warnings({a, b}, {"A", "B"});
  std::string all;
  for (const auto& s : w) all += s + "\n";
  CHECK(all.find("window 32 vs 8") != std::string::npos);
  CHECK(all.find("emulate (not set) vs os=1.4us") != std::string::npos);  // a run without emulation records no emulate
  CHECK(all.find("different cpu: 'c' vs 'another'") != std::string::npos);
  CHECK(all.find("B has status 'failed'") != std::string::npos);
}

TEST_CASE("compare: CSV quotes what needs quoting", "[compare]") {
  const json a = result(
      "shm", "flood", {{"g_ni", {{"value_ns", nullptr}, {"error", "hidden, \"behind\" o_r"}, {"upper_bound_ns", 5}}}});
  const json b = result("mpi", "flood", {{"g_ni", p(7, 1)}});
  const auto s = cmp::csv({cmp::compare_pair(a, b, "raw", "mpi", methods::compare_reading)});
  CHECK(s.find("baseline,other,quantity") == 0);
  CHECK(s.find("raw,mpi,g_ni,g_ni,,,ns,,,\"hidden, at most 5: hidden, \"\"behind\"\" o_r\",7,1,,,,") !=
        std::string::npos);
}

TEST_CASE("compare: each run's harness share is printed, and a difference between them is named", "[compare]") {
  auto with_harness = [](json d, double send, double recv) {
    d["meta"]["harness"] = {{"send_ns", p(send, 0.2)}, {"recv_ns", p(recv, 0.2)}};
    return d;
  };
  const json raw = with_harness(result("shm", "pingpong", {{"rtt", p(500, 10)}}), 8.1, 5.9);
  const json same = with_harness(result("mpi", "pingpong", {{"rtt", p(450, 10)}}), 8.4, 6.2);
  const json other = with_harness(result("mpi", "pingpong", {{"rtt", p(450, 10)}}), 20.0, 5.9);
  const json old = result("mpi", "pingpong", {{"rtt", p(450, 10)}});

  auto l = cmp::harness_lines({raw, same}, {"shm", "mpi"});
  REQUIRE(l.size() == 2);
  CHECK(l[0].find("harness shm:") == 0);
  CHECK(l[0].find("8.1 ns per send and 5.9 ns per receive") != std::string::npos);
  CHECK(l[1].find("harness mpi:") == 0);

  l = cmp::harness_lines({raw, other}, {"shm", "mpi"});
  REQUIRE(l.size() == 3);
  CHECK(l[2].find("differs by +11.9 ns per send and +0.0 ns per receive") != std::string::npos);

  l = cmp::harness_lines({raw, old}, {"shm", "mpi"});
  REQUIRE(l.size() == 2);
  CHECK(l[1].find("not recorded") != std::string::npos);
}
