// Ranks over real sockets and real processes on 127.0.0.1: members are forked children (or threads where only
// the hello is under test), launcher environments are set with setenv inside the children, rendezvous files
// live in a fresh temporary directory. No timing assertions beyond generous deadlines.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/errors.hpp"
#include "common/ranks.hpp"

using namespace logpb;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

// Runs f in a forked child whose exit status is f's result; an exception is printed and exits 100. Children
// report through their exit status only: Catch's assertions belong to the parent.
pid_t spawn(const std::function<int()>& f) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "test child %d: %s\n", static_cast<int>(::getpid()), e.what());
      rc = 100;
    }
    std::fflush(nullptr);
    ::_exit(rc);
  }
  return pid;
}

// The child's exit status, or -signal; a child still running after `timeout_s` is killed and gives -999,
// so a hang fails the test instead of hanging the suite.
int reap(pid_t pid, double timeout_s = 15) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int st = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    if (r < 0) return -1000;
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -999;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void clear_launcher_env() {
  for (const char* n : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_NAMESPACE",
                        "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", "SLURM_PROCID", "SLURM_NTASKS",
                        "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID",
                        "SLURM_STEPID", "SLURM_CLUSTER_NAME", "SLURM_SUBMIT_DIR", "PMI_RANK", "PMI_SIZE"})
    ::unsetenv(n);
}

void set(const char* n, const std::string& v) { ::setenv(n, v.c_str(), 1); }

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "logpb-ranks-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  bool empty() const { return std::filesystem::is_empty(path); }
};

// What every rank of a launched job checks on its own: its rank and size, an allgather in rank order, barriers.
int check_job(Ranks& r, int rank, int size, const std::string& launcher) {
  if (r.rank() != rank || r.size() != size) return 2;
  if (r.launcher() != launcher) return 3;
  const json all = r.allgather(r.placement(-1));
  if (!all.is_array() || static_cast<int>(all.size()) != size) return 4;
  for (int i = 0; i < size; ++i)
    if (all[static_cast<std::size_t>(i)].value("rank", -1) != i) return 5;
  r.barrier();
  r.barrier();
  return 0;
}

}  // namespace

TEST_CASE("a single rank gathers, waits and broadcasts to itself", "[ranks]") {
  Ranks r = Ranks::single();
  CHECK(r.rank() == 0);
  CHECK(r.size() == 1);
  CHECK(r.launcher() == "local");
  CHECK(r.allgather(json{{"x", 1}}) == json::array({json{{"x", 1}}}));
  r.barrier();
  CHECK(r.broadcast(json{{"y", 2}}) == json{{"y", 2}});
  CHECK(r.all_alive());
  const json p = r.placement(0);
  CHECK(p.at("cpu") == 0);
  CHECK(p.at("pid") == static_cast<long>(::getpid()));
  CHECK(p.at("numa_node").is_number_integer());
  CHECK_FALSE(p.at("host").get<std::string>().empty());
}

