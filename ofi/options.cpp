#include "ofi/options.hpp"

#include "common/choices.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"

namespace po = boost::program_options;

namespace logpb::ofi {

namespace {
constexpr Choice<EpType> kEp[] = {{EpType::rdm, "rdm"}, {EpType::msg, "msg"}};
constexpr Choice<RecvMode> kRecv[] = {{RecvMode::automatic, "auto"}, {RecvMode::multi, "multi"}, {RecvMode::ring, "ring"}};
constexpr Choice<Completion> kCompletion[] = {
    {Completion::inject, "inject"}, {Completion::transmit, "transmit"}, {Completion::delivery, "delivery"}};
}  // namespace

EpType parse_ep_type(const std::string& s) {
  return parse_choice(s, kEp, "--ep",
                      "(rdm: reliable datagrams, one endpoint, every peer in its address vector; msg: one connected "
                      "endpoint per peer)");
}
const char* to_string(EpType e) { return choice_name(e, kEp); }
RecvMode parse_recv_mode(const std::string& s) { return parse_choice(s, kRecv, "--ofi-recv"); }
const char* to_string(RecvMode r) { return choice_name(r, kRecv); }
Completion parse_completion(const std::string& s) { return parse_choice(s, kCompletion, "--ofi-completion"); }
const char* to_string(Completion c) { return choice_name(c, kCompletion); }

po::options_description describe(CliOptions& o) {
  po::options_description ofi("libfabric transport (fabtests' -p)");
  ofi.add_options()("provider", po::value(&o.provider),
                    "libfabric provider as fi_info names it: tcp, shm, \"tcp;ofi_rxm\", \"udp;ofi_rxd\", "
                    "verbs, efa, psm3, ... (required with --transport ofi)")(
      "ep", po::value(&o.ofi_ep)->default_value(o.ofi_ep),
      "endpoint type: rdm (reliable datagrams, one endpoint and an "
      "address vector of every rank) | msg (one connection per peer)")(
      "ofi-completion", po::value(&o.ofi_completion)->default_value(o.ofi_completion),
      "what a send's local completion waits for (flood, overlap, availability): inject (buffer reusable: fi_inject "
      "returns complete) | transmit (FI_TRANSMIT_COMPLETE) | delivery (FI_DELIVERY_COMPLETE: in the peer's buffer)")(
      "ofi-recv", po::value(&o.ofi_recv)->default_value(o.ofi_recv),
      "pre-posted receives: multi (FI_MULTI_RECV buffers, rdm only) | ring (one-message buffers) | auto (multi where "
      "the provider has it, except shm, whose multi-receive stalls under a flood)");
  return ofi;
}

void validate(CliOptions& o, const po::variables_map& vm, const std::string& transport) {
  if (transport != "ofi") {
    cli::refuse_given(vm, {"provider", "ep", "ofi-completion", "ofi-recv"}, "ofi");
    return;
  }
  if (o.provider.empty())
    throw UsageError(
        "--transport ofi needs --provider NAME (fi_info -l lists this host's, e.g. tcp, shm, "
        "\"tcp;ofi_rxm\", \"udp;ofi_rxd\")");
  TransportOptions& t = o.ofi_options;
  t.provider = o.provider;
  t.ep = parse_ep_type(o.ofi_ep);
  t.completion = parse_completion(o.ofi_completion);
  t.recv = parse_recv_mode(o.ofi_recv);
  if (t.recv == RecvMode::multi && t.ep == EpType::msg)
    throw UsageError("--ofi-recv multi is for --ep rdm: a msg endpoint gets a ring per connection");
}

}  // namespace logpb::ofi
