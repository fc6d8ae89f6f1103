// --transport shm: every rank of the job maps one named region in /dev/shm (so all run on one host).
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "app/job.hpp"
#include "app/modes_common.hpp"
#include "app/modes.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"
#include "common/shm_transport.hpp"

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

// A job's shm region: rank 0 creates it in /dev/shm, the other rank opens it by the name rank 0
// broadcasts, both publish their pids, and the name is removed once both have it mapped.
void run_shm(Job& job) {
  if (!job.one_host) throw UsageError("--transport shm needs every rank on one host (this job spans several)");
  if (job.ranks.size() != 2) throw UsageError("--transport shm connects two ranks (this job has " + std::to_string(job.ranks.size()) + ")");
  const ShmOptions so{job.o.ring, job.o.segment_bytes};
  const bool creator = job.ranks.rank() == 0;
  std::optional<ShmRegion> region;
  std::string name;
  if (creator) {
    name = "/logpbench." + std::to_string(getpid()) + "." + std::to_string(job.session);
    region.emplace(ShmRegion::create_named(name, so));
  }
  name = job.ranks.broadcast({{"shm", name}}).at("shm").get<std::string>();
  if (!creator) region.emplace(ShmRegion::open_named(name));
  ShmTransport t(*region, job.ranks.rank(), job.clock, job.o.emulation, job.o.connect_timeout_s);
  job.ranks.barrier();
  if (creator) region->unlink();
  run_job(job, t, 0, nullptr);
}

}  // namespace logpb::app