TEST_CASE("a 4-rank tcp job agrees on size, gathers every rank's entry in order, and barriers repeatedly", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  std::vector<pid_t> kids;
  for (int r = 1; r < 4; ++r)
    kids.push_back(spawn([port, r] {
      Ranks m = Ranks::tcp_member("127.0.0.1", port, r, 4, 10, "job-A");
      if (m.rank() != r || m.size() != 4 || m.launcher() != "tcp") return 2;
      const json all = m.allgather(json{{"r", r}, {"sq", r * r}});
      if (all.size() != 4) return 3;
      for (int i = 0; i < 4; ++i)
        if (all[static_cast<std::size_t>(i)] != json{{"r", i}, {"sq", i * i}}) return 4;
      for (int i = 0; i < 25; ++i) m.barrier();
      if (m.broadcast(json("members' argument is ignored")) != json{{"plan", 7}}) return 5;
      m.allgather(m.placement(-1));
      m.barrier();
      return 0;
    }));
  Ranks root = Ranks::tcp_root(std::move(listener), 4, 10, "job-A");
  CHECK(root.rank() == 0);
  CHECK(root.size() == 4);
  CHECK(root.launcher() == "tcp");
  const json all = root.allgather(json{{"r", 0}, {"sq", 0}});
  REQUIRE(all.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(all[static_cast<std::size_t>(i)] == json{{"r", i}, {"sq", i * i}});
  for (int i = 0; i < 25; ++i) root.barrier();
  CHECK(root.broadcast(json{{"plan", 7}}) == json{{"plan", 7}});
  // meta.ranks as the lead will build it: one placement record per rank, in rank order.
  const json ranks = root.allgather(root.placement(0));
  REQUIRE(ranks.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(ranks[static_cast<std::size_t>(i)].at("rank") == i);
    CHECK(ranks[static_cast<std::size_t>(i)].at("numa_node").is_number_integer());
  }
  for (int i = 1; i < 4; ++i)
    CHECK(ranks[static_cast<std::size_t>(i)].at("pid") == static_cast<long>(kids[static_cast<std::size_t>(i - 1)]));
  CHECK(ranks[0].at("cpu") == 0);
  CHECK(ranks[1].at("cpu") == -1);
  CHECK(root.all_alive());
  root.barrier();
  for (pid_t k : kids) CHECK(reap(k) == 0);
}

TEST_CASE("local -N forks ranks joined by socketpairs", "[ranks]") {
  Ranks r = Ranks::local(3, 10);
  if (r.rank() != 0) {
    int rc = 1;
    try {
      rc = check_job(r, r.rank(), 3, "local");
    } catch (...) {
      rc = 100;
    }
    ::_exit(rc);  // a child never returns into the test runner
  }
  REQUIRE(r.child_pids().size() == 2);
  CHECK(check_job(r, 0, 3, "local") == 0);
  for (pid_t k : r.child_pids()) CHECK(reap(k) == 0);
}

TEST_CASE("rank 0 refuses a bad hello with its reason and still forms the job", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  auto root =
      std::async(std::launch::async, [&listener] { return Ranks::tcp_root(std::move(listener), 3, 10, "job-B"); });
  auto refusal = [port](int rank, int size, const std::string& key) -> std::string {
    try {
      Ranks::tcp_member("127.0.0.1", port, rank, size, 10, key);
      return "accepted";
    } catch (const UsageError& e) {
      return e.what();
    }
  };
  const std::string size_mismatch = refusal(2, 4, "job-B");
  CHECK_THAT(size_mismatch, Contains("refused rank 2") && Contains("job of 4 ranks") && Contains("for 3"));
  const std::string foreign = refusal(2, 3, "job-Z");
  CHECK_THAT(foreign, Contains("refused rank 2") && Contains("job key 'job-Z'") && Contains("'job-B'"));
  // Hellos no logpbench member would send, on a raw channel: another protocol, a rank of the wrong type.
  auto raw = [port](const json& hello) {
    Channel ch = Channel::connect_to("127.0.0.1", port, 5);
    ch.send(hello);
    return ch.receive(5);
  };
  const json other_proto = raw({{"op", "hello"}, {"proto", 99}, {"rank", 2}, {"size", 3}, {"job", "job-B"}});
  CHECK(other_proto.at("op") == "refused");
  CHECK_THAT(other_proto.at("reason").get<std::string>(), Contains("protocol 99"));
  const json bad_rank =
      raw({{"op", "hello"}, {"proto", kRanksProtocol}, {"rank", "two"}, {"size", 3}, {"job", "job-B"}});
  CHECK(bad_rank.at("op") == "refused");
  CHECK_THAT(bad_rank.at("reason").get<std::string>(), Contains("outside 1..2"));
  // Out of range is refused by the member itself, before it connects.
  CHECK_THROWS_AS(Ranks::tcp_member("127.0.0.1", port, 3, 3, 10, "job-B"), UsageError);
  CHECK_THROWS_AS(Ranks::tcp_member("127.0.0.1", port, 0, 3, 10, "job-B"), UsageError);

  // Two processes claim rank 1: whichever comes second is refused at once, the first waits for the job.
  auto member1 = [port]() -> std::variant<Ranks, std::string> {
    try {
      return Ranks::tcp_member("127.0.0.1", port, 1, 3, 10, "job-B");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
  };
  auto a = std::async(std::launch::async, member1);
  auto b = std::async(std::launch::async, member1);
  // Rank 2 joins only after the duplicate was refused: otherwise the job could complete first, and the second
  // rank 1 would find the listener closed instead of being refused.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (a.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready &&
         b.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < end) {
  }
  Ranks two = Ranks::tcp_member("127.0.0.1", port, 2, 3, 10, "job-B");
  Ranks zero = root.get();
  auto ra = a.get();
  auto rb = b.get();
  REQUIRE(ra.index() + rb.index() == 1);  // exactly one joined, one was refused
  auto& refused = std::get<std::string>(ra.index() == 1 ? ra : rb);
  auto& one = std::get<Ranks>(ra.index() == 0 ? ra : rb);
  CHECK_THAT(refused, Contains("refused rank 1") && Contains("already joined"));

  // The job works: a gather across the three.
  auto g1 = std::async(std::launch::async, [&one] { return one.allgather(1); });
  auto g2 = std::async(std::launch::async, [&two] { return two.allgather(2); });
  CHECK(zero.allgather(0) == json::array({0, 1, 2}));
  CHECK(g1.get() == json::array({0, 1, 2}));
  CHECK(g2.get() == json::array({0, 1, 2}));
}

TEST_CASE("rank 0 that never completes its job names the refusals in its error", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  auto stray = std::async(std::launch::async, [port] {
    try {
      Ranks::tcp_member("127.0.0.1", port, 1, 2, 5, "other-job");
    } catch (const std::exception&) {
    }
  });
  try {
    Ranks::tcp_root(std::move(listener), 2, 1.0, "job-C");
    FAIL("rank 0 formed a job without its member");
  } catch (const PeerError& e) {
    CHECK_THAT(std::string(e.what()),
               Contains("missing rank(s) 1") && Contains("refused") && Contains("job key 'other-job'"));
  }
  stray.get();
}

TEST_CASE("a member killed mid-allgather makes rank 0 and the others throw PeerError naming it", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  const pid_t survivor = spawn([port] {
    Ranks m = Ranks::tcp_member("127.0.0.1", port, 1, 3, 30, "job-D");
    m.barrier();
    try {
      m.allgather(1);
      return 10;
    } catch (const PeerError& e) {
      // Rank 0 relays why the job ended: the survivor learns which rank died, well before its 30 s deadline.
      return std::string(e.what()).find("rank 2") != std::string::npos ? 0 : 11;
    }
  });
  const pid_t victim = spawn([port] {
    Ranks m = Ranks::tcp_member("127.0.0.1", port, 2, 3, 30, "job-D");
    m.barrier();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0 and rank 1 are in the allgather by now
    ::raise(SIGKILL);
    return 1;
  });
  Ranks root = Ranks::tcp_root(std::move(listener), 3, 30, "job-D");
  root.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    root.allgather(0);
    FAIL("the allgather completed without rank 2");
  } catch (const PeerError& e) {
    CHECK_THAT(std::string(e.what()), Contains("rank 2") && Contains("died during allgather"));
  }
  // The deadline was 30 s: noticing within a few seconds means the death was seen, not the deadline.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(reap(victim) == -SIGKILL);
  CHECK(reap(survivor) == 0);
  CHECK_FALSE(root.all_alive());
  const auto dead = root.dead_ranks();
  CHECK(std::find(dead.begin(), dead.end(), 2) != dead.end());
  // Broken from now on: no collective waits again.
  CHECK_THROWS_WITH(root.barrier(), Contains("the job has ended") && Contains("rank 2"));
}

