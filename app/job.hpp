// A job: N ranks, each with one AM endpoint over its transport, playing a role. Every run mode ends up
// here: `local -N K` (forked), `server`/`client HOST` (the two-rank shorthand) and ranks launched by
// mpirun or srun. Out of band (common/ranks.hpp) the ranks agree on the run's settings (the leader's),
// place themselves on cores and gather their placement; in band, requesters drive a method over a link
// to their replier while repliers serve.
//
// Roles. A link-level method (signature, pingpong, ...) needs exactly two ranks: the leader requests, the
// other replies. A job-level method (Scope::job, e.g. pairs: Culler et al. 3.5) says each
// rank's role and plays the whole job.
//
// The leader writes the JSON: rank 0, except in server/client where the client (rank 1 of the
// bootstrap, the side that chose the method) does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/bench_runner.hpp"
#include "app/job_common.hpp"
#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/am.hpp"
#include "common/clock.hpp"
#include "methods/protocol.hpp"
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
  bool oversubscribed = false;  // two ranks of a host share a core: waits must yield
  bool fit_for_timing = true;   // false when ranks share cores, unless an emulated NI sleeps at ms scale
  int leader_rank = 0;
  bool leader() const { return ranks.rank() == leader_rank; }
  // The transport's bare loop under the small AM's round trip, timed in this job before the transport runs
  // (meta.transport_floor: mpi/connect.cpp, dpdk/floor.cpp, ucx/uct_connect.cpp), and what it took
  // (meta.startup_ms.transport_floor). The table and compare split what the round trip takes beyond it into
  // the AM layer and the transport's own code. The leader's; nothing where no floor was timed.
  void record_floor(const nlohmann::json& floor, double ms) {
    if (!leader() || floor.is_null()) return;
    doc.j["meta"]["transport_floor"] = floor;
    doc.j["meta"]["startup_ms"]["transport_floor"] = ms;
  }
  // The leader's, run once the method is over and before the job's last barrier, while the other ranks wait
  // in it and their launcher is still idle (main's probe of the core after the run).
  std::function<void()> after_method{};

  // One requester's measurement over its link with the link-level method `bench`, as a record the
  // leader can gather: the method's own document (parameters, checks, runs) without a file behind it.
  template <class EP>
  nlohmann::json measure_link(EP& ep, int peer, const std::string& bench) {
    ResultsDoc sub;
    Options lo = o;
    lo.bench = bench;
    sub.j["runs"] = nlohmann::json::array();
    Progress quiet(true);
    lo.method = methods::find_method(bench);
    if (!lo.method) throw std::logic_error("measure_link: no method " + bench);
    with_method(bench, [&]<class M>() { run_client_bench<M>(ep, peer, clock, lo, sub, leader() ? progress : quiet); });
    // The quit gets no reply: sent as a one-way request, so it does not stay counted as an outstanding
    // request, which the next method over this link (pairs' second phase, quick's next method) would
    // wait for in vain (a signature's wait_all ended at the stall timeout).
    ep.oneway(peer, methods::kQuit);
    nlohmann::json r = {{"requester", ranks.rank()}, {"replier", peer}};
    for (const char* k : {"parameters", "checks", "notes", "runs", "per_size"})
      if (sub.j.contains(k)) r[k] = sub.j[k];
    r["am_counters"] = sub.j["meta"]["am"]["counters"];
    return r;
  }
};

methods::Role role_of(const Job& job);

enum class RankKind { leader, member, local_child };
// Builds the job's ranks from the mode (forking for local), agrees on settings and placement, pins this
// rank and runs its transport. `kind` is set as soon as it is known: a local child must leave with _exit
// once this returns or throws, and only the leader keeps a results file. on_pinned runs on every rank once
// it is on its core, before the transport connects (main measures the core's interruptions there);
// after_method is the leader's Job::after_method.
// run_transport: the chosen transport's job (its descriptor's run), which connects this rank and plays its
// role through run_job below.
using TransportRun = void (*)(Job&);
void run_job_main(Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress, RankKind& kind,
                  const std::function<void()>& on_pinned, TransportRun run_transport,
                  const std::function<void()>& after_method);

namespace detail {

template <class M, class EP>
void run_single(Job& job, EP& ep, const methods::Role& role) {
  if (role.requester) {
    run_client_bench<M>(ep, role.peer, job.clock, job.o, job.doc, job.progress);
    ep.request(role.peer, methods::kQuit);
  } else if (role.peer >= 0) {
    methods::serve(ep);
  }
}

// Placement and transport of every rank, gathered once; the leader writes meta.ranks (one entry per rank).
void record_job(Job& job, const nlohmann::json& numa, const nlohmann::json& transport, const nlohmann::json& am);
// The leader's part of the job's end: meta.am.per_rank (each rank's counters per peer) and the check that,
// for every ordered pair of ranks, the frames one sent (requests, replies, one-way, credit frames) are the
// frames the other took in (delivered, credit frames, refused), and the one-way messages sent the one-way
// messages received. On an NI that lost frames (the transport's counters say so) the balance is not
// expected and the check says why it does not apply.
void record_counters(Job& job, const nlohmann::json& per_rank, const nlohmann::json& transport);

}  // namespace detail

// Every rank calls this with its connected transport: builds the endpoint (rank and size of the job) and
// plays the rank's role. loss_timeout_s: the transport's default (0: it never loses a message); numa:
// this rank's placement against its NIC (numa_placement), or null.
template <class T>
void run_job(Job& job, T& t, double loss_timeout_s, const nlohmann::json& numa) {
  using EP = am::Endpoint<T>;
  const methods::Role role = role_of(job);
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
  // The method becomes a type here, once: a job-level method (Scope::job) plays the whole job; a link-level
  // one runs on the pair.
  with_method(job.o.bench, [&]<class M>() {
    if constexpr (M::scope == methods::Scope::job)
      M::run_job(job, ep, role);
    else
      detail::run_single<M>(job, ep, role);
  });
  // Every rank's AM counters toward each peer, gathered once the job is over; the allgather is also the
  // barrier that keeps each transport up while another rank may still read from it. The leader records
  // them and checks that what each rank sent to another is what that one took in (detail::record_counters).
  if (job.leader() && job.after_method) job.after_method();
  nlohmann::json mine = nlohmann::json::object();
  for (int q = 0; q < ep.size(); ++q)
    if (q != ep.rank()) mine[std::to_string(q)] = ep.counters(q);
  const nlohmann::json all = job.ranks.allgather(mine);
  if (job.leader()) detail::record_counters(job, all, t.describe());
}

}  // namespace logpb::app
