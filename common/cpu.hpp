// Placing this process on a core: every busy-polling endpoint owns one (two of them on one core would
// measure the scheduler, not the NI).
#pragma once

namespace logpb {

// Pins the calling thread to `cpu`; throws UsageError naming the cores this process may use.
void pin_to_cpu(int cpu, const char* what);
// Throws that UsageError without pinning.
void check_cpu(int cpu, const char* what);

}  // namespace logpb
