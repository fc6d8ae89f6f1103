// The methods' typed options (methods/method_option.hpp): read, checked and recorded from their declarations
// in the methods' folders, with the names, defaults and meta.flags entries the command line has always had.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app/options.hpp"
#include "methods/availability/options.hpp"
#include "methods/bell/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/kielmann/options.hpp"
#include "methods/signature/options.hpp"
#include "tests/parse_args.hpp"

using namespace logpb;
using namespace logpb::app;
using namespace logpb::methods;
namespace opt = logpb::methods::opt;

using test::parse;
using test::refusal;

TEST_CASE("typed method options: defaults, parsed values, and the same meta.flags as before") {
  // With no arguments at all the run is `logpbench agree`, whose budgets set their own; the defaults are these.
  const Options d = parse({"--bench", "signature"});
  CHECK(d.get(opt::kMaxBurst) == 512);
  CHECK(d.get(opt::kMaxBurstTime) == 0);  // auto
  CHECK(d.get(opt::kBursts).empty());
  CHECK(d.get(opt::kDeltas).empty());
  CHECK(d.get(opt::kDeltaFactors) == std::vector<double>{0.5, 1, 2, 4});
  CHECK(d.get(opt::kQueueDepth) == 8);
  CHECK(d.get(opt::kMessages) == 10000);
  CHECK(d.get(opt::kBellRuns) == 10);
  CHECK(d.get(opt::kEps) == 0.01);
  CHECK_FALSE(d.get(opt::kSaturationCompare));
  CHECK(d.get(opt::kBaseThreshold) == 1.03);
  CHECK(d.get(opt::kStopThreshold) == 1.5);
  // Recorded as Boost holds them: numbers as numbers, lists as given, unset lists and switches not at all.
  CHECK(d.flags.at("queue-depth") == 8);
  CHECK(d.flags.at("eps") == 0.01);
  CHECK(d.flags.at("max-burst-time") == "auto");
  CHECK_FALSE(d.flags.contains("bursts"));
  CHECK_FALSE(d.flags.contains("saturation-compare"));

  const Options o = parse({"--bench", "kielmann", "--max-burst-time", "1ms", "--bursts", "1,4", "--deltas", "0,2us",
                           "--delta-factors", "1,3", "--eps", "0.05", "--saturation-compare"});
  CHECK(o.get(opt::kMaxBurstTime) == 1e6);
  CHECK(o.get(opt::kBursts) == std::vector<int>{1, 4});
  CHECK(o.get(opt::kDeltas) == std::vector<double>{0, 2000});
  CHECK(o.get(opt::kDeltaFactors) == std::vector<double>{1, 3});
  CHECK(o.get(opt::kEps) == 0.05);
  CHECK(o.get(opt::kSaturationCompare));
  CHECK(o.flags.at("bursts") == "1,4");
  CHECK(parse({"--deltas", "auto"}).get(opt::kDeltas).empty());
}

TEST_CASE("typed method options: each check and its words, --stop-threshold against --base-threshold") {
  CHECK(refusal({"--eps", "0"}) == "--eps must be in [0.0001, 0.5]");
  CHECK(refusal({"--queue-depth", "0"}) == "--queue-depth must be in [1, 4096]");
  CHECK(refusal({"--bursts", "3,2"}) == "--bursts: values must be ascending");
  CHECK_THAT(refusal({"--deltas", "x"}), Catch::Contains("not a duration"));
  CHECK(refusal({"--deltas", "5us,2us"}) == "--deltas must be ascending non-negative durations");
  CHECK(refusal({"--max-burst-time", "0"}) == "--max-burst-time must be positive (or auto)");
  CHECK(refusal({"--delta-factors", "1,x"}) == "--delta-factors: 'x' is not a positive number");
  CHECK(refusal({"--base-threshold", "1.8", "--stop-threshold", "1.6"}) == "--stop-threshold must be in [1.8, 100]");
  CHECK(refusal({"--base-threshold", "1.2", "--stop-threshold", "1.3"}).empty());
  CHECK_THAT(refusal({"--saturation-compare", "--no-saturation-compare"}), Catch::Contains("contradict"));
}

TEST_CASE("typed method options: accepted with any method, listed by those that take them, set by budgets") {
  CHECK(refusal({"--bench", "pingpong", "--eps", "0.05"}).empty());
  CHECK(refusal({"--bench", "pairs", "--pairs-bench", "flood", "--messages", "2000"}).empty());
  auto takes = [](const char* bench, const char* option) {
    for (const auto& mo : find_method(bench)->options)
      if (std::string(mo.name) == option) return true;
    return false;
  };
  for (const char* b : {"flood", "overlap", "agree"}) CHECK(takes(b, "queue-depth"));
  for (const char* b : {"signature", "bulk"}) CHECK(takes(b, "max-burst"));
  CHECK(takes("kielmann", "eps"));
  CHECK(takes("availability", "stop-threshold"));
  CHECK_FALSE(takes("pingpong", "eps"));
  const Options a = parse({"--bench", "agree", "--queue-depth", "16"});
  CHECK(a.get(opt::kMessages) == 2000);  // agree's smaller default
  CHECK(a.get(opt::kQueueDepth) == 16);
}
