// --transport shm: a job of N ranks on one host, one shared region (shm/).
#include "app/job.hpp"
#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "methods/protocol.hpp"
#include "shm/connect.hpp"

namespace logpb::app {

// Every rank of the job maps one region (shm/connect.hpp: rank 0 creates it for N ranks, the others open
// it, all on one host); the NI, real or emulated, is chosen once there. Ranks sharing a core yield it
// when idle, so each progresses.
void run_shm(Job& job) {
  shm::ShmOptions so;
  so.ring_slots = job.o.ring;
  so.segment_bytes = job.o.segment_bytes;
  so.yield_when_idle = job.oversubscribed;
  shm::connect_shm(job.ranks, so, job.clock, job.o.emulation, [&](auto& t) { run_job(job, t, 0, nullptr); });
}

}  // namespace logpb::app
