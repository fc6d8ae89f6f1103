// The UCX transport's part of the command line (ucx_perftest's -x and -d for UCT; UCX's own environment,
// UCX_TLS and friends, for UCP), and what the transport is configured with. Free of UCX's headers: the
// command line is read, and --help lists the section, on builds without UCX too.
#pragma once

#include <cstdint>
#include <string>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

namespace logpb::ucx {

// The rung of UCX's stack the AM layer sits on: UCT (one transport's interface, uct_ep_am_short/bcopy)
// or UCP (the protocol layer that picks transports and protocols itself, ucp_am_send_nbx).
enum class Layer { uct, ucp };
Layer parse_layer(const std::string& s);  // UsageError for anything but uct|ucp
const char* to_string(Layer l);

// UCP's error handling on its endpoints (ucp_err_handling_mode_t). none, UCP's default, keeps every transport
// and leaves a lost peer to UCX, which ends the process itself on some (UD's timeout: SIGABRT); peer
// (UCP_ERR_HANDLING_MODE_PEER, ucx_perftest's -e) hands it to logpbench, which ends the run as on any
// transport, and restricts UCP to transports that can report one.
enum class ErrMode { none, peer };
ErrMode parse_err_mode(const std::string& s);  // UsageError for anything but none|peer
const char* to_string(ErrMode m);

struct TransportOptions {
  Layer layer = Layer::uct;
  std::string tl;       // UCT: the transport, as ucx_info -d names it (posix, sysv, tcp, rc_verbs, ud_verbs, ...)
  std::string dev;      // UCT: its device (memory, lo, eth0, rxe0:1); empty: the transport's first
  std::string bulk_tl;  // UCT: a second interface for stores and gets (cma); empty: the AM interface's own
  ErrMode err_mode = ErrMode::none;  // UCP only
  std::uint32_t segment_bytes = 1 << 20;
  bool remote_read = false;      // the method gets: the segment must be readable by the peers
  bool yield_when_idle = false;  // more ranks than cores: give the core away after an empty poll
};

// The options as the command line names them; validate() reads them into ucx_options.
struct CliOptions {
  std::string ucx_layer = "uct";
  std::string ucx_tl;
  std::string ucx_dev;
  std::string ucx_bulk_tl;
  std::string ucp_err_mode = "none";
  TransportOptions ucx_options;  // the above, checked; the segment and yielding are the job's
};

// The section "UCX transport" of --help, bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Checks (UsageError) and fills o.ucx_options; the options are refused for any other transport.
void validate(CliOptions& o, const boost::program_options::variables_map& vm, const std::string& transport);

}  // namespace logpb::ucx
