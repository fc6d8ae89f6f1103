// From the command line to a connected DPDK job: which join a job gets (a memif per pair of ranks on
// one host, or the port the EAL arguments give), connect()'s options, and the end of a run against a
// reflector nobody here wrote (testpmd macswap).
#pragma once

#include <cstdint>
#include <string>

#include "dpdk/connect.hpp"
#include "dpdk/options.hpp"
#include "dpdk/port.hpp"

namespace logpb::dpdk {

// What the job decided that the transport's options depend on.
struct JobPlace {
  std::string mode;  // local | server | client | launched
  bool one_host = false;
  bool leader = false;
  int rank = 0;
  int cpu = 0;
  std::uint32_t session = 0;
  std::uint32_t segment_bytes = 1 << 20;
  bool oversubscribed = false;                // more ranks than cores: yield when idle
  std::uint16_t reflector_reply_handler = 0;  // the handler an echoed request is delivered to
};

// A launched job on one host with no device in its EAL arguments is joined like `local` (memif pairs).
bool memif_job(const CliOptions& o, const JobPlace& job);

ConnectOptions connect_options(const CliOptions& o, const JobPlace& job);

// With LOGPB_REFLECTOR_LINGER_S set, says the reflector run is done and keeps the link up until the
// reflector closes it (or that many seconds pass).
void linger_for_reflector(const Port& port);

}  // namespace logpb::dpdk