TEST_CASE("a member whose rank 0 dies throws PeerError naming rank 0", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  const pid_t root = spawn([&listener] {
    Ranks r = Ranks::tcp_root(std::move(listener), 2, 10, "job-E");
    ::raise(SIGKILL);
    return 1;
  });
  // The child holds the listener now; the parent's copy must not keep accepting connections.
  { RanksListener drop = std::move(listener); }
  Ranks m = Ranks::tcp_member("127.0.0.1", port, 1, 2, 30, "job-E");
  CHECK_THROWS_WITH(m.barrier(), Contains("rank 0") && Contains("died"));
  CHECK(reap(root) == -SIGKILL);
  CHECK_FALSE(m.all_alive());
  CHECK(m.dead_ranks() == std::vector<int>{0});
}

TEST_CASE("from_launcher forms a 3-rank job from Slurm, Open MPI and PMI environments", "[ranks]") {
  const std::string tag = std::to_string(::getpid());
  struct Flavor {
    std::string name, launcher;
    std::function<void(int rank, const std::string& dir)> env;
    bool dir_option;  // the directory as an option (else Slurm's SLURM_SUBMIT_DIR default)
    std::string job_id;
  };
  const std::vector<Flavor> flavors{
      {"slurm", "srun",
       [&](int r, const std::string& dir) {
         set("SLURM_PROCID", std::to_string(r));
         set("SLURM_NTASKS", "3");
         set("SLURM_JOB_ID", tag);
         set("SLURM_STEP_ID", "0");
         set("SLURM_SUBMIT_DIR", dir);
       },
       false, ""},
      // mpirun inside a Slurm allocation: the allocation's SLURM_* must not win over Open MPI's variables.
      {"ompi", "mpirun",
       [&](int r, const std::string&) {
         set("OMPI_COMM_WORLD_RANK", std::to_string(r));
         set("OMPI_COMM_WORLD_SIZE", "3");
         set("PMIX_RANK", std::to_string(r));
         set("PMIX_NAMESPACE", "prterun-test-" + tag + "@1");
         set("SLURM_PROCID", "0");
         set("SLURM_NTASKS", "8");
         set("SLURM_JOB_ID", "99");
       },
       true, ""},
      {"pmi", "pmi",
       [&](int r, const std::string&) {
         set("PMI_RANK", std::to_string(r));
         set("PMI_SIZE", "3");
       },
       true, "pmi-" + tag},
  };
  for (const auto& f : flavors) {
    SECTION(f.name) {
      TempDir dir;
      std::vector<pid_t> kids;
      // Members first: they must wait for the file rank 0 has not written yet.
      for (int r : {2, 1, 0})
        kids.push_back(spawn([&, r] {
          clear_launcher_env();
          f.env(r, dir.path.string());
          LaunchOptions o;
          if (f.dir_option) o.rendezvous_dir = dir.path.string();
          o.job_id = f.job_id;
          o.timeout_s = 10;
          Ranks j = Ranks::from_launcher(o);
          return check_job(j, r, 3, f.launcher);
        }));
      for (pid_t k : kids) CHECK(reap(k) == 0);
      CHECK(dir.empty());  // the rendezvous file (and its temporary) removed
    }
  }
}

