#include "dpdk/options.hpp"

#include <string>

#include "common/errors.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;

namespace logpb::dpdk {

po::options_description describe(CliOptions& o) {
  const std::string reorder_help =
      "inject reordering: hold this fraction of received frames back until the next one has passed (at most " +
      std::to_string(static_cast<int>(kReorderHoldUs)) + " us, then delivered late)";
  po::options_description dpdk("DPDK transport");
  dpdk.add_options()("eal", po::value(&o.eal),
                     "EAL arguments, passed through (e.g. \"--vdev=net_af_xdp0,iface=veth0 -l 1\")")(
      "dpdk-port", po::value(&o.dpdk_port)->default_value(o.dpdk_port), "ethdev port id (-1: the only one)")(
      "burst", po::value(&o.burst)->default_value(o.burst), "rx burst size")(
      "tx-burst", po::value(&o.tx_burst)->default_value(o.tx_burst),
      "bw, flood: hand a stream's sends to the PMD this many at a time (1: each send in its own call, as every other "
      "method does)")("rx-ring", po::value(&o.rx_ring)->default_value(o.rx_ring), "rx descriptors")(
      "tx-ring", po::value(&o.tx_ring)->default_value(o.tx_ring), "tx descriptors")(
      "mtu", po::value(&o.mtu)->default_value(o.mtu), "port MTU; bulk data is cut to it (0: the port's default)")(
      "drop-rate", po::value(&o.drop_rate)->default_value(o.drop_rate),
      "inject loss: drop this fraction of received frames")("dup-rate",
                                                            po::value(&o.dup_rate)->default_value(o.dup_rate),
                                                            "inject duplicates: receive this fraction of frames twice")(
      "reorder-rate", po::value(&o.reorder_rate)->default_value(o.reorder_rate), reorder_help.c_str())(
      "no-huge", po::bool_switch(&o.no_huge), "run the EAL without hugepages (slower; says so in meta)")(
      "reflector", po::bool_switch(&o.reflector),
      "local: the peer is a reflector such as testpmd macswap, not logpbench")(
      "link-timeout", po::value(&o.link_timeout_s)->default_value(o.link_timeout_s), "seconds to wait for the link")(
      "loss-timeout", po::value(&o.loss_timeout_s)->default_value(o.loss_timeout_s),
      "seconds of silence after which outstanding messages count as lost (-1: 50 ms on lossy NIs, never on shm)");
  return dpdk;
}

void validate(const CliOptions& o, const po::variables_map& vm, const std::string& transport, const std::string& mode,
              bool batches_sends) {
  if (transport != "dpdk")
    cli::refuse_given(vm, {"eal", "reflector", "drop-rate", "dup-rate", "reorder-rate", "no-huge"}, "dpdk");
  if (o.reflector && mode != "local") throw UsageError("--reflector is for local mode: the reflector is the peer");
  cli::check_range("drop-rate", o.drop_rate, 0, 0.5);
  cli::check_range("dup-rate", o.dup_rate, 0, 0.5);
  cli::check_range("reorder-rate", o.reorder_rate, 0, 0.5);
  cli::check_range("burst", o.burst, 1, 512);
  cli::check_range("tx-burst", o.tx_burst, 1, 128);
  if (o.tx_burst > 1 && transport != "dpdk") throw UsageError("--tx-burst belongs to --transport dpdk");
  if (o.tx_burst > 1 && !batches_sends)
    throw UsageError(
        "--tx-burst batches a stream's sends, so a send is no longer paid in the call that makes it: only "
        "--bench bw and flood, which measure rates, take it");
  cli::check_range("rx-ring", o.rx_ring, 16, 65536);
  cli::check_range("tx-ring", o.tx_ring, 16, 65536);
  cli::check_range("mtu", o.mtu, 0, 65535);
  cli::check_range("link-timeout", o.link_timeout_s, 0.01, 3600);
  if (o.loss_timeout_s != -1) cli::check_range("loss-timeout", o.loss_timeout_s, 0, 3600);
}

}  // namespace logpb::dpdk
