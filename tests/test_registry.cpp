// The method registry (methods/descriptor.hpp): the catalogue every consumer reads, and the one repetition loop
// driving registered methods over a real shm link (the replier on a thread).
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include "app/bench_runner.hpp"
#include "shm/transport.hpp"

using namespace logpb;
using namespace logpb::app;
using namespace logpb::methods;

TEST_CASE("the catalogue lists every method once, with what --help, the report and the plots need") {
  const auto& all = all_methods();
  REQUIRE(all.size() >= 8);
  std::set<std::string> names;
  for (const auto& m : all) {
    CHECK(names.insert(m.name).second);
    CHECK_FALSE(m.summary.empty());
    CHECK(find_method(m.name) == &m);
    CHECK(std::is_sorted(m.default_sizes.begin(), m.default_sizes.end()));
    if (!m.default_sizes.empty()) CHECK(m.needs.bulk);  // sizes above 0 are bulk stores
    if (m.needs.get) CHECK(m.needs.bulk);
    // A method taking --max-burst-time caps its bursts, and the core probe must read what its auto value needs.
    const bool takes_cap = std::any_of(m.options.begin(), m.options.end(), [](const MethodOption& x) {
      return std::string(x.name) == opt::kMaxBurstTime.name;
    });
    if (takes_cap) CHECK(m.burst_cap);
  }
  CHECK(run_caps_bursts(*find_method("quick"), {}));
  CHECK_FALSE(run_caps_bursts(*find_method("kielmann"), {}));
  CHECK(run_caps_bursts(*find_method("pairs"), {{"pairs-bench", "signature"}}));
  CHECK_FALSE(run_caps_bursts(*find_method("pairs"), {{"pairs-bench", "pingpong"}}));
  for (const char* n : {"pingpong", "signature", "verify", "bulk", "flood", "overlap", "kielmann", "availability"}) {
    REQUIRE(find_method(n));
    CHECK(find_method(n)->scope == Scope::link);
  }
  REQUIRE(find_method("pairs"));
  CHECK(find_method("pairs")->scope == Scope::job);
  CHECK(find_method("nope") == nullptr);
  CHECK(find_method("flood")->needs.local_completion);
  CHECK(find_method("verify")->print != nullptr);
  CHECK(method_names(", ", " or ").find(" or ") != std::string::npos);
  for (const auto& m : all) CHECK(bench_help().find(m.name) != std::string::npos);
}

TEST_CASE("with_method hands over the descriptor type named") {
  std::string seen;
  CHECK(with_method("kielmann", [&]<class M>() { seen = M::name; }));
  CHECK(seen == "kielmann");
  CHECK_FALSE(with_method("nope", [&]<class M>() { seen = "wrong"; }));
  CHECK(seen == "kielmann");
}

TEST_CASE("sizes: --sizes, else the method's defaults that fit; too large is refused") {
  const MethodInfo& flood = *find_method("flood");
  CHECK(method_sizes(flood.default_sizes, {16, 32}, 1 << 15) == std::vector<std::uint32_t>{16, 32});
  const auto d = method_sizes(flood.default_sizes, {}, 4096);
  REQUIRE_FALSE(d.empty());
  CHECK(d.back() <= 4096);
  CHECK_THROWS_AS(method_sizes(flood.default_sizes, {8, 1 << 20}, 1 << 15), UsageError);
}

namespace {

using Shm = shm::ShmTransport<shm::Wire>;
using EP = am::Endpoint<Shm>;

const Clock& test_clock() {
  static const Clock c;
  return c;
}

am::EndpointOptions ep_options(int rank) {
  am::EndpointOptions o;
  o.session = 77;
  o.rank = rank;
  o.size = 2;
  o.window = 8;
  o.stall_timeout_s = rank == 0 ? 10 : 0;
  o.segment_bytes = 1 << 16;
  return o;
}

// A client endpoint and a replier serving on a thread, over one shm region; the client quits on the way out.
struct Link {
  shm::ShmRegion region = shm::ShmRegion::create_anonymous(2, {64, 1 << 16});
  std::unique_ptr<Shm> a, b;
  std::unique_ptr<EP> client, server;
  std::thread srv;
  Link() {
    auto fb = std::async(std::launch::async, [&] {
      return std::make_unique<Shm>(region, 1, test_clock(), shm::Emulation{}, shm::ShmOptions{}, 5);
    });
    a = std::make_unique<Shm>(region, 0, test_clock(), shm::Emulation{}, shm::ShmOptions{}, 5);
    b = fb.get();
    client = std::make_unique<EP>(*a, test_clock(), ep_options(0));
    server = std::make_unique<EP>(*b, test_clock(), ep_options(1));
    srv = std::thread([this] { methods::serve(*server); });
  }
  ~Link() {
    client->request(1, methods::kQuit);
    srv.join();
  }
};

Options small(const std::string& bench, int runs) {
  Options o;
  o.bench = bench;
  o.runs = runs;
  o.iterations = 300;
  o.warmup = 20;
  o.segment_bytes = 1 << 16;
  return o;
}

}  // namespace

TEST_CASE("--runs repeats any method through the one loop: pingpong") {
  Link l;
  ResultsDoc doc;
  Progress quiet(true);
  run_client_bench<methods::method::pingpong>(*l.client, 1, test_clock(), small("pingpong", 3), doc, quiet);
  REQUIRE(doc.j["runs"].size() == 3);
  for (const auto& r : doc.j["runs"]) CHECK(r["rtt"]["summary"]["n"].get<int>() == 300);
  const auto& rtt = doc.j["parameters"]["rtt"];
  REQUIRE(rtt["value_ns"].is_number());
  CHECK(rtt["value_ns"].get<double>() > 0);
  CHECK(rtt["runs_ns"].size() == 3);
  CHECK(doc.j["meta"]["method"]["name"] == "pingpong");
  CHECK(doc.j["meta"]["method"]["plot"] == "rtt");
  CHECK(doc.j["meta"]["am"].contains("counters"));
}

TEST_CASE("--runs repeats the self-check too, and every run's cases are recorded") {
  Link l;
  ResultsDoc doc;
  Progress quiet(true);
  run_client_bench<methods::method::verify>(*l.client, 1, test_clock(), small("verify", 2), doc, quiet);
  REQUIRE(doc.j["runs"].size() == 2);
  for (const auto& r : doc.j["runs"]) {
    REQUIRE_FALSE(r["verify"].empty());
    for (const auto& c : r["verify"]) CHECK((c["store_ok"].get<bool>() && c["get_ok"].get<bool>()));
  }
  REQUIRE(doc.j["checks"].size() == 1);
  CHECK(doc.j["checks"][0]["ok"].get<bool>());
}

TEST_CASE("a job-level method is refused on one link") {
  Link l;
  ResultsDoc doc;
  Progress quiet(true);
  CHECK_THROWS_WITH(run_client_bench<methods::method::pairs>(*l.client, 1, test_clock(), small("pairs", 1), doc, quiet),
                    Catch::Contains("runs on the whole job"));
}
