// --transport dpdk: every rank of the job connects through dpdk::connect (dpdk/connect.hpp) and plays
// its role in run_job. `local -N K` joins its K processes with one memif per pair of ranks;
// `server`/`client HOST` and launched jobs use the port the EAL arguments give (af_xdp on a veth pair or
// a bridge, a real NIC), routed by MAC; `local --reflector` is a job of one rank measuring against a
// reflector nobody here wrote (testpmd in macswap mode). dpdk/setup.hpp holds the control path.
#include <cstdio>

#include "dpdk/job.hpp"
#include "app/job.hpp"
#include "dpdk/descriptor.hpp"
#include "app/job_common.hpp"
#include "methods/protocol.hpp"
#include "dpdk/connect.hpp"
#include "dpdk/setup.hpp"

namespace logpb::dpdk {

using app::Job;
namespace {

dpdk::JobPlace place(const Job& job) {
  dpdk::JobPlace p;
  p.mode = job.o.mode;
  p.one_host = job.one_host;
  p.leader = job.leader();
  p.rank = job.ranks.rank();
  p.cpu = job.o.cpu;
  p.session = job.session;
  p.segment_bytes = job.o.segment_bytes;
  p.oversubscribed = job.oversubscribed;
  p.reflector_reply_handler = methods::kAck;
  return p;
}

}  // namespace

void Descriptor::run(Job& job) {
  dpdk::ConnectOptions co = dpdk::connect_options(job.o, place(job));
  co.floor_clock = &job.clock;
  co.floor_requester = job.leader_rank;
  auto conn = dpdk::connect(job.ranks, co);
  if (job.o.mode == "server" && !job.leader())
    std::fprintf(stderr, "logpbench server: DPDK port %u (%s)\n", conn->ports()[0]->id(),
                 conn->ports()[0]->mac_string().c_str());
  if (job.leader()) {
    job.doc.j["meta"]["no_huge"] = job.o.no_huge;
    job.doc.j["meta"]["dpdk_job"] = conn->describe();
  }
  job.record_floor(conn->floor(), conn->floor_ms());  // timed in connect(), before the transport (dpdk/floor.hpp)
  // Transport<Plain>, or Transport<Rigged> for injected faults and the reflector (dpdk/transport.hpp).
  conn->with_transport([&](auto& t) { run_dpdk_job(job, t); });
  if (job.o.reflector) dpdk::linger_for_reflector(*conn->ports()[0]);
}

}  // namespace logpb::dpdk
