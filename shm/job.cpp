// --transport shm: a job of N ranks on one host, one shared region (shm/).
#include "app/job.hpp"
#include "shm/descriptor.hpp"
#include "app/job_common.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "methods/protocol.hpp"
#include "shm/connect.hpp"

namespace logpb::shm {

using app::Job;

// Every rank of the job maps one region (shm/connect.hpp: rank 0 creates it for N ranks, the others open
// it, all on one host); the NI, real or emulated, is chosen once there. Ranks sharing a core yield it
// when idle, so each progresses.
void Descriptor::run(Job& job) {
  shm::ShmOptions so;
  so.ring_slots = job.o.ring;
  so.segment_bytes = job.o.segment_bytes;
  so.yield_when_idle = job.oversubscribed;
  shm::connect_shm(job.ranks, so, job.clock, job.o.emulation, [&](auto& t) { app::run_job(job, t, 0, nullptr); });
}

}  // namespace logpb::shm
