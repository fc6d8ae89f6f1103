#include "app/job.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <thread>

#include "app/modes.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"

namespace logpb::app {
namespace {

std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> v;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) v.push_back(i);
  return v;
}

Ranks make_ranks(const Options& o) {
  if (o.mode == "local") return Ranks::local(o.ranks, o.connect_timeout_s);
  if (o.mode == "server") {
    std::fprintf(stderr, "logpbench server: %s, waiting for a client on TCP port %u\n", o.transport.c_str(), o.port);
    // No deadline for the client to come: a server waits (Ctrl-C ends it).
    Ranks r = Ranks::tcp_root(o.port, 2, 0);
    r.set_timeout(o.connect_timeout_s);
    return r;
  }
  if (o.mode == "client") return Ranks::tcp_member(o.host, o.port, 1, 2, o.connect_timeout_s);
  LaunchOptions lo;
  lo.rendezvous = o.rendezvous;
  lo.rendezvous_dir = o.rendezvous_dir;
  lo.timeout_s = o.connect_timeout_s;
  return Ranks::from_launcher(lo);
}

// The settings every rank must share, as the leader has them. Methods' own settings (sizes, stop rule)
// matter only where the method runs: on requesters, which in local and launched jobs share one command line.
nlohmann::json agreement(const Options& o, std::uint32_t session) {
  return {{"transport", o.transport}, {"bench", o.bench},       {"pairs_bench", o.pairs_bench},
          {"window", o.window},       {"credits", o.credits},   {"emulate", o.emulate_spec},
          {"ring", o.ring},           {"segment_bytes", o.segment_bytes}, {"session", session},
          {"ud", o.ud},               {"remote_read", run_needs(o.bench, o.pairs_bench).get}};
}

void apply_agreement(Options& o, const nlohmann::json& a, int leader) {
  if (a.at("transport").get<std::string>() != o.transport)
    throw UsageError("rank " + std::to_string(leader) + " runs --transport " + a.at("transport").get<std::string>() +
                     ", this rank --transport " + o.transport + ": every rank of a job must use the same");
  o.bench = a.at("bench").get<std::string>();
  o.pairs_bench = a.at("pairs_bench").get<std::string>();
  o.window = a.at("window").get<int>();
  o.credits = a.at("credits").get<int>();
  o.emulate_spec = a.at("emulate").get<std::string>();
  o.emulation = o.emulate_spec.empty() ? Emulation{} : parse_emulation(o.emulate_spec);
  o.ring = a.at("ring").get<int>();
  o.segment_bytes = a.at("segment_bytes").get<std::uint32_t>();
  o.ud = a.at("ud").get<bool>();
}

// This rank's core. local: --cpus by rank, else --cpu/--peer-cpu for a pair, else the r-th allowed core;
// server/client: --cpu; launched: --cpus by rank on this host, else the one core the launcher bound us
// to, else the host rank's allowed core.
int choose_core(const Options& o, int rank, int host_rank, int size) {
  const std::vector<int> allowed = allowed_cores();
  // pairs: requester r and its replier r + N/2 take neighbouring slots, so a pair never shares a core
  // while there are two to give it (N ranks on fewer cores: the lone pair still runs on two).
  if (o.bench == "pairs" && o.cpus.empty() && size >= 2 && host_rank == rank) {
    const int half = size / 2;
    rank = host_rank = rank < half ? 2 * rank : 2 * (rank - half) + 1;
  }
  if (allowed.empty()) throw std::runtime_error("sched_getaffinity found no core to run on");
  if (o.mode == "local") {
    if (!o.cpus.empty()) return o.cpus[static_cast<std::size_t>(rank) % o.cpus.size()];
    if (o.ranks == 2) return rank == 0 ? o.cpu : o.peer_cpu;
    return allowed[static_cast<std::size_t>(rank) % allowed.size()];
  }
  if (o.mode == "server" || o.mode == "client") return o.cpu;
  if (!o.cpus.empty()) return o.cpus[static_cast<std::size_t>(host_rank) % o.cpus.size()];
  if (allowed.size() == 1) return allowed[0];
  return allowed[static_cast<std::size_t>(host_rank) % allowed.size()];
}

