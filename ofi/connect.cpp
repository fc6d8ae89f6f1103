#include "ofi/connect.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <set>
#include <span>
#include <string>

#include <unistd.h>

#include "common/errors.hpp"

namespace logpb::ofi {
namespace {

constexpr std::uint32_t kApiVersion = FI_VERSION(1, 9);  // the oldest API with every call used here

// fi_tostr's rendering ("FI_MSG | FI_RMA"), without its line ends.
std::string str(const void* v, fi_type t) {
  char buf[2048];
  std::string s = fi_tostr_r(buf, sizeof buf, v, t);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string hex(const std::vector<std::uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::uint8_t c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

std::vector<std::uint8_t> unhex(const std::string& s) {
  if (s.size() % 2) throw PeerError("ofi connect: an address of odd length");
  auto v = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw PeerError("ofi connect: an address that is not hex");
  };
  std::vector<std::uint8_t> b(s.size() / 2);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(v(s[2 * i]) << 4 | v(s[2 * i + 1]));
  return b;
}

struct InfoList {
  fi_info* p = nullptr;
  ~InfoList() {
    if (p) fi_freeinfo(p);
  }
};

// The providers fi_getinfo sees with no hints: for an unknown --provider, the names to choose from.
std::string known_providers() {
  InfoList all;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, nullptr, &all.p) != 0) return "(fi_getinfo lists none)";
  std::set<std::string> names;
  for (fi_info* i = all.p; i; i = i->next)
    if (i->fabric_attr && i->fabric_attr->prov_name) names.insert(i->fabric_attr->prov_name);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// What a provider offers when it exists but not with what we ask: its endpoint types and caps.
std::string offers_of(const std::string& provider) {
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(provider.c_str());
  InfoList got;
  const int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &got.p);
  fi_freeinfo(hints);
  if (rc != 0) return "";
  std::set<std::string> seen;
  std::string s;
  for (fi_info* i = got.p; i; i = i->next) {
    const std::string e = std::string(i->fabric_attr->prov_name) + " " + str(&i->ep_attr->type, FI_TYPE_EP_TYPE) +
                          " (" + str(&i->tx_attr->op_flags, FI_TYPE_OP_FLAGS) + ")";
    if (seen.insert(e).second) s += (s.empty() ? "" : "; ") + e;
  }
  return s;
}

struct Attempt {
  std::uint64_t caps;
  const char* what;
};

}  // namespace

Connection::Connection(Ranks& ranks, const TransportOptions& opt)
    : rank_(ranks.rank()), size_(ranks.size()), opt_(opt) {
  try {
    set_universe_size();
    open(opt);
    // What every peer needs to reach us, and what every rank must agree on.
    std::vector<std::uint8_t>& name = name_;
    name.resize(256);
    std::size_t len = name.size();
    fid_t named = opt.ep == EpType::rdm ? &ep_->fid : &pep_->fid;
    long rc = fi_getname(named, name.data(), &len);
    if (rc == -FI_ETOOSMALL) {
      name.resize(len);
      rc = fi_getname(named, name.data(), &len);
    }
    check_setup(rc, "fi_getname");
    name.resize(len);
    const bool virt = info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
    const nlohmann::json mine = {{"ofi",
                                  {{"provider", info_->fabric_attr->prov_name},
                                   {"ep", to_string(opt.ep)},
                                   {"completion", to_string(opt.completion)},
                                   {"bulk", transport_->bulk_path() == BulkPath::rma ? "rma" : "messages"},
                                   {"name", hex(name)},
                                   {"segment_addr", virt ? reinterpret_cast<std::uint64_t>(segment_.data()) : 0},
                                   {"segment_key", segment_mr_ ? fi_mr_key(segment_mr_) : 0},
                                   {"segment_bytes", opt.segment_bytes}}}};
    const nlohmann::json all = ranks.allgather(mine);
    if (!all.is_array() || all.size() != static_cast<std::size_t>(size_))
      throw PeerError("ofi connect: the address exchange returned " + std::to_string(all.size()) + " entries for " +
                      std::to_string(size_) + " ranks");
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      try {
        const nlohmann::json& o = all.at(static_cast<std::size_t>(r)).at("ofi");
        for (const char* k : {"provider", "ep", "completion", "bulk"})
          if (o.at(k) != mine["ofi"][k])
            throw UsageError("ofi: rank " + std::to_string(r) + " runs " + k + " " + o.at(k).dump() + ", rank " +
                             std::to_string(rank_) + " " + mine["ofi"][k].dump() +
                             ": give every rank the same options");
        transport_->set_remote_segment(r, o.at("segment_addr").get<std::uint64_t>(),
                                       o.at("segment_key").get<std::uint64_t>(),
                                       o.at("segment_bytes").get<std::uint32_t>());
      } catch (const nlohmann::json::exception& e) {
        throw PeerError("ofi connect: rank " + std::to_string(r) + " sent no usable address: " + e.what());
      }
    }
    if (opt.ep == EpType::rdm)
      connect_rdm(ranks, all);
    else
      connect_msg(ranks, all);
  } catch (const std::exception& e) {
    ranks.abort(std::string("ofi connect failed on rank ") + std::to_string(rank_) + ": " + e.what());
    throw;
  }
  ranks.barrier();  // ready: every rank's receives are posted
}