TEST_CASE("from_launcher with an explicit rendezvous address needs no file", "[ranks]") {
  std::uint16_t port;
  { port = RanksListener(0).port(); }  // a port that was free a moment ago; rank 0 binds it again
  const std::string where = "127.0.0.1:" + std::to_string(port);
  std::vector<pid_t> kids;
  for (int r : {1, 2, 0})
    kids.push_back(spawn([&, r] {
      clear_launcher_env();
      set("SLURM_PROCID", std::to_string(r));
      set("SLURM_STEP_NUM_TASKS", "3");
      set("SLURM_NTASKS", "5");  // the step's own count wins over the allocation's
      set("SLURM_JOB_ID", "123");
      LaunchOptions o;
      o.rendezvous = where;
      o.rendezvous_dir = "/nonexistent-must-not-be-used";
      o.timeout_s = 10;
      Ranks j = Ranks::from_launcher(o);
      return check_job(j, r, 3, "srun");
    }));
  for (pid_t k : kids) CHECK(reap(k) == 0);
}

TEST_CASE("a stale rendezvous file from an earlier job is not trusted", "[ranks]") {
  TempDir dir;
  const auto file = dir.path / "logpbench-rendezvous-srun-777.3.json";
  // A decoy where the stale file points: a listener that never accepts. A member that trusted the file would
  // land in its backlog, which the kernel fills without accept().
  RanksListener decoy(0);
  {
    std::ofstream o(file);
    o << json{{"job", "srun||777.3|5"}, {"proto", kRanksProtocol}, {"host", "127.0.0.1"},
              {"addrs", json::array()}, {"port", decoy.port()},    {"pid", 1}}
             .dump();
  }
  auto env = [&](int r) {
    clear_launcher_env();
    set("SLURM_PROCID", std::to_string(r));
    set("SLURM_NTASKS", "3");
    set("SLURM_JOB_ID", "777");
    set("SLURM_STEP_ID", "3");
  };
  // Alone, a member gives up at its deadline and says why.
  const pid_t lone = spawn([&] {
    env(1);
    LaunchOptions o;
    o.rendezvous_dir = dir.path.string();
    o.timeout_s = 1;
    try {
      Ranks::from_launcher(o);
      return 10;
    } catch (const PeerError& e) {
      const std::string w = e.what();
      std::fprintf(stderr, "(expected) %s\n", w.c_str());
      return w.find("not trusted") != std::string::npos && w.find(file.string()) != std::string::npos ? 0 : 11;
    }
  });
  CHECK(reap(lone) == 0);
  // With rank 0 started last, the members wait past the stale file until rank 0 replaces it.
  std::vector<pid_t> kids;
  for (int r : {1, 2, 0})
    kids.push_back(spawn([&, r] {
      env(r);
      LaunchOptions o;
      o.rendezvous_dir = dir.path.string();
      o.timeout_s = 10;
      if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Ranks j = Ranks::from_launcher(o);
      return check_job(j, r, 3, "srun");
    }));
  for (pid_t k : kids) CHECK(reap(k) == 0);
  pollfd p{decoy.fd(), POLLIN, 0};
  CHECK(::poll(&p, 1, 0) == 0);  // nobody connected to the stale address
  CHECK(dir.empty());
}

