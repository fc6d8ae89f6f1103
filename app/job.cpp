#include "app/job.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "common/cpu.hpp"
#include "common/disturbance.hpp"
#include "common/errors.hpp"
#include "common/host_check.hpp"

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
  return {{"transport", o.transport},
          {"bench", o.bench},
          {"method_args", o.method_args},
          {"window", o.window},
          {"credits", o.credits},
          {"emulate", o.emulate_spec},
          {"ring", o.ring},
          {"segment_bytes", o.segment_bytes},
          {"session", session},
          {"ud", o.ud},
          {"mtu", o.mtu}};  // what the bench needs (e.g. remote reads) follows from the agreed bench on every rank
}

void apply_agreement(Options& o, const nlohmann::json& a, int leader) {
  if (a.at("transport").get<std::string>() != o.transport)
    throw UsageError("rank " + std::to_string(leader) + " runs --transport " + a.at("transport").get<std::string>() +
                     ", this rank --transport " + o.transport + ": every rank of a job must use the same");
  o.bench = a.at("bench").get<std::string>();
  o.method = methods::find_method(o.bench);  // the leader's method, checked there: in every build's catalogue
  if (!o.method) throw UsageError("rank " + std::to_string(leader) + " runs --bench " + o.bench + ", unknown here");
  o.method_args = a.at("method_args").get<std::map<std::string, std::string>>();
  o.window = a.at("window").get<int>();
  o.credits = a.at("credits").get<int>();
  o.emulate_spec = a.at("emulate").get<std::string>();
  o.emulation = o.emulate_spec.empty() ? shm::Emulation{} : shm::parse_emulation(o.emulate_spec);  // as the leader's
  o.ring = a.at("ring").get<int>();
  o.segment_bytes = a.at("segment_bytes").get<std::uint32_t>();
  o.ud = a.at("ud").get<bool>();
  o.mtu = a.at("mtu").get<int>();  // DPDK: bulk is cut to it on every rank alike
}

