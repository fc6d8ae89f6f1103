// The DPDK transport's part of the command line: EAL arguments passed through, the port and its rings,
// and injected loss, duplicates and reordering for testing. Free of DPDK headers, so --help lists the
// section on every build.
#pragma once

#include <string>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

namespace logpb::dpdk {

// --reorder-rate: a held frame that no later frame overtakes within this long is delivered late
// (dpdk/transport.cpp, inject_faults); --help and meta.transport.reorder_hold_us give it.
inline constexpr double kReorderHoldUs = 20;
// net_af_packet: the longest an idle poll goes without the empty sendto that sends frames the PMD left in
// its ring (Transport::kick_stranded). One sendto per 20 us of idle polling; a 1514-byte frame is 12 us
// at 1 Gbit/s, so a stranded frame waits about one or two frame times.
inline constexpr double kKickUs = 20;

// The options as the command line names them (the job agrees on mtu across its ranks; the reflector
// makes a local job of one rank). dpdk/setup.hpp turns them into connect()'s options.
struct CliOptions {
  std::string eal;  // EAL arguments, split on spaces
  int dpdk_port = -1;
  int burst = 32, tx_burst = 1, rx_ring = 1024, tx_ring = 1024, mtu = 0;
  double drop_rate = 0;
  double dup_rate = 0, reorder_rate = 0;
  bool no_huge = false;
  bool reflector = false;
  double link_timeout_s = 10;
  double loss_timeout_s = -1;  // -1: the transport's default (0 for shm, which never loses)
};

// The section "DPDK transport" of --help, bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Range and consistency checks (UsageError). `batches_sends`: the method measures a rate, so a stream's
// sends may go to the PMD together (--tx-burst).
void validate(const CliOptions& o, const boost::program_options::variables_map& vm, const std::string& transport,
              const std::string& mode, bool batches_sends);

}  // namespace logpb::dpdk
