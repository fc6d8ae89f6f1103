// The verbs transport's part of the command line (perftest's -d, -i, -x, and the QP knobs that change
// o_s, each recorded in meta.flags), and what the transport is configured with. Free of libibverbs, so
// --help lists the section on every build.
#pragma once

#include <cstdint>
#include <string>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

namespace logpb::verbs {

struct DeviceOptions {
  std::string device;  // -d: empty = the first device
  int port = 1;        // -i
  int gid_index = -1;  // -x: -1 = auto (a RoCE v2 IPv4-mapped GID, else index 0)
  std::uint32_t segment_bytes = 1 << 20;
  bool remote_read = false;            // the bulk segment may be read by the peers (only runs with a get need it)
  int sq_depth = 256, rq_depth = 512;  // per QP, i.e. per peer
  int recv_batch = 32;                 // consumed receives are re-posted this many at a time (clamped: recv_batch())
  int inline_bytes = 64;               // asked for; the device may give more or less (recorded)
  int mtu = 0;                         // 0: the port's active MTU
  bool events = false;                 // completion channel for event mode
  bool ud = false;                     // unreliable datagram QP instead of RC: small AMs only, loss possible, 2 ranks
};

struct TransportOptions {
  int signal_every = 16;  // one signaled send in this many per QP: fewer completions to reap (o_s)
  int cq_batch = 16;      // completions taken per ibv_poll_cq
};

// The options as the command line names them (the job agrees on ud across its ranks).
struct CliOptions {
  std::string ib_dev;
  int ib_port = 1;
  int gid_index = -1;  // -1: auto
  int inline_bytes = 64, signal_every = 16, recv_batch = 32, sq_depth = 256, rq_depth = 512;
  int ib_mtu = 0;  // ibv_mtu's value (1: 256 bytes .. 5: 4096), 0: the port's active MTU
  bool event_mode = false;
  bool ud = false;
  std::string gid_text = "auto";  // -x as given
  int ib_mtu_bytes = 0;           // --ib-mtu as given

  // The device and datapath this asks for; the segment and remote reads follow from the job and its method.
  DeviceOptions device(std::uint32_t segment_bytes, bool remote_read) const;
  TransportOptions transport() const;
  // UD may drop datagrams: re-measure after 50 ms of silence. RC retransmits, so it never loses one.
  double default_loss_timeout_s() const { return ud ? 0.05 : 0; }
};

// The section "verbs transport (perftest's -d, -i, -x)" of --help, bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Range and consistency checks (UsageError). `small_ams_only`: the method and size carry no bulk data,
// which --ud needs; `window`: the AM window every QP's receives must cover.
void validate(CliOptions& o, const boost::program_options::variables_map& vm, const std::string& transport,
              bool small_ams_only, int window);

}  // namespace logpb::verbs