void Connection::open(const TransportOptions& opt) {
  find_provider(opt);
  const bool rma = info_->caps & FI_RMA;
  if ((info_->domain_attr->mr_mode & FI_MR_ENDPOINT) && opt.ep == EpType::msg)
    throw UsageError("provider '" + opt.provider +
                     "' binds memory registrations to an endpoint (FI_MR_ENDPOINT), "
                     "which this transport does for --ep rdm only: use --ep rdm");
  if (opt.remote_read && !rma)
    throw UsageError("this method gets (fi_read), and provider '" + opt.provider + "' has no FI_RMA here");
  const std::size_t cq_size = open_domain(opt);
  const bool multi_recv = choose_multi_recv(opt);
  open_endpoint(opt, multi_recv);
  void* segment_desc = register_segment(opt, rma);
  make_transport(opt, multi_recv, rma, segment_desc);
  record_provider(opt, cq_size, multi_recv, rma);
  transport_->set_provider_json(provider_);
}

// fi_getinfo with the hints the methods need, asking for less where the provider lacks it, best first.
// UsageError naming what the provider offers when nothing fits.
void Connection::find_provider(const TransportOptions& opt) {
  // FI_MULTI_RECV only matters on an rdm endpoint (a msg endpoint gets a ring per connection).
  const std::uint64_t multi = opt.ep == EpType::rdm ? FI_MULTI_RECV : 0;
  const Attempt rdm[] = {{FI_MSG | FI_RMA | FI_MULTI_RECV, "FI_MSG | FI_RMA | FI_MULTI_RECV"},
                         {FI_MSG | FI_RMA, "FI_MSG | FI_RMA"},
                         {FI_MSG | FI_MULTI_RECV, "FI_MSG | FI_MULTI_RECV"},
                         {FI_MSG, "FI_MSG"}};
  const Attempt msg[] = {{FI_MSG | FI_RMA, "FI_MSG | FI_RMA"}, {FI_MSG, "FI_MSG"}};
  const std::span<const Attempt> attempts = multi ? std::span<const Attempt>(rdm) : std::span<const Attempt>(msg);
  const std::uint64_t cflag = completion_flag(opt.completion);
  std::string asked;
  for (const Attempt& a : attempts) {
    fi_info* hints = fi_allocinfo();
    if (!hints) throw std::runtime_error("fi_allocinfo failed: out of memory");
    hints->ep_attr->type = opt.ep == EpType::rdm ? FI_EP_RDM : FI_EP_MSG;
    hints->caps = a.caps;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;  // every operation's context is an fi_context2 of ours
    // The registration modes this transport handles (FI_MR_RAW and FI_MR_HMEM it does not).
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->tx_attr->op_flags = cflag;
    // The AM layer's frames of one sender arrive in order (common/transport.hpp), and a store's data
    // messages before its frame.
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->fabric_attr->prov_name = strdup(opt.provider.c_str());
    const int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &info_);
    fi_freeinfo(hints);
    asked += (asked.empty() ? "" : ", then ") + std::string(a.what);
    if (rc == 0) {
      provider_["caps_asked"] = a.what;
      break;
    }
    info_ = nullptr;
    if (rc != -FI_ENODATA) fail_setup(rc, "fi_getinfo", "provider '" + opt.provider + "'");
  }
  if (!info_) {
    const std::string offers = offers_of(opt.provider);
    if (offers.empty())
      throw UsageError("libfabric has no provider '" + opt.provider + "' on this host; fi_getinfo sees: " +
                       known_providers() + " (layered ones as \"core;utility\", e.g. \"tcp;ofi_rxm\")");
    throw UsageError("provider '" + opt.provider + "' offers no " +
                     (opt.ep == EpType::rdm ? "FI_EP_RDM" : "FI_EP_MSG") +
                     " endpoint with FI_MSG, in-order sends (FI_ORDER_SAS) and " + str(&cflag, FI_TYPE_OP_FLAGS) +
                     " (asked " + asked + "); it offers: " + offers +
                     ". Try the other --ep, another --ofi-completion, or a layered provider (\"tcp;ofi_rxm\")");
  }
}

