// --transport verbs as a job: every rank (local -N K forked on one device, loopback as perftest allows;
// server/client; mpirun/srun) runs the verbs connect step over the job's Ranks (verbs/connect.hpp: one
// QP per peer, addresses by allgather, receives posted, "ready" barrier) and hands its transport to
// run_job. --event picks verbs::EventTransport (the AM layer may sleep in its idle_wait); a job whose
// ranks share cores gets verbs::YieldingTransport (waits give the core away, so every rank progresses);
// otherwise verbs::Transport, which has no idle_wait, so its waiting loops never read the clock per
// empty poll.
#include "app/job.hpp"
#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "verbs/connect.hpp"
#include "verbs/transport.hpp"

namespace logpb::app {
namespace {

template <class T>
void run_as(Job& job) {
  const verbs::CliOptions& v = job.o;
  // Only runs with a get let peers read the segment (the same on every rank: the bench is agreed).
  const bool remote_read = methods::run_needs(job.o.bench, job.o.method_args).get;
  auto t = verbs::connect<T>(job.ranks, v.device(job.o.segment_bytes, remote_read), v.transport());
  run_job(job, *t, v.default_loss_timeout_s(), numa_placement(job.o.cpu, t->context().numa_node()));
}

}  // namespace

void run_verbs(Job& job) {
  if (job.o.event_mode)
    run_as<verbs::EventTransport>(job);
  else if (job.oversubscribed)
    run_as<verbs::YieldingTransport>(job);
  else
    run_as<verbs::Transport>(job);
}

}  // namespace logpb::app
