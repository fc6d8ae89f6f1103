// The run modes of each transport. Each returns the process exit code and fills the results document.
#pragma once

#include "app/bench_runner.hpp"
#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/clock.hpp"
#include "common/cpu.hpp"

namespace logpb::app {

struct Job;
void run_shm(Job& job);    // app/shm_modes.cpp
void run_verbs(Job& job);  // app/verbs_modes.cpp
void run_dpdk(Job& job);   // app/dpdk_modes.cpp
void run_mpi(Job& job);    // app/mpi_modes.cpp
void run_ofi(Job& job);    // app/ofi_modes.cpp

}  // namespace logpb::app