// The fabric, the domain and the one CQ every endpoint completes into; returns the CQ's size.
std::size_t Connection::open_domain(const TransportOptions& opt) {
  const std::uint64_t cflag = completion_flag(opt.completion);
  check_setup(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  check_setup(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
  const int eps = opt.ep == EpType::rdm ? 1 : size_ - 1;
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_DATA;
  cq.wait_obj = FI_WAIT_NONE;  // busy polled
  cq.size = (info_->tx_attr->size + info_->rx_attr->size) * static_cast<std::size_t>(std::max(eps, 1));
  check_setup(fi_cq_open(domain_, &cq, &cq_, nullptr), "fi_cq_open");
  info_->tx_attr->op_flags = cflag;
  return cq.size;
}

// Pre-posted receives: FI_MULTI_RECV buffers or a ring of one-message buffers (--ofi-recv).
bool Connection::choose_multi_recv(const TransportOptions& opt) {
  // shm 1.17 refuses to take a multi-receive buffer back (-FI_ENOMEM) while unexpected messages hold its
  // receive entries, and a flood of stores then never drains (seen here): auto gives it a ring.
  const bool has_multi = info_->caps & FI_MULTI_RECV;
  const bool shm = std::string(info_->fabric_attr->prov_name) == "shm";
  if (opt.recv == RecvMode::multi && !has_multi)
    throw UsageError("--ofi-recv multi: provider '" + opt.provider + "' has no FI_MULTI_RECV here");
  const bool multi_recv =
      opt.ep == EpType::rdm && has_multi && (opt.recv == RecvMode::multi || (opt.recv == RecvMode::automatic && !shm));
  provider_["recv_mode"] = std::string(to_string(opt.recv)) + " -> " + (multi_recv ? "multi" : "ring") +
                           (opt.recv == RecvMode::automatic && shm && has_multi
                                ? " (shm: its multi-receive stalls under a flood of stores, -FI_ENOMEM on re-posting)"
                                : "");
  return multi_recv;
}

// shm names its endpoint's region in /dev/shm after the process id unless told otherwise ("PID:0:0" in
// libfabric 1.17). A region outlives a process that was killed, and a later process given the same id
// then fails fi_enable with EBUSY (seen in a CI run: a method over shm refused, with ten such regions left
// by the suite's rank-death tests). A name of this process's own, with a random part, meets none of them.
void Connection::name_shm_region() {
  if (std::string(info_->fabric_attr->prov_name) != "shm" || info_->addr_format != FI_ADDR_STR) return;
  char own[64];
  std::snprintf(own, sizeof own, "logpb-%d-%08x", static_cast<int>(getpid()), std::random_device{}());
  std::free(info_->src_addr);
  info_->src_addr = strdup(own);
  if (!info_->src_addr) throw std::runtime_error("strdup failed: out of memory");
  info_->src_addrlen = std::strlen(own) + 1;
  provider_["shm_region"] = own;
}

// rdm: the endpoint, bound to the AV and the CQ; msg: the passive endpoint the peers connect to.
void Connection::open_endpoint(const TransportOptions& opt, bool multi_recv) {
  if (opt.ep == EpType::rdm) {
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    av.count = static_cast<std::size_t>(size_);
    check_setup(fi_av_open(domain_, &av, &av_, nullptr), "fi_av_open");
    name_shm_region();
    check_setup(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
    check_setup(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind (address vector)");
    check_setup(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
    check_setup(fi_enable(ep_), "fi_enable");
    if (multi_recv) {
      // A multi-receive buffer is released once less than one whole message fits in what is left. Set
      // once the endpoint is enabled: shm 1.17 keeps the option in its receive context, made by fi_enable.
      std::size_t min = (sizeof(am::Frame) + kPayloadMax + 63) / 64 * 64;
      check_setup(fi_setopt(&ep_->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min),
                  "fi_setopt (FI_OPT_MIN_MULTI_RECV)");
    }
  } else {
    fi_eq_attr eq{};
    eq.wait_obj = FI_WAIT_UNSPEC;
    check_setup(fi_eq_open(fabric_, &eq, &eq_, nullptr), "fi_eq_open");
    check_setup(fi_passive_ep(fabric_, info_, &pep_, nullptr), "fi_passive_ep");
    check_setup(fi_pep_bind(pep_, &eq_->fid, 0), "fi_pep_bind");
    check_setup(fi_listen(pep_), "fi_listen", "the provider's address (fi_info -p " + opt.provider + ")");
  }
}

// The segment: registered for the peers' writes and reads when the provider has RMA, and for our own
// sends and receives from it when it wants local registration. Returns its descriptor (null: none).
void* Connection::register_segment(const TransportOptions& opt, bool rma) {
  segment_.resize((opt.segment_bytes + sizeof(Page) - 1) / sizeof(Page));
  const bool mr_local = info_->domain_attr->mr_mode & FI_MR_LOCAL;
  void* segment_desc = nullptr;
  if (rma || mr_local) {
    const std::uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | (rma ? FI_REMOTE_READ | FI_REMOTE_WRITE : 0);
    segment_desc = register_memory(segment_.data(), opt.segment_bytes, access);
    segment_mr_ = mrs_.back();
  }
  return segment_desc;
}

void Connection::make_transport(const TransportOptions& opt, bool multi_recv, bool rma, void* segment_desc) {
  const bool mr_local = info_->domain_attr->mr_mode & FI_MR_LOCAL;
  Setup s;
  s.rank = rank_;
  s.size = size_;
  s.ep = opt.ep;
  s.cq = cq_;
  s.eq = eq_;
  s.inject_size = info_->tx_attr->inject_size;
  s.tx_size = info_->tx_attr->size;
  s.rx_size = info_->rx_attr->size;
  s.multi_recv = multi_recv;
  s.mr_local = mr_local;
  s.rma = rma;
  s.order_saw = info_->tx_attr->msg_order & FI_ORDER_SAW;
  s.completion = opt.completion;
  s.segment = segment_.data()->b;
  s.segment_bytes = opt.segment_bytes;
  s.segment_desc = segment_desc;
  s.register_local = [this, mr_local](void* buf, std::size_t len, std::uint64_t access) -> void* {
    return mr_local ? register_memory(buf, len, access) : nullptr;
  };
  s.yield_when_idle = opt.yield_when_idle;
  s.peer_alive = [] { return true; };  // the job's view replaces it once connected (connect_rdm, connect_msg)
  transport_ = std::make_unique<Transport>(std::move(s));
}

// What the provider reported, for meta.ofi and the transport's describe().
// libfabric sizes what a utility provider opens per peer by FI_UNIVERSE_SIZE, 256 by default: ofi_rxm over
// verbs asks for a completion queue of 256 times its receive queue, more than rdma_rxe allows, and
// fi_enable fails with EINVAL (fi_pingpong too). The job knows how many ranks it has: unless the user set
// FI_UNIVERSE_SIZE, it is the job's size. Set before the first fi_getinfo, when the providers read it.
void Connection::set_universe_size() {
  static const bool given = std::getenv("FI_UNIVERSE_SIZE") != nullptr;  // by the user, before any of ours
  if (!given) ::setenv("FI_UNIVERSE_SIZE", std::to_string(std::max(size_, 2)).c_str(), 0);
  provider_["universe_size"] = {
      {"value", std::getenv("FI_UNIVERSE_SIZE")},
      {"from", given ? "FI_UNIVERSE_SIZE, set by the user" : "the job's ranks (FI_UNIVERSE_SIZE unset)"}};
}

void Connection::record_provider(const TransportOptions& opt, std::size_t cq_size, bool multi_recv, bool rma) {
  const fi_info* i = info_;
  const std::uint32_t api = fi_version();
  provider_.update(
      {{"provider", i->fabric_attr->prov_name},
       {"provider_version", std::to_string(FI_MAJOR(i->fabric_attr->prov_version)) + "." +
                                std::to_string(FI_MINOR(i->fabric_attr->prov_version))},
       {"fabric", i->fabric_attr->name ? i->fabric_attr->name : ""},
       {"domain", i->domain_attr->name ? i->domain_attr->name : ""},
       {"api_version", std::to_string(FI_MAJOR(api)) + "." + std::to_string(FI_MINOR(api))},
       {"api_version_asked", std::to_string(FI_MAJOR(kApiVersion)) + "." + std::to_string(FI_MINOR(kApiVersion))},
       {"ep_type", str(&i->ep_attr->type, FI_TYPE_EP_TYPE)},
       {"protocol", str(&i->ep_attr->protocol, FI_TYPE_PROTOCOL)},
       {"caps", str(&i->caps, FI_TYPE_CAPS)},
       {"mode", str(&i->mode, FI_TYPE_MODE)},
       {"addr_format", str(&i->addr_format, FI_TYPE_ADDR_FORMAT)},
       {"inject_size", i->tx_attr->inject_size},
       {"max_msg_size", i->ep_attr->max_msg_size},
       {"tx_size", i->tx_attr->size},
       {"rx_size", i->rx_attr->size},
       {"cq_size", cq_size},
       {"tx_msg_order", str(&i->tx_attr->msg_order, FI_TYPE_MSG_ORDER)},
       {"rx_msg_order", str(&i->rx_attr->msg_order, FI_TYPE_MSG_ORDER)},
       {"tx_op_flags", str(&i->tx_attr->op_flags, FI_TYPE_OP_FLAGS)},
       {"mr_mode", str(&i->domain_attr->mr_mode, FI_TYPE_MR_MODE)},
       {"mr_key_size", i->domain_attr->mr_key_size},
       {"threading", str(&i->domain_attr->threading, FI_TYPE_THREADING)},
       {"data_progress", str(&i->domain_attr->data_progress, FI_TYPE_PROGRESS)},
       {"control_progress", str(&i->domain_attr->control_progress, FI_TYPE_PROGRESS)},
       {"multi_recv", multi_recv},
       {"rma", rma},
       {"addressing", opt.ep == EpType::rdm ? "one endpoint, every rank in one address vector (FI_AV_TABLE)"
                                            : "a passive endpoint per rank; one connection per peer "
                                              "(the higher rank connects)"}});
}

void* Connection::register_memory(void* buf, std::size_t len, std::uint64_t access) {
  fid_mr* mr = nullptr;
  const std::uint64_t key = next_key_++;  // used unless the provider picks keys (FI_MR_PROV_KEY)
  check_setup(fi_mr_reg(domain_, buf, len, access, 0, key, 0, &mr, nullptr), "fi_mr_reg",
              "memory of " + std::to_string(len) + " bytes (ulimit -l: locked memory)");
  mrs_.push_back(mr);
  if (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    fid_ep* ep = ep_ ? ep_ : nullptr;
    if (!ep) throw std::runtime_error("ofi: FI_MR_ENDPOINT registration before an endpoint exists");
    check_setup(fi_mr_bind(mr, &ep->fid, 0), "fi_mr_bind");
    check_setup(fi_mr_enable(mr), "fi_mr_enable");
  }
  return fi_mr_desc(mr);
}

void Connection::connect_rdm(Ranks& ranks, const nlohmann::json& all) {
  std::vector<fi_addr_t> addrs(static_cast<std::size_t>(size_), FI_ADDR_UNSPEC);
  for (int r = 0; r < size_; ++r) {
    const auto name = unhex(all.at(static_cast<std::size_t>(r)).at("ofi").at("name").get<std::string>());
    const int n = fi_av_insert(av_, name.data(), 1, &addrs[static_cast<std::size_t>(r)], 0, nullptr);
    if (n != 1) fail_setup(n < 0 ? n : -FI_EINVAL, "fi_av_insert", "rank " + std::to_string(r) + "'s address");
  }
  transport_->attach_rdm(ep_, addrs);
  transport_->set_peer_alive([&ranks] { return ranks.all_alive(); }, info_->fabric_attr->prov_name);
}

fid_ep* Connection::open_msg_ep(fi_info* info, int peer) {
  fid_ep* ep = nullptr;
  peer_ids_[static_cast<std::size_t>(peer)] = peer;
  info->tx_attr->op_flags = info_->tx_attr->op_flags;
  check_setup(fi_endpoint(domain_, info, &ep, &peer_ids_[static_cast<std::size_t>(peer)]), "fi_endpoint (connection)");
  eps_[static_cast<std::size_t>(peer)] = ep;
  check_setup(fi_ep_bind(ep, &eq_->fid, 0), "fi_ep_bind (event queue)");
  check_setup(fi_ep_bind(ep, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind (completion queue)");
  check_setup(fi_enable(ep), "fi_enable (connection)");
  transport_->attach_msg(peer, ep);  // its receives are posted before the peer can send
  return ep;
}

void Connection::connect_msg(Ranks& ranks, const nlohmann::json& all) {
  eps_.assign(static_cast<std::size_t>(size_), nullptr);
  peer_ids_.assign(static_cast<std::size_t>(size_), -1);
  // Each pair once: the higher rank connects to the lower one's passive endpoint, naming itself.
  for (int r = 0; r < rank_; ++r) {
    const auto name = unhex(all.at(static_cast<std::size_t>(r)).at("ofi").at("name").get<std::string>());
    fid_ep* ep = open_msg_ep(info_, r);
    const int me = rank_;
    check_setup(fi_connect(ep, name.data(), &me, sizeof me), "fi_connect", "rank " + std::to_string(r) + "'s address");
  }
  std::vector<bool> up(static_cast<std::size_t>(size_), false);
  int connected = 0;
  const double timeout = ranks.timeout() > 0 ? ranks.timeout() : 30;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  alignas(8) std::byte buf[sizeof(fi_eq_cm_entry) + 64];
  while (connected < size_ - 1) {
    throw_if_interrupted();
    if (std::chrono::steady_clock::now() > deadline)
      throw PeerError("ofi connect: " + std::to_string(size_ - 1 - connected) + " connection(s) not up after " +
                      std::to_string(timeout) + " s");
    if (!ranks.all_alive()) throw PeerError("ofi connect: a rank is gone while connecting");
    std::uint32_t event = 0;
    const ssize_t n = fi_eq_sread(eq_, &event, buf, sizeof buf, 100, 0);
    if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT) continue;
    if (n == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      fi_eq_readerr(eq_, &err, 0);
      int who = -1;
      if (err.fid && err.fid->context) who = *static_cast<int*>(err.fid->context);
      char text[256] = {};
      const char* prov = fi_eq_strerror(eq_, err.prov_errno, err.err_data, text, sizeof text);
      throw PeerError("ofi connect: the connection " +
                      (who >= 0 ? "with rank " + std::to_string(who) : std::string("")) +
                      " failed: " + fi_strerror(err.err) + "; the provider says: " + (prov ? prov : "nothing"));
    }
    if (n < 0) fail_setup(n, "fi_eq_sread");
    auto* entry = reinterpret_cast<fi_eq_cm_entry*>(buf);
    if (event == FI_CONNREQ) {
      int peer = -1;
      if (static_cast<std::size_t>(n) >= sizeof(fi_eq_cm_entry) + sizeof peer)
        std::memcpy(&peer, entry->data, sizeof peer);
      if (peer <= rank_ || peer >= size_ || eps_[static_cast<std::size_t>(peer)]) {
        fi_reject(pep_, entry->info->handle, nullptr, 0);
        fi_freeinfo(entry->info);
        continue;  // not one of this job's ranks that should connect here
      }
      fid_ep* ep = open_msg_ep(entry->info, peer);
      fi_freeinfo(entry->info);
      check_setup(fi_accept(ep, nullptr, 0), "fi_accept");
    } else if (event == FI_CONNECTED) {
      const int who = entry->fid && entry->fid->context ? *static_cast<int*>(entry->fid->context) : -1;
      if (who >= 0 && !up[static_cast<std::size_t>(who)]) {
        up[static_cast<std::size_t>(who)] = true;
        ++connected;
      }
    } else if (event == FI_SHUTDOWN) {
      throw PeerError("ofi connect: a connection was shut down while connecting");
    }
  }
  transport_->set_peer_alive([&ranks] { return ranks.all_alive(); }, info_->fabric_attr->prov_name);
}

Connection::~Connection() {
  transport_.reset();
  for (fid_ep* ep : eps_)
    if (ep) fi_close(&ep->fid);
  if (ep_) fi_close(&ep_->fid);
  if (pep_) fi_close(&pep_->fid);
  for (fid_mr* mr : mrs_) fi_close(&mr->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (eq_) fi_close(&eq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
}

}  // namespace logpb::ofi