// This rank's core. local: --cpus by rank, else --cpu/--peer-cpu for a pair, else the r-th allowed core;
// server/client: --cpu; launched: --cpus by rank on this host, else the one core the launcher bound us
// to, else the host rank's allowed core.
int choose_core(const Options& o, int rank, int host_rank, int size) {
  const std::vector<int> allowed = allowed_cores();
  // A job-level method may order its ranks on the cores (pairs: a requester beside its replier).
  if (o.cpus.empty() && size >= 2 && host_rank == rank)
    if (o.method->core_slot) rank = host_rank = o.method->core_slot(rank, size);
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

// The mode (launched when a launcher's variables are set and no mode was given), and in a local job every
// rank's core checked before the fork: one clear error, not a child's.
void settle_mode(Options& o) {
  if (!o.mode_given && detect_launcher()) o.mode = "launched";
  if (o.mode == "local" && o.reflector) o.ranks = 1;  // the peer is a reflector, not a rank
  if (o.mode == "local")
    for (int r = 0; r < o.ranks; ++r)
      check_cpu(choose_core(o, r, r, o.ranks), r == 0 ? "--cpu" : (o.cpus.empty() ? "--peer-cpu" : "--cpus"));
}

// A link-level method measures one pair; a job-level method checks the size itself.
void check_job_size(const Options& o, int n) {
  if (o.method->scope == methods::Scope::job) return o.method->check_size(n);
  if (n != 2 && !(n == 1 && o.reflector))
    throw UsageError("--bench " + o.bench + " measures one pair: run 2 ranks (this job has " + std::to_string(n) +
                     "), or a method of the whole job (e.g. --bench pairs)");
}

// What one allgather settles: the leader's settings (the others adopt them) and every rank's host.
struct Agreed {
  std::uint32_t session = 0;
  std::string host;                     // this rank's
  std::map<std::string, int> per_host;  // ranks on each host
  int host_rank = 0;                    // this rank's index among the ranks of its host
};

Agreed agree(Options& o, Ranks& ranks, int leader) {
  const int n = ranks.size();
  const std::uint32_t session = new_session();
  nlohmann::json mine = {{"host", ranks.placement(-1).at("host")}};
  if (ranks.rank() == leader) mine["agreement"] = agreement(o, session);
  const nlohmann::json all = ranks.allgather(mine);
  const nlohmann::json& a = all.at(static_cast<std::size_t>(leader)).at("agreement");
  if (ranks.rank() != leader) apply_agreement(o, a, leader);
  Agreed g;
  g.session = a.at("session").get<std::uint32_t>();
  g.host = mine["host"].get<std::string>();
  for (int r = 0; r < n; ++r) {
    const auto h = all[static_cast<std::size_t>(r)].at("host").get<std::string>();
    if (r == ranks.rank()) g.host_rank = g.per_host[h];
    ++g.per_host[h];
  }
  return g;
}

// Ranks on one core measure it in turns, not each other: this rank's turn, and the most any core needs.
struct CoreSharing {
  bool shared = false;
  int turn = 0, turns = 1;
};

CoreSharing share_cores(Ranks& ranks, const std::string& host, int cpu) {
  const nlohmann::json cores = ranks.allgather({{"host", host}, {"cpu", cpu}});
  CoreSharing cs;
  std::map<std::pair<std::string, int>, int> used;
  for (int r = 0; r < ranks.size(); ++r) {
    const auto& c = cores[static_cast<std::size_t>(r)];
    const int k = used[{c.at("host").get<std::string>(), c.at("cpu").get<int>()}]++;
    if (k > 0) cs.shared = true;
    if (r == ranks.rank()) cs.turn = k;
    cs.turns = std::max(cs.turns, k + 1);
  }
  return cs;
}

void take_turns(Ranks& ranks, const CoreSharing& cs, const std::function<void()>& on_pinned) {
  for (int t = 0; t < cs.turns; ++t) {
    if (t == cs.turn) on_pinned();
    if (cs.turns > 1) ranks.barrier();
  }
}

// Ranks that share cores are fit for timing only on an emulated NI that sleeps through parameters of
// milliseconds (shm/emulation.hpp, wait): each rank then needs its core for microseconds per millisecond.
struct Fitness {
  bool sleeps = false, fit = true;
};

Fitness fitness_for_timing(const shm::Emulation& em, bool shared) {
  double smallest = 1e300;
  for (double v : {em.o_s_ns, em.o_r_ns, em.g_ns, em.L_ns, em.handler_ns})
    if (v > 0) smallest = std::min(smallest, v);
  Fitness f;
  f.sleeps = em.enabled && (em.waiting == "sleep" || (em.waiting == "auto" && shared));
  f.fit = !shared || (f.sleeps && smallest >= 1e6);
  return f;
}

// Warns about shared cores, and (leader) records the job in meta.job.
void announce_job(Job& job, const Fitness& f, std::size_t hosts) {
  const int n = job.ranks.size();
  const bool shared = job.oversubscribed;
  if (shared && !f.fit && job.leader())
    std::fprintf(stderr,
                 "logpbench: warning: %d ranks share cores on one host: waits yield the core, and the "
                 "figures are unfit for timing (recorded in meta.job)\n",
                 n);
  else if (shared && job.leader())
    std::fprintf(stderr,
                 "logpbench: %d ranks share cores; the emulated NI sleeps through its millisecond "
                 "parameters, so each rank needs its core only briefly (recorded in meta.job)\n",
                 n);
  if (!job.leader()) return;
  auto& doc = job.doc;
  doc.j["meta"]["job"] = {
      {"launcher", job.ranks.launcher()},
      {"mode", job.o.mode},
      {"size", n},
      {"leader_rank", job.leader_rank},
      {"hosts", hosts},
      {"oversubscribed", shared},
      {"fit_for_timing", f.fit},
      {"waiting", f.sleeps ? "the emulated NI sleeps: overheads slept, idle ranks wait on a doorbell"
                  : shared ? "yields the core when idle (ranks share cores)"
                           : "busy polling"}};
  if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
}

// The job's own check, after the methods rebuilt theirs.
void check_own_cores(ResultsDoc& doc, bool shared, bool fit, int n) {
  if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
  const std::string detail =
      !shared ? "each rank pinned to its own core"
      : fit   ? std::to_string(n) +
                  " ranks on fewer cores, on an emulated NI that sleeps through parameters of a "
                  "millisecond or more: each rank needs its core for microseconds per millisecond, so sharing does not "
                  "bend the emulated figures"
            : std::to_string(n) + " ranks on fewer cores: a functional run, unfit for timing";
  doc.j["checks"].push_back({{"name", "every rank had a core of its own"}, {"ok", fit}, {"detail", detail}});
}

}  // namespace

methods::Role role_of(const Job& job) {
  const int n = job.ranks.size(), r = job.ranks.rank();
  if (job.leader_rank != 0) return {r == job.leader_rank, 1 - r, 0};  // server/client: the client requests
  methods::Role role{r == 0, r == 0 ? 1 : 0, 0};
  if (job.o.method->scope == methods::Scope::job) role = job.o.method->role(r, n);
  return role;
}

