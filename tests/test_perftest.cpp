// perftest's interface: -a and its conflicts, --csv, `logpbench quick`'s command line, the tables on
// screen and as CSV, the progress line.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/options.hpp"
#include "app/progress.hpp"
#include "app/quick.hpp"
#include "common/results.hpp"
#include "methods/bell/options.hpp"
#include "methods/bw/bw.hpp"
#include "methods/pingpong/pingpong.hpp"
#include "methods/table.hpp"
#include "tests/parse_args.hpp"

using namespace logpb;
using namespace logpb::app;
using namespace logpb::methods;

using test::parse;
using test::refusal;

TEST_CASE("-a is perftest's every size 2 .. 2^23, and the segment grows so that 8 MiB fits half of it") {
  const Options o = parse({"--bench", "pingpong", "-a"});
  REQUIRE(o.sizes.size() == 23);
  CHECK(o.sizes.front() == 2);
  CHECK(o.sizes.back() == (1u << 23));
  for (std::size_t i = 1; i < o.sizes.size(); ++i) CHECK(o.sizes[i] == 2 * o.sizes[i - 1]);
  CHECK(o.segment_bytes / 2 >= o.sizes.back());
  CHECK(o.flags.at("all") == true);
  CHECK(parse({"--bench", "bw", "--all"}).sizes == all_sizes());
  CHECK(parse({"--bench", "flood", "-a"}).sizes == all_sizes());      // a method over sizes takes it too
  CHECK(parse({"--bench", "pingpong"}).segment_bytes == (1u << 20));  // unchanged without -a
}

TEST_CASE("-a is refused beside --sizes or -s, and for a method that is not over sizes") {
  CHECK_THAT(refusal({"--bench", "pingpong", "-a", "--sizes", "8,64"}), Catch::Contains("--sizes, not both"));
  CHECK_THAT(refusal({"--bench", "bw", "-a", "-s", "64"}), Catch::Contains("-s, not both"));
  CHECK_THAT(refusal({"--bench", "signature", "-a"}), Catch::Contains("not --bench signature"));
  CHECK_THAT(refusal({"--bench", "kielmann", "-a"}), Catch::Contains("not --bench kielmann"));
  CHECK_THAT(refusal({"--bench", "pairs", "-a"}), Catch::Contains("not --bench pairs"));
  CHECK_THAT(refusal({"--bench", "bw", "-s", "64", "--sizes", "8,64"}), Catch::Contains("-s is one size"));
  CHECK(refusal({"--bench", "bw", "-s", "64"}).empty());
  CHECK(refusal({"--bench", "pingpong", "--sizes", "8,64"}).empty());
}

TEST_CASE("bw's sizes: -a or --sizes, else -s, else its defaults; -n, else perftest's 5000") {
  Options o = parse({"--bench", "bw"});
  CHECK(methods::method::bw::sizes(o, 1 << 19) == methods::method::bw::default_sizes);
  CHECK(methods::method::bw::iterations(o) == 5000);
  o = parse({"--bench", "bw", "-s", "0", "-n", "300"});
  CHECK(methods::method::bw::sizes(o, 1 << 19) == std::vector<std::uint32_t>{0});
  CHECK(methods::method::bw::iterations(o) == 300);
  o = parse({"--bench", "bw", "--sizes", "8,16"});
  CHECK(methods::method::bw::sizes(o, 1 << 19) == std::vector<std::uint32_t>{8, 16});
  CHECK_THROWS_AS(methods::method::bw::sizes(parse({"--bench", "bw", "--sizes", "8,65536"}), 4096), UsageError);
}

TEST_CASE("--csv is recorded; logpbench quick is --bench quick with its own budgets") {
  CHECK(parse({"--csv", "x.csv"}).csv_path == "x.csv");
  const Options q = parse({"quick", "--transport", "shm"});
  CHECK(q.bench == "quick");
  CHECK(q.mode == "local");
  CHECK(parse({"quick", "local"}).bench == "quick");
  CHECK_THAT(refusal({"quick", "--bench", "pingpong"}), Catch::Contains("drop --bench"));
  CHECK_THAT(refusal({"quick", "-n", "5"}), Catch::Contains("own budgets"));
  CHECK_THAT(refusal({"quick", "-a"}), Catch::Contains("own budgets"));
  CHECK_THAT(refusal({"quick", "--runs", "2"}), Catch::Contains("own budgets"));
  // Any other command line passes unchanged.
  const char* argv[] = {"logpbench", "local", "--bench", "bw"};
  CHECK(command_args(4, argv) == std::vector<std::string>{"logpbench", "local", "--bench", "bw"});
}

