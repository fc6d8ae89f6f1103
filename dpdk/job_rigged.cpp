// run_dpdk_job over Transport<Rigged> (dpdk/job.hpp says why each policy has its own unit).
#include "dpdk/job.hpp"

namespace logpb::dpdk {

using app::Job;

void run_dpdk_job(Job& job, dpdk::Transport<dpdk::Rigged>& t) { run_dpdk_job_over(job, t); }

}  // namespace logpb::dpdk