// Rank 0 of a local job reaps its children: at the end they have left the last barrier and exit; on an
// error they are told (SIGTERM) and reaped, so no process outlives the job.
struct Children {
  const Ranks& ranks;
  bool ok = false;
  double timeout_s;
  ~Children() {
    const auto& pids = ranks.child_pids();
    if (pids.empty()) return;
    if (!ok)
      for (pid_t p : pids) kill(p, SIGTERM);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(ok ? timeout_s : 2.0);
    for (pid_t p : pids) {
      int st = 0;
      while (waitpid(p, &st, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > end) {
          kill(p, SIGKILL);
          waitpid(p, &st, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }
};

void run_transport(Job& job) {
  const std::string& t = job.o.transport;
  if (t == "shm") return run_shm(job);
#ifdef LOGPB_HAVE_DPDK
  if (t == "dpdk") return run_dpdk(job);
#endif
#ifdef LOGPB_HAVE_VERBS
  if (t == "verbs") return run_verbs(job);
#endif
  throw std::logic_error("--transport " + t + " does not run as a job yet");
}

}  // namespace

Role role_of(const Job& job) {
  const int n = job.ranks.size(), r = job.ranks.rank();
  Role role;
  if (job.o.bench == "pairs") {
    const int half = n / 2;
    role.requester = r < half;
    role.pair = r < half ? r : r - half;
    role.peer = r < half ? r + half : r - half;
    if (job.leader_rank != 0) {  // server/client: the client (rank 1) requests
      role.requester = r == job.leader_rank;
      role.peer = 1 - r;
      role.pair = 0;
    }
    return role;
  }
  role.requester = r == job.leader_rank;
  role.peer = r == job.leader_rank ? 1 - r : job.leader_rank;
  role.pair = 0;
  return role;
}

void run_job_main(Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress, RankKind& kind) {
  if (!o.mode_given && detect_launcher()) o.mode = "launched";
  if (o.mode == "local" && o.reflector) o.ranks = 1;  // the peer is a reflector, not a rank
  if (o.mode == "local")  // every rank's core checked before the fork: one clear error, not a child's
    for (int r = 0; r < o.ranks; ++r) check_cpu(choose_core(o, r, r, o.ranks), r == 0 ? "--cpu" : (o.cpus.empty() ? "--peer-cpu" : "--cpus"));
  Ranks ranks = make_ranks(o);
  const int leader = o.mode == "server" || o.mode == "client" ? 1 : 0;
  kind = ranks.rank() == leader ? RankKind::leader : (o.mode == "local" ? RankKind::local_child : RankKind::member);
  if (kind == RankKind::local_child) prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive rank 0
  if (kind != RankKind::leader) doc.path.clear();
  Children children{ranks, false, o.timeout_s + 5};
  try {
    const int n = ranks.size();
    if (o.bench == "pairs" && (n < 2 || n % 2 != 0))
      throw UsageError("--bench pairs needs an even number of ranks (half request, half reply), not " + std::to_string(n));
    if (o.bench != "pairs" && n != 2 && !(n == 1 && o.reflector))
      throw UsageError("--bench " + o.bench + " measures one pair: run 2 ranks (this job has " + std::to_string(n) +
                       "), or --bench pairs for many");

    // The settings, the hosts and cores: one allgather.
    const std::uint32_t session = new_session();
    nlohmann::json mine = {{"host", ranks.placement(-1).at("host")}};
    if (ranks.rank() == leader) mine["agreement"] = agreement(o, session);
    const nlohmann::json all = ranks.allgather(mine);
    const nlohmann::json& a = all.at(static_cast<std::size_t>(leader)).at("agreement");
    if (ranks.rank() != leader) apply_agreement(o, a, leader);
    std::map<std::string, int> per_host;
    int host_rank = 0;
    for (int r = 0; r < n; ++r) {
      const auto h = all[static_cast<std::size_t>(r)].at("host").get<std::string>();
      if (r == ranks.rank()) host_rank = per_host[h];
      ++per_host[h];
    }
    o.cpu = choose_core(o, ranks.rank(), host_rank, n);
    pin_to_cpu(o.cpu, "--cpu/--cpus");
    const nlohmann::json cores = ranks.allgather({{"host", mine["host"]}, {"cpu", o.cpu}});
    bool shared = false;
    std::map<std::pair<std::string, int>, int> used;
    for (const auto& c : cores)
      if (++used[{c.at("host").get<std::string>(), c.at("cpu").get<int>()}] > 1) shared = true;

    Job job{ranks, o, clock, doc, progress};
    job.session = a.at("session").get<std::uint32_t>();
    job.one_host = per_host.size() == 1;
    job.oversubscribed = shared;
    job.leader_rank = leader;
    if (shared && job.leader())
      std::fprintf(stderr, "logpbench: warning: %d ranks share cores on one host: waits yield the core, and the "
                           "figures are unfit for timing (recorded in meta.job)\n", n);
    if (job.leader()) {
      doc.j["meta"]["job"] = {{"launcher", ranks.launcher()},
                              {"mode", o.mode},
                              {"size", n},
                              {"leader_rank", leader},
                              {"hosts", per_host.size()},
                              {"oversubscribed", shared},
                              {"fit_for_timing", !shared},
                              {"waiting", shared ? "yields the core when idle (ranks share cores)" : "busy polling"}};
      if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
    }
    run_transport(job);
    if (job.leader()) {
      // Methods rebuild their checks; the job's own goes last.
      if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
      doc.j["checks"].push_back({{"name", "every rank had a core of its own"},
                                 {"ok", !shared},
                                 {"detail", shared ? std::to_string(n) + " ranks on fewer cores: a functional run, unfit for timing"
                                                   : "each rank pinned to its own core"}});
    }
    children.ok = true;
  } catch (const Interrupted&) {
    ranks.abort("interrupted");
    throw;
  } catch (const PeerError& e) {
    // Name the dead, when the bootstrap can tell (rank 0 sees every member; a member sees rank 0).
    std::string dead;
    for (int r : ranks.dead_ranks()) dead += (dead.empty() ? "rank " : ", ") + std::to_string(r);
    if (dead.empty() || std::string(e.what()).find("rank") != std::string::npos) throw;
    throw PeerError(dead + " died: " + e.what());
  } catch (const std::exception& e) {
    ranks.abort(std::string("rank ") + std::to_string(ranks.rank()) + ": " + e.what());
    throw;
  }
}

namespace detail {

void record_job(Job& job, const nlohmann::json& numa, const nlohmann::json& transport, const nlohmann::json& am) {
  nlohmann::json p = job.ranks.placement(job.o.cpu);
  if (!numa.is_null()) p["nic_numa"] = numa;
  const nlohmann::json all = job.ranks.allgather(p);
  if (!job.leader()) return;
  auto& m = job.doc.j["meta"];
  m["ranks"] = all;
  m["transport"] = transport;
  m["session"] = job.session;
  m["am"] = am;
  m["pinning"] = {{"cpus", nlohmann::json::array()}};
  for (const auto& r : all) m["pinning"]["cpus"].push_back(r.at("cpu"));
  if (!numa.is_null()) m["numa_placement"] = numa;
  job.doc.save();
}

}  // namespace detail

void summarize_pairs(Job& job, const nlohmann::json& records) {
  nlohmann::json alone, together = nlohmann::json::array();
  for (const auto& r : records) {
    if (r.contains("alone")) alone = r["alone"];
    if (r.contains("together")) together.push_back(r["together"]);
  }
  auto& d = job.doc.j;
  d["pairs"] = {{"method", job.o.pairs_bench},
                {"pairs", together.size()},
                {"alone", alone},
                {"together", together},
                {"reference", "Culler et al. 3.5: half of the ranks request, each from its own replier; in a scalable network "
                              "every pair sees the parameters of one pair alone"}};
  // The reference parameters are those of the lone pair; the spread says how far the pairs at once moved.
  d["parameters"] = alone.value("parameters", nlohmann::json::object());
  d["runs"] = alone.value("runs", nlohmann::json::array());
  nlohmann::json spread = nlohmann::json::object();
  nlohmann::json checks = alone.value("checks", nlohmann::json::array());
  bool agree = true;
  std::string worst;
  for (const auto& [name, ref] : d["parameters"].items()) {
    if (!ref.is_object() || !ref.contains("value_ns") || !ref["value_ns"].is_number()) continue;
    const double a = ref["value_ns"].get<double>();
    const double a_ci = ref.value("ci95_ns", 0.0);
    std::vector<double> v;
    double dev = 0;
    for (const auto& t : together) {
      const auto& p = t.value("parameters", nlohmann::json::object());
      if (!p.contains(name) || !p[name].contains("value_ns") || !p[name]["value_ns"].is_number()) continue;
      const double x = p[name]["value_ns"].get<double>();
      const double x_ci = p[name].value("ci95_ns", 0.0);
      v.push_back(x);
      if (a > 0) dev = std::max(dev, std::abs(x - a) / a);
      // "The same to two significant digits": within 5%, or within the two intervals together.
      if (std::abs(x - a) > std::max(0.05 * a, a_ci + x_ci)) {
        agree = false;
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s of pair %d: %.4g ns against %.4g ns alone", name.c_str(),
                      t.value("requester", -1), x, a);
        worst = buf;
      }
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    spread[name] = {{"alone_ns", a},
                    {"min_ns", v.front()},
                    {"median_ns", median_of(v)},
                    {"max_ns", v.back()},
                    {"max_relative_deviation", dev}};
  }
  d["pairs"]["spread"] = spread;
  std::string detail = agree ? "every pair's parameters within 5% (or the two 95% intervals) of the pair alone"
                             : "not the same as one pair alone: " + worst;
  if (job.oversubscribed) detail += " (ranks shared cores: unfit for timing)";
  checks.push_back({{"name", "pairs at once see the parameters of one pair alone (Culler 3.5)"},
                    {"ok", agree && !job.oversubscribed},
                    {"detail", detail}});
  d["checks"] = checks;
  job.doc.save();
}

}  // namespace logpb::app
