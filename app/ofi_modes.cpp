// --transport ofi as a job: every rank (local -N K forked on one host, server/client, mpirun/srun) opens
// the provider, exchanges addresses over the job's Ranks (ofi/connect.hpp) and hands its transport to
// run_job. The provider never loses a message (every endpoint type used is reliable).
#include "app/job.hpp"
#include "app/modes.hpp"
#include "app/modes_common.hpp"
#include "methods/descriptor.hpp"
#include "ofi/connect.hpp"

namespace logpb::app {

void run_ofi(Job& job) {
  ofi::TransportOptions t = job.o.ofi_options;
  t.segment_bytes = job.o.segment_bytes;
  t.remote_read = methods::run_needs(job.o.bench, job.o.method_args).get;  // agreed bench: the same on every rank
  t.yield_when_idle = job.oversubscribed;
  ofi::Connection conn(job.ranks, t);
  if (job.leader()) job.doc.j["meta"]["ofi"] = conn.describe();
  run_job(job, conn.transport(), 0, nullptr);
}

}  // namespace logpb::app