void run_job_main(Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress, RankKind& kind,
                  const std::function<void()>& on_pinned, TransportRun run_transport,
                  const std::function<void()>& after_method) {
  settle_mode(o);
  Ranks ranks = make_ranks(o);
  const int leader = o.mode == "server" || o.mode == "client" ? 1 : 0;
  kind = ranks.rank() == leader ? RankKind::leader : (o.mode == "local" ? RankKind::local_child : RankKind::member);
  if (kind == RankKind::local_child) prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive rank 0
  if (kind != RankKind::leader) doc.path.clear();
  Children children{ranks, false, o.timeout_s + 5};
  try {
    const int n = ranks.size();
    check_job_size(o, n);
    const Agreed agreed = agree(o, ranks, leader);
    o.cpu = choose_core(o, ranks.rank(), agreed.host_rank, n);
    pin_to_cpu(o.cpu, "--cpu/--cpus");
    check_host(ranks, o.cpu, doc);  // what keeps this core from clean figures, named before the run
    const CoreSharing cores = share_cores(ranks, agreed.host, o.cpu);
    take_turns(ranks, cores, on_pinned);
    const Fitness fitness = fitness_for_timing(o.emulation, cores.shared);

    Job job{ranks, o, clock, doc, progress};
    job.session = agreed.session;
    job.one_host = agreed.per_host.size() == 1;
    job.oversubscribed = cores.shared;
    // Ranks that share a core hold it for each other by design: no segment could be clean (common/disturbance.hpp).
    // Over libfabric, UCX and MPI the data path may run in the kernel (tcp, udp), and over verbs on Soft-RoCE it
    // does: its softirqs and kernel threads take the measuring cores as part of the transport's own cost (over
    // ofi tcp every flood run of 8 KiB read as disturbed), so their tags are recorded, not judged, until a
    // transport can say which path it has; shm and DPDK stay in user space.
    const bool user_space = o.transport == "shm" || o.transport == "dpdk";
    judge_segments(!cores.shared && user_space,
                   cores.shared ? "ranks share cores: each holds the other's core by design"
                                : "the transport's data path may run in the kernel, whose own work on the measuring "
                                  "cores is the transport's cost, not a disturbance");
    job.fit_for_timing = fitness.fit;
    job.leader_rank = leader;
    job.after_method = after_method;
    announce_job(job, fitness, agreed.per_host.size());
    run_transport(job);
    if (job.leader()) check_own_cores(doc, cores.shared, fitness.fit, n);
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
  // The requester watches its replier's core as well as its own (common/disturbance.hpp) where the replier
  // runs on this host: a pair's other rank.
  if (all.size() == 2) {
    const auto& peer = all[static_cast<std::size_t>(1 - job.leader_rank)];
    if (peer.value("host", "") == p.value("host", ""))
      watch_replier(peer.value("pid", -1L), peer.value("tid", -1L), peer.value("cpu", -1));
  }
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

void record_counters(Job& job, const nlohmann::json& per_rank, const nlohmann::json& transport) {
  auto& m = job.doc.j["meta"];
  m["am"]["per_rank"] = per_rank;
  if (per_rank.size() < 2) return;  // a reflector job: the other end is not ours to count
  auto u = [](const nlohmann::json& c, const char* k) { return c.value(k, std::uint64_t{0}); };
  // Losses break the balance; duplicates do not (the NI drops a second copy before the AM layer sees
  // it), nor does reordering (put back in sequence, or counted lost when it cannot be).
  std::uint64_t lost = 0;
  if (transport.contains("counters") && transport["counters"].is_object())
    for (const char* k : {"lost", "injected_drops", "bulk_incomplete"})
      lost += transport["counters"].value(k, std::uint64_t{0});
  std::uint64_t messages = 0;
  std::string bad;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    for (std::size_t q = 0; q < per_rank.size(); ++q) {
      if (r == q) continue;
      const std::string rs = std::to_string(r), qs = std::to_string(q);
      if (!per_rank[r].contains(qs) || !per_rank[q].contains(rs)) continue;
      const auto& out = per_rank[r][qs];  // r's counters toward q
      const auto& in = per_rank[q][rs];   // q's counters from r
      std::uint64_t refused = 0;
      if (in.contains("rejected"))
        for (const auto& [k, v] : in["rejected"].items()) refused += v.get<std::uint64_t>();
      // A get from r is served by q's NI, not its AM layer, and its completion reaches r as a reply from
      // q that q's AM layer never sent: each is counted on the side whose AM layer sees it.
      const std::uint64_t sent = u(out, "requests_sent") - u(out, "gets_sent") + u(out, "replies_sent") +
                                 u(out, "oneway_sent") + u(out, "credit_frames_sent") + u(in, "gets_sent");
      const std::uint64_t took = u(in, "received") + u(in, "credit_frames_received") + refused;
      messages += sent;
      if (sent != took || u(out, "oneway_sent") != u(in, "oneway_received"))
        bad += (bad.empty() ? "" : "; ") + rs + "->" + qs + ": sent " + std::to_string(sent) + " (" +
               std::to_string(u(out, "oneway_sent")) + " one-way), taken in " + std::to_string(took) + " (" +
               std::to_string(u(in, "oneway_received")) + " one-way)";
    }
  }
  nlohmann::json check = {{"name", "every frame sent was taken in"}, {"messages", messages}};
  if (lost) {
    check["ok"] = true;
    check["applies"] = false;
    check["detail"] = "frames were lost on this NI (" + std::to_string(lost) +
                      " losses counted): the counts are not expected to balance" +
                      (bad.empty() ? "" : " (" + bad + ")");
  } else {
    check["ok"] = bad.empty();
    check["detail"] = bad.empty() ? std::to_string(messages) + " frames, every one counted at both ends"
                                  : "the two ends disagree: " + bad;
  }
  if (!job.doc.j.contains("checks")) job.doc.j["checks"] = nlohmann::json::array();
  job.doc.j["checks"].push_back(check);
}

}  // namespace detail

}  // namespace logpb::app
