#include "common/cpu.hpp"

#include <sched.h>

#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb {

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
    throw std::runtime_error(std::string("sched_setaffinity to core ") + std::to_string(cpu) + " failed (" + what +
                             ")");
}

}  // namespace logpb
