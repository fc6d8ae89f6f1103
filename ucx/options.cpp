#include "ucx/options.hpp"

#include "common/choices.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;

namespace logpb::ucx {

namespace {
constexpr Choice<Layer> kLayer[] = {{Layer::uct, "uct"}, {Layer::ucp, "ucp"}};
constexpr Choice<ErrMode> kErrMode[] = {{ErrMode::none, "none"}, {ErrMode::peer, "peer"}};
}  // namespace

Layer parse_layer(const std::string& s) {
  return parse_choice(s, kLayer, "--ucx-layer",
                      "(uct: one UCX transport's interface, as ucx_perftest -t am_lat; ucp: UCX's protocol layer, "
                      "as -t ucp_am_lat)");
}
const char* to_string(Layer l) { return choice_name(l, kLayer); }

ErrMode parse_err_mode(const std::string& s) {
  return parse_choice(s, kErrMode, "--ucp-err-mode", "(none: UCP's default; peer: UCP_ERR_HANDLING_MODE_PEER)");
}
const char* to_string(ErrMode m) { return choice_name(m, kErrMode); }

po::options_description describe(CliOptions& o) {
  po::options_description ucx("UCX transport (ucx_perftest's -x, -d)");
  ucx.add_options()("ucx-layer", po::value(&o.ucx_layer)->default_value(o.ucx_layer),
                    "uct: the AM layer over one UCT interface (uct_ep_am_short/bcopy, put/get where the transport "
                    "has them) | ucp: over UCP (ucp_am_send_nbx, ucp_put_nbx/ucp_get_nbx), which picks its "
                    "transports from UCX's environment (UCX_TLS, UCX_NET_DEVICES)")(
      "ucx-tl", po::value(&o.ucx_tl),
      "UCT transport as ucx_info -d names it: posix, sysv, self, tcp, rc_verbs, ud_verbs, rc_mlx5, dc_mlx5, ... "
      "(required with --ucx-layer uct)")(
      "ucx-dev", po::value(&o.ucx_dev),
      "its device: memory, lo, eth0, rxe0:1, mlx5_0:1, ... (default: the first ucx_info -d lists for it)")(
      "ucx-bulk-tl", po::value(&o.ucx_bulk_tl),
      "uct: a second transport for stores and gets, on its first device (cma: the kernel's process_vm_writev and "
      "process_vm_readv); default: the AM transport's own put/get, else stores as AMs")(
      "ucp-err-mode", po::value(&o.ucp_err_mode)->default_value(o.ucp_err_mode),
      "ucp: none, UCP's default (ucx_perftest without -e): every transport is kept, and a lost peer "
      "is UCX's to handle, which on some transports ends the process (ud_verbs: SIGABRT after UCX_UD_VERBS_TIMEOUT) "
      "unless logpbench's watchdog ends the run first | peer: UCP_ERR_HANDLING_MODE_PEER (ucx_perftest -e): a lost "
      "peer ends the run as on every transport (exit 3), and UCP keeps only transports that can report one (in UCX "
      "1.13 not posix or sysv)");
  return ucx;
}

void validate(CliOptions& o, const po::variables_map& vm, const std::string& transport) {
  if (transport != "ucx") {
    cli::refuse_given(vm, {"ucx-layer", "ucx-tl", "ucx-dev", "ucx-bulk-tl", "ucp-err-mode"}, "ucx");
    return;
  }
  TransportOptions& t = o.ucx_options;
  t.layer = parse_layer(o.ucx_layer);
  t.tl = o.ucx_tl;
  t.dev = o.ucx_dev;
  t.bulk_tl = o.ucx_bulk_tl;
  t.err_mode = parse_err_mode(o.ucp_err_mode);
  if (t.layer == Layer::uct && t.tl.empty())
    throw UsageError(
        "--ucx-layer uct needs --ucx-tl NAME (ucx_info -d lists this host's: posix, sysv, tcp, ...), as "
        "ucx_perftest's -x");
  if (t.layer == Layer::ucp) {
    for (const char* k : {"ucx-tl", "ucx-dev", "ucx-bulk-tl"})
      if (vm.count(k) && !vm[k].defaulted())
        throw UsageError(std::string("--") + k +
                         " is for --ucx-layer uct; UCP picks its transports from UCX_TLS and UCX_NET_DEVICES");
  }
  if (!t.dev.empty() && t.tl.empty()) throw UsageError("--ucx-dev needs --ucx-tl");
  if (t.layer == Layer::uct && vm.count("ucp-err-mode") && !vm["ucp-err-mode"].defaulted())
    throw UsageError(
        "--ucp-err-mode is for --ucx-layer ucp (UCP's endpoints; over UCT the interface's error handler, the "
        "job's bootstrap and logpbench's watchdog see a lost peer)");
}

}  // namespace logpb::ucx
