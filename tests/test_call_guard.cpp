// The guard on library calls that never return (common/call_guard.hpp): it ends the run only when the
// datapath is stuck inside one call and a peer is gone, and then leaves the results with status "failed".
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/call_guard.hpp"
#include "common/results.hpp"

using namespace logpb;
using namespace std::chrono_literals;

namespace {

struct Probe {
  std::atomic<bool> alive{true};
  std::atomic<int> fired{0};
  std::string message;  // written before fired is raised
};

CallGuard::Config config(Probe& p) {
  CallGuard::Config c;
  c.stuck_s = 0.2;
  c.check_s = 0.02;
  c.library = "the test's library";
  c.peers_alive = [&p] { return p.alive.load(); };
  c.fire = [&p](const std::string& m) {
    p.message = m;
    p.fired = 1;
  };
  return c;
}

// Waits up to `most` for the guard to fire; the bound is a functional deadline, far above stuck_s.
bool fired_within(Probe& p, std::chrono::milliseconds most) {
  const auto end = std::chrono::steady_clock::now() + most;
  while (std::chrono::steady_clock::now() < end)
    if (p.fired)
      return true;
    else
      std::this_thread::sleep_for(5ms);
  return p.fired != 0;
}

}  // namespace

TEST_CASE("call guard: a call stuck while a peer is gone ends the run, naming the call") {
  Probe p;
  CallGuard g;
  g.watch(config(p));
  p.alive = false;
  g.enter("fi_cq_read");
  REQUIRE(fired_within(p, 5000ms));
  g.leave();
  g.stop();
  CHECK(p.message.find("fi_cq_read") != std::string::npos);
  CHECK(p.message.find("the test's library") != std::string::npos);
  CHECK(p.message.rfind("peer lost", 0) == 0);
}

TEST_CASE("call guard: no end while the peer lives, outside a call, or while calls return") {
  Probe p;
  CallGuard g;
  g.watch(config(p));
  SECTION("a long call with every peer alive") {
    g.enter("fi_cq_read");
    std::this_thread::sleep_for(600ms);  // three times stuck_s
    g.leave();
  }
  SECTION("a peer gone, the datapath outside any call") {
    p.alive = false;
    std::this_thread::sleep_for(600ms);
  }
  SECTION("a peer gone, calls returning") {
    p.alive = false;
    const auto end = std::chrono::steady_clock::now() + 600ms;
    while (std::chrono::steady_clock::now() < end) {
      g.enter("fi_cq_read");
      std::this_thread::sleep_for(1ms);
      g.leave();
    }
  }
  g.stop();
  CHECK(p.fired == 0);
}

TEST_CASE("call guard: the default end exits 3 and leaves the last checkpoint with status failed") {
  char dir[] = "/tmp/logpb-guard-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/r.json";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: a run whose provider call never returns after its peer died
    Probe p;
    CallGuard::Config c = config(p);
    c.peers_alive = [] { return false; };
    c.fire = {};  // the default end
    CallGuard g;
    g.watch(std::move(c));
    nlohmann::json doc = {{"status", "running"}, {"runs", {1, 2}}};
    write_json_atomic(path, doc);
    stage_fault_record(path, doc);
    g.enter("fi_cq_read");
    std::this_thread::sleep_for(10s);  // the guard ends the process long before this
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  CHECK(doc["status"] == "failed");
  CHECK(doc["runs"].size() == 2);
  CHECK(doc["error"].get<std::string>().find("did not return from a call") != std::string::npos);
  std::remove(path.c_str());
  ::rmdir(dir);
}
