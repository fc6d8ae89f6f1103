// --transport mpi: a job launched by mpirun/srun (the ranks are the launcher's, Ranks::from_launcher;
// options.cpp refuses the mode without one). Every rank initialises MPI, checks that MPI's rank and size
// are the launcher's, posts its receive ring (and, for --mpi-bulk put, opens its window) and plays its
// role in run_job like any other transport. MPI has no emulated NI: --emulate is shm's alone.
#include "app/job.hpp"
#include "app/modes.hpp"
#include "app/modes_common.hpp"
#include "mpi/connect.hpp"

namespace logpb::app {

void run_mpi(Job& job) {
  mpi::TransportOptions t;
  t.bulk = mpi::parse_bulk_mode(job.o.mpi_bulk);
  t.send = mpi::parse_send_mode(job.o.mpi_send);
  t.recv = mpi::parse_recv_mode(job.o.mpi_recv);
  t.inline_bytes = static_cast<std::uint32_t>(job.o.mpi_inline);
  t.rx_ring = job.o.mpi_ring;
  t.tx_pool = job.o.mpi_pool;
  t.segment_bytes = job.o.segment_bytes;
  t.yield_when_idle = job.oversubscribed;
  t.read_settings = job.o.mpi_settings == "on";
  mpi::Connection conn(job.ranks, t);
  if (job.leader()) {
    job.doc.j["meta"]["mpi"] = conn.describe();
    job.doc.j["meta"]["startup_ms"]["mpi_init"] = conn.init_ms();
    job.doc.j["meta"]["startup_ms"]["mpi_t_settings"] = conn.settings_ms();
  }
  run_job(job, conn.transport(), 0, nullptr);  // MPI never loses a message
}

}  // namespace logpb::app
