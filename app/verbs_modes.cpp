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

verbs::DeviceOptions device_options(const Options& o) {
  verbs::DeviceOptions d;
  d.device = o.ib_dev;
  d.port = o.ib_port;
  d.gid_index = o.gid_index;
  d.segment_bytes = o.segment_bytes;
  // Only runs with a get let peers read the segment (the same on every rank: the bench is agreed).
  d.remote_read = run_needs(o.bench, o.method_args).get;  // the method registry says who reads remotely
  d.sq_depth = o.sq_depth;
  d.rq_depth = o.rq_depth;
  d.recv_batch = o.recv_batch;
  d.inline_bytes = o.inline_bytes;
  d.mtu = o.ib_mtu;
  d.events = o.event_mode;
  d.ud = o.ud;
  return d;
}

verbs::TransportOptions transport_options(const Options& o) {
  verbs::TransportOptions t;
  t.signal_every = o.signal_every;
  return t;
}

// UD may drop datagrams: re-measure after 50 ms of silence. RC retransmits, so it never loses one.
double loss_timeout(const Options& o) { return o.ud ? 0.05 : 0; }

template <class T>
void run_as(Job& job) {
  auto t = verbs::connect<T>(job.ranks, device_options(job.o), transport_options(job.o));
  run_job(job, *t, loss_timeout(job.o), numa_placement(job.o.cpu, t->context().numa_node()));
}

}  // namespace

void run_verbs(Job& job) {
  if (job.o.event_mode) run_as<verbs::EventTransport>(job);
  else if (job.oversubscribed) run_as<verbs::YieldingTransport>(job);
  else run_as<verbs::Transport>(job);
}

}  // namespace logpb::app
