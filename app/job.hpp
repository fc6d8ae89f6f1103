// A job: N ranks, each with one AM endpoint over its transport, playing a role. Every run mode ends up
// here: `local -N K` (forked), `server`/`client HOST` (the two-rank shorthand) and ranks launched by
// mpirun or srun. Out of band (common/ranks.hpp) the ranks agree on the run's settings (the leader's),
// place themselves on cores and gather their placement; in band, requesters drive a method over a link
// to their replier while repliers serve.
//
// Roles. A single-pair method (signature, pingpong, ...) needs exactly two ranks: the leader requests,
// the other replies. `--bench pairs` (Culler et al. section 3.5, first paragraph) splits the job in two
// halves: requester r (r < N/2) is paired with replier r + N/2; one pair is measured alone, then every
// pair at once, and the leader reports each pair's parameters and their spread beside the lone pair.
//
// The leader writes the JSON: rank 0, except in server/client where the client (rank 1 of the
// bootstrap, the side that chose the method) does, as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "app/bench_runner.hpp"
#include "app/modes_common.hpp"
#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/am.hpp"
#include "common/clock.hpp"
#include "common/methods/protocol.hpp"
#include "common/ranks.hpp"

namespace logpb::app {

struct Job {
  Ranks& ranks;
  Options o;  // the leader's settings where ranks must agree (transport, bench, window, ...), with this rank's core
  const Clock& clock;
  ResultsDoc& doc;  // written by the leader only (the others' has no path)
  Progress& progress;
  std::uint32_t session = 0;    // the same on every rank
  bool one_host = true;         // every rank on one host (shm needs it)
  bool oversubscribed = false;  // two ranks of a host share a core: waits must yield, figures are unfit for timing
  int leader_rank = 0;
  bool leader() const { return ranks.rank() == leader_rank; }
};

struct Role {
  bool requester = false;
  int peer = -1;  // a requester's replier, a replier's requester; -1: no part in this bench
  int pair = -1;
};
Role role_of(const Job& job);

enum class RankKind { leader, member, local_child };
// Builds the job's ranks from the mode (forking for local), agrees on settings and placement, pins this
// rank and runs its transport. `kind` is set as soon as it is known: a local child must leave with _exit
// once this returns or throws, and only the leader keeps a results file.
void run_job_main(Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress, RankKind& kind);

// The leader's summary of `--bench pairs` from every rank's record (see run_pairs).
void summarize_pairs(Job& job, const nlohmann::json& records);

namespace detail {

// One requester's measurement over its link, as a record the leader can gather: the method's own
// document (parameters, checks, runs) without a file behind it.
template <class EP>
nlohmann::json measure_link(Job& job, EP& ep, int peer, const std::string& bench, Progress& progress) {
  ResultsDoc sub;
  Options o = job.o;
  o.bench = bench;
  sub.j["runs"] = nlohmann::json::array();
  run_client_bench(ep, peer, job.clock, o, sub, progress);
  ep.request(peer, methods::kQuit);
  nlohmann::json r = {{"requester", job.ranks.rank()}, {"replier", peer}};
  for (const char* k : {"parameters", "checks", "runs", "per_size"})
    if (sub.j.contains(k)) r[k] = sub.j[k];
  r["am_counters"] = sub.j["meta"]["am"]["counters"];
  return r;
}

template <class EP>
void run_single(Job& job, EP& ep, const Role& role) {
  if (role.requester) {
    run_client_bench(ep, role.peer, job.clock, job.o, job.doc, job.progress);
    ep.request(role.peer, methods::kQuit);
  } else if (role.peer >= 0) {
    methods::serve(ep);
  }
}

template <class EP>
void run_pairs(Job& job, EP& ep, const Role& role) {
  // Long phases: collectives wait without a deadline, still aware of a dead rank and of signals.
  job.ranks.set_timeout(0);
  Progress quiet(true);
  Progress& progress = job.leader() ? job.progress : quiet;
  nlohmann::json mine = nlohmann::json::object();
  // One pair alone: the reference (the "single pair of nodes" the paper calibrated first).
  if (role.pair == 0) {
    if (role.requester) {
      progress("pair 0 alone");
      mine["alone"] = measure_link(job, ep, role.peer, job.o.pairs_bench, progress);
    } else {
      methods::serve(ep);
    }
  }
  job.ranks.barrier();
  // Every pair at once.
  if (role.requester) {
    progress("all " + std::to_string(job.ranks.size() / 2) + " pairs at once");
    mine["together"] = measure_link(job, ep, role.peer, job.o.pairs_bench, progress);
  } else if (role.peer >= 0) {
    methods::serve(ep);
  }
  const nlohmann::json all = job.ranks.allgather(mine);
  if (job.leader()) summarize_pairs(job, all);
}

// Placement and transport of every rank, gathered once; the leader writes meta.ranks (one entry per rank).
void record_job(Job& job, const nlohmann::json& numa, const nlohmann::json& transport, const nlohmann::json& am);

}  // namespace detail

// Every rank calls this with its connected transport: builds the endpoint (rank and size of the job) and
// plays the rank's role. loss_timeout_s: the transport's default (0: it never loses a message); numa:
// this rank's placement against its NIC (numa_placement), or null.
template <class T>
void run_job(Job& job, T& t, double loss_timeout_s, const nlohmann::json& numa) {
  using EP = am::Endpoint<T>;
  const Role role = role_of(job);
  am::EndpointOptions eo = endpoint_options(job.o, job.session, t.segment().size(), !role.requester, loss_timeout_s);
  eo.rank = job.ranks.rank();
  eo.size = std::max(job.ranks.size(), role.peer + 1);  // a reflector (a job of one) is its rank 1
  EP ep(t, job.clock, eo);
  const nlohmann::json am = {{"window", ep.window()},
                             {"credits", ep.credit_limit()},
                             {"credit_return", "one credit frame per about credits/2 one-way requests"},
                             {"frame_bytes", sizeof(am::Frame)},
                             {"stall_timeout_s", eo.stall_timeout_s},
                             {"loss_timeout_s", eo.loss_timeout_s}};
  detail::record_job(job, numa, t.describe(), am);
  struct Describe {  // the transport's counters of drops and foreign frames, also on error
    Job& job;
    T& t;
    ~Describe() {
      if (job.leader()) job.doc.j["meta"]["transport"] = t.describe();
    }
  } describe{job, t};
  if (job.o.bench == "pairs") detail::run_pairs(job, ep, role);
  else detail::run_single(job, ep, role);
  // Nobody tears down its transport while another rank may still read from it.
  job.ranks.barrier();
}

}  // namespace logpb::app
