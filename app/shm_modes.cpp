// --transport shm: a job of N ranks on one host, one shared region (shm/).
#include <sched.h>
#include <unistd.h>

#include <cstdio>

#include "app/job.hpp"
#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "shm/connect.hpp"

namespace logpb::app {

void check_cpu(int cpu, const char* what) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) return;
  std::string have;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &allowed)) have += (have.empty() ? "" : ",") + std::to_string(i);
  throw UsageError(std::string(what) + " " + std::to_string(cpu) + ": cannot run there (cores allowed: " + have + ")");
}

void pin_to_cpu(int cpu, const char* what) {
  check_cpu(cpu, what);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::runtime_error(std::string("sched_setaffinity to core ") + std::to_string(cpu) + " failed (" + what + ")");
}

// Every rank of the job maps one region (shm/connect.hpp: rank 0 creates it for N ranks, the others open
// it, all on one host); the NI, real or emulated, is chosen once there. Ranks sharing a core yield it
// when idle, so each progresses.
void run_shm(Job& job) {
  ShmOptions so;
  so.ring_slots = job.o.ring;
  so.segment_bytes = job.o.segment_bytes;
  so.yield_when_idle = job.oversubscribed;
  connect_shm(job.ranks, so, job.clock, job.o.emulation, [&](auto& t) { run_job(job, t, 0, nullptr); });
}

}  // namespace logpb::app
