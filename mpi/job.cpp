// --transport mpi: a job launched by mpirun/srun (the ranks are the launcher's, Ranks::from_launcher;
// mpi/options.cpp refuses the mode without one). Every rank initialises MPI, checks that MPI's rank and
// size are the launcher's, posts its receive ring (and, for --mpi-bulk put, opens its window) and plays its
// role in run_job like any other transport; before posting its ring it runs a bare MPI ping-pong
// (meta.transport_floor). MPI has no emulated NI: --emulate is shm's alone.
#include "app/job.hpp"
#include "mpi/descriptor.hpp"
#include "app/job_common.hpp"
#include "mpi/connect.hpp"

namespace logpb::mpi {

using app::Job;

void Descriptor::run(Job& job) {
  mpi::TransportOptions t = job.o.mpi_options;
  t.segment_bytes = job.o.segment_bytes;
  t.yield_when_idle = job.oversubscribed;
  t.session = job.session;
  mpi::Connection conn(job.ranks, t, job.clock);
  if (job.leader()) {
    job.doc.j["meta"]["mpi"] = conn.describe();
    job.doc.j["meta"]["startup_ms"]["mpi_init"] = conn.init_ms();
    job.doc.j["meta"]["startup_ms"]["mpi_t_settings"] = conn.settings_ms();
  }
  job.record_floor(conn.floor(), conn.floor_ms());  // timed before the receive ring is posted (mpi/connect.cpp)
  app::run_job(job, conn.transport(), 0, nullptr);  // MPI never loses a message
}

}  // namespace logpb::mpi