TEST_CASE("logpbench agree is --bench agree: smaller defaults it records, --runs and --messages raise them") {
  const Options a = parse({"agree", "--transport", "shm"});
  CHECK(a.bench == "agree");
  CHECK(a.runs == 1);
  CHECK(a.get(methods::opt::kMessages) == 2000);
  CHECK(a.get(methods::opt::kBellRuns) == 3);
  const Options more = parse({"agree", "--runs", "3", "--messages", "10000", "--bell-runs", "5"});
  CHECK(more.runs == 3);
  CHECK(more.get(methods::opt::kMessages) == 10000);
  CHECK(more.get(methods::opt::kBellRuns) == 5);
  CHECK_THAT(refusal({"agree", "--bench", "kielmann"}), Catch::Contains("drop --bench"));
  for (const char* k : {"--sizes", "--eps", "--max-burst", "-n"})
    CHECK_THAT(refusal({"agree", k, "8"}), Catch::Contains("agree.budgets"));
  CHECK_THAT(refusal({"agree", "--no-saturation-compare"}), Catch::Contains("agree.budgets"));
  // The other methods keep the usual defaults.
  CHECK(parse({"--bench", "overlap"}).get(methods::opt::kMessages) == 10000);
}

TEST_CASE("tables: aligned on screen, CSV with quoting and full precision, null as n/a or empty") {
  Table t{"x", {"#bytes", "value", "note"}, {{2, 1.23456789, "a, \"b\""}, {4096, nullptr, "plain"}}, 2, {}, {}};
  const std::string csv = csv_text(t);
  CHECK(csv == "#bytes,value,note\n2,1.23456789,\"a, \"\"b\"\"\"\n4096,,plain\n");
  char buf[512] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  print_text(f, t);
  std::fclose(f);
  const std::string text = buf;
  CHECK_THAT(text, Catch::Contains("1.23"));
  CHECK_THAT(text, Catch::Contains("n/a"));
  CHECK_THAT(text, !Catch::Contains("1.2345"));
  // The pingpong table keeps perftest's header layout.
  const Table lat = methods::method::pingpong::latency_table({{"runs", nlohmann::json::array()}}, 8);
  std::FILE* g = fmemopen(buf, sizeof buf - 1, "w");
  print_text(g, lat);
  std::fclose(g);
  CHECK_THAT(std::string(buf),
             Catch::Contains("#bytes  #iterations t_min[usec]  t_max[usec]  t_typical[usec] t_avg[usec] "
                             "t_stdev[usec] 99% percentile[usec]   99.9% percentile[usec]"));
}

TEST_CASE("--csv writes every table of the run atomically, the first to FILE and any other beside it") {
  nlohmann::json doc = {{"meta", {{"flags", {{"bench", "signature"}}}}},
                        {"parameters",
                         {{"g", {{"value_ns", 1500.0}, {"ci95_ns", 20.0}}},
                          {"L", {{"value_ns", nullptr}, {"upper_bound_ns", 900.0}, {"error", "hidden"}}}}}};
  const std::string dir = "/tmp/logpb-csv-test-" + std::to_string(getpid());
  std::system(("mkdir -p " + dir).c_str());
  const auto files = write_csv(dir + "/sig.csv", doc);
  REQUIRE(files == std::vector<std::string>{dir + "/sig.csv"});
  std::ifstream in(files[0]);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_THAT(ss.str(), Catch::StartsWith("parameter,value,95% CI,runs min,runs max,unit,note\n"));
  CHECK_THAT(ss.str(), Catch::Contains("g,1.5,0.02,,,us,"));
  CHECK_THAT(ss.str(), Catch::Contains("L,,,,,us,hidden: at most 0.9 us; hidden"));
  doc["meta"]["flags"]["bench"] = "quick";
  doc["quick"] = {{"pingpong", {{"runs", nlohmann::json::array()}}},
                  {"bw", {{"bw", {{"per_size", nlohmann::json::array()}}}}}};
  CHECK(write_csv(dir + "/q.csv", doc) ==
        std::vector<std::string>{dir + "/q.csv", dir + "/q-latency.csv", dir + "/q-bw.csv"});
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("progress: percent done and time left on a terminal, nothing at all elsewhere") {
  CHECK(Progress::time_left(0.5, 0.5).empty());   // too early to tell
  CHECK(Progress::time_left(10, 0.005).empty());  // too little done
  CHECK(Progress::time_left(10, 0.5) == "about 10 s left");
  CHECK(Progress::time_left(60, 0.25) == "about 3 min 0 s left");
  CHECK(Progress::time_left(3600, 0.5) == "about 1 h 0 min left");
  char buf[512] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  Progress p(false, true, f);
  p.fraction(0.42);
  p("bw 64 B");
  CHECK_THAT(p.line(), Catch::Contains("42% done") && Catch::Contains("bw 64 B"));
  p.span(0.5, 1.0);
  p.fraction(0.5);
  CHECK_THAT(p.line(), Catch::Contains("75% done"));
  std::fflush(f);
  CHECK_THAT(std::string(buf), Catch::Contains("42% done"));
  std::fclose(f);
  char quiet[64] = {};
  std::FILE* g = fmemopen(quiet, sizeof quiet - 1, "w");
  Progress off(false, false, g);  // stderr is a pipe or a log
  off.fraction(0.5);
  off("step");
  off.done();
  std::fclose(g);
  CHECK(std::string(quiet).empty());
}
