// --transport ucx as a job: every rank (local -N K forked on one host, server/client, mpirun/srun) opens
// UCT's interface or UCP's worker, exchanges addresses over the job's Ranks (ucx/uct_connect.hpp,
// ucx/ucp_connect.hpp) and hands its transport to run_job. Every UCT and UCP transport used is reliable.
#include <chrono>

#include "app/job.hpp"
#include "ucx/descriptor.hpp"
#include "app/job_common.hpp"
#include "methods/descriptor.hpp"
#include "ucx/ucp_connect.hpp"
#include "ucx/uct_connect.hpp"

namespace logpb::ucx {

using app::Job;

void Descriptor::run(Job& job) {
  ucx::TransportOptions t = job.o.ucx_options;
  t.segment_bytes = job.o.segment_bytes;
  t.remote_read = methods::run_needs(*job.o.method, job.o.method_args).get;  // agreed bench: the same on every rank
  t.yield_when_idle = job.oversubscribed;
  if (t.layer == Layer::uct) {
    UctConnection conn(job.ranks, t);
    const auto t0 = std::chrono::steady_clock::now();
    const nlohmann::json floor = conn.measure_floor(job.ranks, job.clock, job.leader_rank);
    job.record_floor(floor, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (job.leader()) job.doc.j["meta"]["ucx"] = conn.describe();
    app::run_job(job, conn.transport(), 0, nullptr);
  } else {
    UcpConnection conn(job.ranks, t);
    if (job.leader()) job.doc.j["meta"]["ucx"] = conn.describe();
    app::run_job(job, conn.transport(), 0, nullptr);
  }
}

}  // namespace logpb::ucx
