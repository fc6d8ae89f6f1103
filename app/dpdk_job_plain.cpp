// run_dpdk_job over Transport<Plain> (app/dpdk_job.hpp says why each policy has its own unit).
#include "app/dpdk_job.hpp"

namespace logpb::app {

void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Plain>& t) { run_dpdk_job_over(job, t); }

}  // namespace logpb::app
