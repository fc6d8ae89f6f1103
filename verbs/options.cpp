#include "verbs/options.hpp"

#include <string>

#include "common/errors.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;

namespace logpb::verbs {

DeviceOptions CliOptions::device(std::uint32_t segment_bytes, bool remote_read) const {
  DeviceOptions d;
  d.device = ib_dev;
  d.port = ib_port;
  d.gid_index = gid_index;
  d.segment_bytes = segment_bytes;
  d.remote_read = remote_read;
  d.sq_depth = sq_depth;
  d.rq_depth = rq_depth;
  d.recv_batch = recv_batch;
  d.inline_bytes = inline_bytes;
  d.mtu = ib_mtu;
  d.events = event_mode;
  d.ud = ud;
  return d;
}

TransportOptions CliOptions::transport() const {
  TransportOptions t;
  t.signal_every = signal_every;
  return t;
}

po::options_description describe(CliOptions& o) {
  po::options_description verbs("verbs transport (perftest's -d, -i, -x)");
  verbs.add_options()("ib-dev,d", po::value(&o.ib_dev), "RDMA device (default: the first)")(
      "ib-port,i", po::value(&o.ib_port)->default_value(o.ib_port), "device port")(
      "gid-index,x", po::value(&o.gid_text)->default_value(o.gid_text), "GID index, or auto (a RoCE v2 IPv4 GID)")(
      "inline", po::value(&o.inline_bytes)->default_value(o.inline_bytes),
      "inline data asked of the QP (0: send from memory)")(
      "signal-every", po::value(&o.signal_every)->default_value(o.signal_every), "one signaled send in this many")(
      "recv-batch", po::value(&o.recv_batch)->default_value(o.recv_batch), "receives re-posted per chained post")(
      "sq-depth", po::value(&o.sq_depth)->default_value(o.sq_depth), "send queue depth")(
      "rq-depth", po::value(&o.rq_depth)->default_value(o.rq_depth), "receive queue depth (pre-posted receives)")(
      "ib-mtu", po::value(&o.ib_mtu_bytes)->default_value(0),
      "path MTU in bytes (256..4096; 0: the port's active MTU)")(
      "event", po::bool_switch(&o.event_mode), "wait for completions on a completion channel instead of busy polling")(
      "ud", po::bool_switch(&o.ud), "an unreliable datagram QP instead of RC (small AMs only: pingpong, signature)");
  return verbs;
}

void validate(CliOptions& o, const po::variables_map& vm, const std::string& transport, bool small_ams_only,
              int window) {
  if (o.gid_text == "auto") {
    o.gid_index = -1;
  } else {
    std::size_t used = 0;
    try {
      o.gid_index = std::stoi(o.gid_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.gid_text.size() || o.gid_index < 0 || o.gid_index > 255)
      throw UsageError("--gid-index must be auto or an index 0..255, not '" + o.gid_text + "'");
  }
  switch (o.ib_mtu_bytes) {
    case 0:
      o.ib_mtu = 0;
      break;
    case 256:
      o.ib_mtu = 1;
      break;
    case 512:
      o.ib_mtu = 2;
      break;
    case 1024:
      o.ib_mtu = 3;
      break;
    case 2048:
      o.ib_mtu = 4;
      break;
    case 4096:
      o.ib_mtu = 5;
      break;
    default:
      throw UsageError("--ib-mtu must be 256, 512, 1024, 2048 or 4096");
  }
  if (transport != "verbs") cli::refuse_given(vm, {"ib-dev", "event", "ud"}, "verbs");
  cli::check_range("inline", o.inline_bytes, 0, 4096);
  cli::check_range("signal-every", o.signal_every, 1, 4096);
  cli::check_range("recv-batch", o.recv_batch, 1, 512);
  cli::check_range("sq-depth", o.sq_depth, 16, 16384);
  cli::check_range("rq-depth", o.rq_depth, 16, 16384);
  if (o.ud && !small_ams_only)
    throw UsageError("--ud carries small AMs only (--bench pingpong or signature, no --size): bulk needs RDMA on RC");
  if (transport == "verbs" && o.rq_depth < 2 * window + o.recv_batch)
    throw UsageError("--rq-depth must cover twice --window plus --recv-batch, or receives could run out");
}

}  // namespace logpb::verbs
