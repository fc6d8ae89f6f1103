#include "ucx/ucp_connect.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/environment.hpp"
#include "common/errors.hpp"

namespace logpb::ucx {

namespace {

// What a UCX print routine writes to a stream, as text.
template <class Print>
std::string printed(Print&& print) {
  char* buf = nullptr;
  std::size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return "";
  print(f);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

nlohmann::json lines(const std::string& s) {
  nlohmann::json a = nlohmann::json::array();
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    const std::size_t start = l.find_first_not_of("# ");
    if (start != std::string::npos) a.push_back(l.substr(start));
  }
  return a;
}

}  // namespace

UcpConnection::UcpConnection(Ranks& ranks, const TransportOptions& opt)
    : segment_bytes_(opt.segment_bytes), rank_(ranks.rank()), size_(ranks.size()) {
  // UCP may pick ud_verbs on any RDMA device here (UCX_TLS, UCX_NET_DEVICES): the check off on every
  // software one, before UCX reads its configuration.
  const std::string workaround = soft_roce_ud_workaround("");
  ucp_config_t* config = nullptr;
  check_setup(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read", "check UCX_* in the environment");
  ucp_params_t p{};
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_AM | UCP_FEATURE_RMA;
  const ucs_status_t s = ucp_init(&p, config, &context_);
  ucp_config_release(config);
  check_setup(s, "ucp_init", "UCX_TLS may allow no transport this host has (ucx_info -d lists them)");
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  check_setup(ucp_worker_create(context_, &wp, &worker_), "ucp_worker_create");

  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.address = nullptr;
  mp.length = segment_bytes_;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  check_setup(ucp_mem_map(context_, &mp, &memh_), "ucp_mem_map", "the segment");
  ucp_mem_attr_t ma{};
  ma.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  check_setup(ucp_mem_query(memh_, &ma), "ucp_mem_query");
  segment_ = static_cast<std::byte*>(ma.address);
  void* rkey_buf = nullptr;
  std::size_t rkey_len = 0;
  check_setup(ucp_rkey_pack(context_, memh_, &rkey_buf, &rkey_len), "ucp_rkey_pack");
  const std::string rkey_hex = hex(rkey_buf, rkey_len);
  ucp_rkey_buffer_release(rkey_buf);

  UcpSetup su;
  su.rank = rank_;
  su.size = size_;
  su.worker = worker_;
  su.segment = segment_;
  su.segment_bytes = segment_bytes_;
  su.peer_alive = [] { return true; };
  su.yield_when_idle = opt.yield_when_idle;
  transport_ = std::make_unique<UcpTransport>(std::move(su));
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = kAmId;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = &UcpTransport::on_am;
  hp.arg = transport_.get();
  check_setup(ucp_worker_set_am_recv_handler(worker_, &hp), "ucp_worker_set_am_recv_handler");

  ucp_address_t* addr = nullptr;
  std::size_t addr_len = 0;
  check_setup(ucp_worker_get_address(worker_, &addr, &addr_len), "ucp_worker_get_address");
  const nlohmann::json mine = {
      {"worker", hex(addr, addr_len)}, {"segment", reinterpret_cast<std::uint64_t>(segment_)}, {"rkey", rkey_hex}};
  ucp_worker_release_address(worker_, addr);
  const nlohmann::json all = ranks.allgather(mine);

  eps_.assign(size_, nullptr);
  rkeys_.assign(size_, nullptr);
  std::vector<UcpPeer> peers(size_);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const auto wa = unhex(all[r].at("worker").get<std::string>(), "worker address");
    ucp_ep_params_t ep{};
    // --ucp-err-mode none, UCP's default and ucx_perftest's without -e: a peer's death is seen through
    // the job's bootstrap and the call guard, and UCP keeps every transport (some have no peer-failure
    // mode). peer: UCP tells a lost peer to UcpTransport::on_ep_error, and picks only transports that can.
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(wa.data());
    if (opt.err_mode == ErrMode::peer) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcpTransport::on_ep_error;
      ep.err_handler.arg = transport_.get();
    }
    check_setup(ucp_ep_create(worker_, &ep, &eps_[r]), "ucp_ep_create",
                "to rank " + std::to_string(r) +
                    (opt.err_mode == ErrMode::peer
                         ? " with --ucp-err-mode peer: no transport in UCX_TLS can report a lost peer to it (posix "
                           "and sysv cannot; tcp, rc and ud can), or use --ucp-err-mode none"
                         : ""));
    const auto rk = unhex(all[r].at("rkey").get<std::string>(), "remote key");
    check_setup(ucp_ep_rkey_unpack(eps_[r], rk.data(), &rkeys_[r]), "ucp_ep_rkey_unpack");
    peers[r] = {eps_[r], all[r].at("segment").get<std::uint64_t>(), rkeys_[r]};
  }
  transport_->set_peers(std::move(peers));
  describe_ = {{"layer", "ucp"},
               {"err_mode", to_string(opt.err_mode)},
               {"version", ucp_get_version_string()},
               {"environment", environment_with_prefix("UCX_")},
               {"context", lines(printed([&](FILE* f) { ucp_context_print_info(context_, f); }))},
               {"endpoint", record(rank_ == 0 ? 1 : 0)}};
  if (!workaround.empty()) describe_["workarounds"] = {workaround};
  transport_->set_describe_head(describe_);
  transport_->set_peer_alive([&ranks] { return ranks.all_alive(); }, "UCP");
  ranks.barrier();  // ready: every rank's endpoints exist and its handler is set
}

// What UCP chose for the endpoint to `peer`: its transports per lane and the protocol thresholds
// (ucp_ep_print_info), as lines.
nlohmann::json UcpConnection::record(int peer) const {
  if (peer >= size_ || !eps_[peer]) return nullptr;
  return {{"peer", peer}, {"info", lines(printed([&](FILE* f) { ucp_ep_print_info(eps_[peer], f); }))}};
}

UcpConnection::~UcpConnection() {
  transport_.reset();
  UcpTransport::closing = true;  // the requests the closes below cancel belong to no transport now
  for (ucp_rkey_h k : rkeys_)
    if (k) ucp_rkey_destroy(k);
  for (ucp_ep_h e : eps_) {
    if (!e) continue;
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(e, &rp);
    if (r && !UCS_PTR_IS_ERR(r)) {
      for (int i = 0; i < 100000 && ucp_request_check_status(r) == UCS_INPROGRESS; ++i) ucp_worker_progress(worker_);
      ucp_request_free(r);
    }
  }
  if (memh_) ucp_mem_unmap(context_, memh_);
  if (worker_) ucp_worker_destroy(worker_);
  transport_.reset();
  if (context_) ucp_cleanup(context_);
}

}  // namespace logpb::ucx
