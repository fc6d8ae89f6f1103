// run_dpdk_job over Transport<Rigged> (app/dpdk_job.hpp says why each policy has its own unit).
#include "app/dpdk_job.hpp"

namespace logpb::app {

void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Rigged>& t) { run_dpdk_job_over(job, t); }

}  // namespace logpb::app
