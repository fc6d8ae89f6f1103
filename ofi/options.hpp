// The libfabric transport's part of the command line (fabtests' -p for the provider, the endpoint type and
// the local completion a send waits for), and what the transport is configured with. Free of rdma/fabric.h:
// the command line is read, and --help lists the section, on builds without libfabric too.
#pragma once

#include <cstdint>
#include <string>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

namespace logpb::ofi {

enum class EpType { rdm, msg };
// Pre-posted receives: FI_MULTI_RECV buffers, or a ring of one-message buffers; auto picks multi where the
// provider has it, except shm (see ofi/connect.cpp).
enum class RecvMode { automatic, multi, ring };
RecvMode parse_recv_mode(const std::string& s);  // UsageError for anything but auto|multi|ring
const char* to_string(RecvMode r);
EpType parse_ep_type(const std::string& s);  // UsageError for anything but rdm|msg
const char* to_string(EpType e);

// What a send's local completion means (fi_cq(3), "completion semantics"): the buffer may be reused
// (inject), the message has left for the peer and will not be retransmitted by us (transmit), or the
// peer has taken it into a receive buffer (delivery).
enum class Completion { inject, transmit, delivery };
Completion parse_completion(const std::string& s);  // UsageError for anything but inject|transmit|delivery
const char* to_string(Completion c);

struct TransportOptions {
  std::string provider;  // fi_info's prov_name, e.g. "tcp", "tcp;ofi_rxm", "shm"
  EpType ep = EpType::rdm;
  Completion completion = Completion::inject;
  RecvMode recv = RecvMode::automatic;
  std::uint32_t segment_bytes = 1 << 20;
  bool remote_read = false;      // the method gets (fi_read): the segment is registered for remote reads
  bool yield_when_idle = false;  // more ranks than cores: give the core away after an empty poll
};

// The options as the command line names them; validate() reads them into ofi_options.
struct CliOptions {
  std::string provider;  // --provider: required with --transport ofi
  std::string ofi_ep = "rdm";
  std::string ofi_completion = "inject";
  std::string ofi_recv = "auto";
  TransportOptions ofi_options;  // the above, checked; the segment and yielding are the job's
};

// The section "libfabric transport" of --help, bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Checks (UsageError) and fills o.ofi_options; the options are refused for any other transport.
void validate(CliOptions& o, const boost::program_options::variables_map& vm, const std::string& transport);

}  // namespace logpb::ofi
