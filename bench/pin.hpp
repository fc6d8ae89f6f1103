// Pinning for the bench programs, which stand apart from app/ (whose pin_to_cpu throws a usage error).
#pragma once

#include <sched.h>

namespace logpb::bench {

// Binds the calling process to one core; false when the kernel refused.
inline bool pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s) == 0;
}

}  // namespace logpb::bench