TEST_CASE("launcher variables that are missing or inconsistent are named in the error", "[ranks]") {
  auto error_of = [](const std::function<void()>& set_env) {
    // In a child, so that the test runner's own environment is untouched; the message comes back on a pipe.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = spawn([&] {
      ::close(fds[0]);
      clear_launcher_env();
      set_env();
      std::string msg = "no error";
      try {
        Ranks::from_launcher(LaunchOptions{});
      } catch (const UsageError& e) {
        msg = e.what();
      }
      (void)!::write(fds[1], msg.data(), msg.size());
      return 0;
    });
    ::close(fds[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    CHECK(reap(pid) == 0);
    return msg;
  };
  CHECK_THAT(error_of([] {}), Contains("no launcher found"));
  CHECK_THAT(error_of([] {
               set("SLURM_PROCID", "5");
               set("SLURM_NTASKS", "3");
               set("SLURM_JOB_ID", "1");
             }),
             Contains("rank 5 of 3") && Contains("SLURM_PROCID=5"));
  CHECK_THAT(error_of([] { set("OMPI_COMM_WORLD_RANK", "1"); }), Contains("OMPI_COMM_WORLD_SIZE is not"));
  CHECK_THAT(error_of([] {
               set("OMPI_COMM_WORLD_RANK", "1");
               set("OMPI_COMM_WORLD_SIZE", "2");
               set("PMIX_RANK", "0");
               set("PMIX_NAMESPACE", "x");
             }),
             Contains("disagree"));
  CHECK_THAT(error_of([] {
               set("PMI_RANK", "1");
               set("PMI_SIZE", "2");
             }),
             Contains("names no job"));
  CHECK_THAT(error_of([] { set("SLURM_PROCID", "x"); }), Contains("SLURM_PROCID='x'") || Contains("SLURM_NTASKS"));
}

TEST_CASE("a signal ends a wait with Interrupted, and rank 0 hears why", "[ranks]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  const pid_t member = spawn([port] {
    Ranks m = Ranks::tcp_member("127.0.0.1", port, 1, 2, 30, "job-F");
    // What main()'s SIGINT handler does, a moment into a barrier rank 0 will not join.
    std::thread t([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      interrupt_signal().store(SIGINT);
    });
    int rc = 10;
    try {
      m.barrier();
    } catch (const Interrupted&) {
      rc = 0;
    }
    t.join();
    return rc;
  });
  Ranks root = Ranks::tcp_root(std::move(listener), 2, 30, "job-F");
  CHECK(reap(member) == 0);
  // Rank 1 had sent its part of the barrier before the signal, so rank 0 may complete that barrier; the abort
  // rank 1 sent after it is read at the next collective at the latest.
  try {
    root.barrier();
    root.barrier();
    FAIL("rank 0 kept going after rank 1 ended the job");
  } catch (const PeerError& e) {
    CHECK_THAT(std::string(e.what()), Contains("rank 1 ended the job") && Contains("interrupted"));
  }
}
