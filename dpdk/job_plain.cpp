// run_dpdk_job over Transport<Plain> (dpdk/job.hpp says why each policy has its own unit).
#include "dpdk/job.hpp"

namespace logpb::dpdk {

using app::Job;

void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Plain>& t) { run_dpdk_job_over(job, t); }

}  // namespace logpb::dpdk
