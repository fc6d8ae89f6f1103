#include "ucx/uct_connect.hpp"

#include <x86intrin.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/results.hpp"

namespace logpb::ucx {

namespace {

constexpr std::uint64_t kAllocAlign = 4096;

// The bare loop's messages (UctConnection::measure_floor): an AM id of their own, the round trip's number
// as am_short's header, and this header for the requester's last message.
constexpr std::uint8_t kFloorAmId = kAmId + 1;
constexpr std::uint64_t kFloorStop = ~std::uint64_t{0};

// Every transport/device pair UCT sees on this host, "tl/dev", as ucx_info -d lists them.
struct Found {
  bool found = false;
  std::vector<std::string> seen;
};

// The largest am_short the interface takes, header included (0: none): UctCaps::am_short, and what the
// bare loop (measure_floor) needs for its 64-byte messages.
std::size_t am_short_max(const uct_iface_attr_t& a) {
  return (a.cap.flags & UCT_IFACE_FLAG_AM_SHORT) ? a.cap.am.max_short : 0;
}

nlohmann::json iface_caps(const uct_iface_attr_t& a) {
  const std::uint64_t f = a.cap.flags;
  auto has = [&](std::uint64_t bit) { return (f & bit) != 0; };
  nlohmann::json ops = nlohmann::json::array();
  for (auto [bit, name] : {std::pair{UCT_IFACE_FLAG_AM_SHORT, "am_short"},
                           {UCT_IFACE_FLAG_AM_BCOPY, "am_bcopy"},
                           {UCT_IFACE_FLAG_AM_ZCOPY, "am_zcopy"},
                           {UCT_IFACE_FLAG_PUT_SHORT, "put_short"},
                           {UCT_IFACE_FLAG_PUT_BCOPY, "put_bcopy"},
                           {UCT_IFACE_FLAG_PUT_ZCOPY, "put_zcopy"},
                           {UCT_IFACE_FLAG_GET_SHORT, "get_short"},
                           {UCT_IFACE_FLAG_GET_BCOPY, "get_bcopy"},
                           {UCT_IFACE_FLAG_GET_ZCOPY, "get_zcopy"},
                           {UCT_IFACE_FLAG_CONNECT_TO_IFACE, "connect_to_iface"},
                           {UCT_IFACE_FLAG_CONNECT_TO_EP, "connect_to_ep"}})
    if (has(bit)) ops.push_back(name);
  return {
      {"operations", ops},
      {"am_max_short", am_short_max(a)},
      {"am_max_bcopy", has(UCT_IFACE_FLAG_AM_BCOPY) ? a.cap.am.max_bcopy : 0},
      {"am_max_zcopy", has(UCT_IFACE_FLAG_AM_ZCOPY) ? a.cap.am.max_zcopy : 0},
      {"put_max_short", has(UCT_IFACE_FLAG_PUT_SHORT) ? a.cap.put.max_short : 0},
      {"put_max_bcopy", has(UCT_IFACE_FLAG_PUT_BCOPY) ? a.cap.put.max_bcopy : 0},
      {"put_max_zcopy", has(UCT_IFACE_FLAG_PUT_ZCOPY) ? a.cap.put.max_zcopy : 0},
      {"get_max_bcopy", has(UCT_IFACE_FLAG_GET_BCOPY) ? a.cap.get.max_bcopy : 0},
      {"get_max_zcopy", has(UCT_IFACE_FLAG_GET_ZCOPY) ? a.cap.get.max_zcopy : 0},
      // UCT's own estimates (uct_iface_query), what UCP's transport selection weighs: seconds.
      {"estimate_latency_ns", a.latency.c * 1e9},
      {"estimate_latency_ns_per_ep", a.latency.m * 1e9},
      {"estimate_overhead_ns", a.overhead * 1e9},
      {"estimate_bandwidth_MBps", {{"dedicated", a.bandwidth.dedicated / 1e6}, {"shared", a.bandwidth.shared / 1e6}}},
      {"priority", a.priority},
      {"device_address_bytes", a.device_addr_len},
      {"iface_address_bytes", a.iface_addr_len},
      {"ep_address_bytes", a.ep_addr_len}};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

UctConnection::UctConnection(Ranks& ranks, const TransportOptions& opt)
    : segment_bytes_(opt.segment_bytes), rank_(ranks.rank()), size_(ranks.size()) {
  check_setup(uct_query_components(&components_, &n_components_), "uct_query_components");
  check_setup(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async_), "ucs_async_context_create");
  check_setup(uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &worker_), "uct_worker_create");
  open_iface(am_, opt.tl, opt.dev);
  if (!(am_.attr.cap.flags & UCT_IFACE_FLAG_AM_BCOPY) && !(am_.attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT))
    throw UsageError("UCT transport " + am_.tl + "/" + am_.dev +
                     " has no active messages (it is a bulk path: give it as --ucx-bulk-tl beside an AM transport, "
                     "e.g. --ucx-tl posix --ucx-bulk-tl " +
                     am_.tl + ")");
  separate_bulk_ = !opt.bulk_tl.empty();
  if (separate_bulk_) open_iface(bulk_, opt.bulk_tl, "");
  Iface& bulk = separate_bulk_ ? bulk_ : am_;
  allocate_segment(opt, bulk);
  const UctCaps c = caps(opt, bulk);

  UctSetup s;
  s.rank = rank_;
  s.size = size_;
  s.worker = worker_;
  s.caps = c;
  s.segment = segment_;
  s.segment_bytes = segment_bytes_;
  s.segment_memh = memh_;
  s.staging = staging_;
  s.staging_memh = staging_memh_;
  s.peer_alive = [] { return true; };
  s.yield_when_idle = opt.yield_when_idle;
  transport_ = std::make_unique<UctTransport>(std::move(s));
  error_target_ = transport_.get();
  check_setup(uct_iface_set_am_handler(am_.iface, kAmId, &UctTransport::on_am, transport_.get(), 0),
              "uct_iface_set_am_handler");
  uct_iface_progress_enable(am_.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
  if (separate_bulk_) uct_iface_progress_enable(bulk_.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

  nlohmann::json mine = {{"tl", am_.tl},
                         {"dev", am_.dev},
                         {"segment", reinterpret_cast<std::uint64_t>(segment_)},
                         {"rkey", hex(rkey_packed_.data(), rkey_packed_.size())}};
  eps_.assign(size_, nullptr);
  mine["am"] = my_addresses(am_, eps_, size_);
  if (separate_bulk_) {
    bulk_eps_.assign(size_, nullptr);
    mine["bulk"] = my_addresses(bulk_, bulk_eps_, size_);
  }
  const nlohmann::json all = ranks.allgather(mine);
  for (int r = 0; r < size_; ++r)
    if (all[r].at("tl") != am_.tl)
      throw UsageError("ucx: rank " + std::to_string(r) + " runs UCT transport " + all[r].at("tl").get<std::string>() +
                       ", rank " + std::to_string(rank_) + " " + am_.tl);
  connect(ranks, am_, eps_, all, "am");
  if (separate_bulk_) connect(ranks, bulk_, bulk_eps_, all, "bulk");

  std::vector<UctPeer> peers(size_);
  rkeys_.assign(size_, {});
  rkey_held_.assign(size_, false);
  const bool rma = c.put_bcopy || c.put_zcopy || c.get_bcopy || c.get_zcopy;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    UctPeer& p = peers[r];
    p.ep = eps_[r];
    p.bulk_ep = separate_bulk_ ? bulk_eps_[r] : eps_[r];
    p.segment_addr = all[r].at("segment").get<std::uint64_t>();
    if (rma && rkey_packed_.empty()) {
      p.rma = true;  // no key needed: rkey stays UCT_INVALID_RKEY
    } else if (rma) {
      const auto packed = unhex(all[r].at("rkey").get<std::string>(), "remote key");
      check_setup(uct_rkey_unpack(bulk.component, packed.data(), &rkeys_[r]), "uct_rkey_unpack");
      rkey_held_[r] = true;
      p.rkey = rkeys_[r].rkey;
      p.rma = true;
    }
  }
  transport_->set_peers(std::move(peers));
  describe_ = record(opt, c);
  transport_->set_describe_head(describe_);
  transport_->set_peer_alive([&ranks] { return ranks.all_alive(); }, "UCT " + am_.tl);
  ranks.barrier();  // ready: every rank's endpoints are connected and its handler set
}

void UctConnection::open_iface(Iface& f, const std::string& tl, const std::string& dev) {
  Found found;
  for (unsigned ci = 0; ci < n_components_ && !found.found; ++ci) {
    uct_component_attr_t ca{};
    ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    check_setup(uct_component_query(components_[ci], &ca), "uct_component_query");
    std::vector<uct_md_resource_desc_t> mds(ca.md_resource_count);
    ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    ca.md_resources = mds.data();
    check_setup(uct_component_query(components_[ci], &ca), "uct_component_query");
    for (const auto& mdr : mds) {
      uct_md_config_t* cfg = nullptr;
      if (uct_md_config_read(components_[ci], nullptr, nullptr, &cfg) != UCS_OK) continue;
      uct_md_h md = nullptr;
      const ucs_status_t s = uct_md_open(components_[ci], mdr.md_name, cfg, &md);
      uct_config_release(cfg);
      if (s != UCS_OK) continue;
      uct_tl_resource_desc_t* res = nullptr;
      unsigned n = 0;
      bool keep = false;
      if (uct_md_query_tl_resources(md, &res, &n) == UCS_OK) {
        for (unsigned i = 0; i < n; ++i) {
          found.seen.push_back(std::string(res[i].tl_name) + "/" + res[i].dev_name);
          if (!keep && !found.found && tl == res[i].tl_name && (dev.empty() || dev == res[i].dev_name)) {
            keep = found.found = true;
            f.dev = res[i].dev_name;
          }
        }
        uct_release_tl_resource_list(res);
      }
      if (!keep) {
        uct_md_close(md);
        continue;
      }
      f.component = components_[ci];
      f.md = md;
      f.tl = tl;
      f.md_name = mdr.md_name;
      f.component_name = ca.name;
      break;
    }
  }
  if (!found.found)
    throw UsageError("UCT has no transport " + tl + (dev.empty() ? "" : " on device " + dev) +
                     " on this host; it sees (transport/device, as ucx_info -d lists them): " + joined(found.seen));
  check_setup(uct_md_query(f.md, &f.md_attr), "uct_md_query");
  if (f.tl.rfind("ud_", 0) == 0) {  // UCX names an RDMA device's port as ib_dev:port
    const std::string w = soft_roce_ud_workaround(f.dev.substr(0, f.dev.find(':')));
    if (!w.empty()) workarounds_.push_back(w);
  }
  uct_iface_config_t* cfg = nullptr;
  check_setup(uct_md_iface_config_read(f.md, f.tl.c_str(), nullptr, nullptr, &cfg), "uct_md_iface_config_read");
  uct_iface_params_t p{};
  p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE | UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                 UCT_IFACE_PARAM_FIELD_RX_HEADROOM | UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                 UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
  p.err_handler = &UctTransport::on_iface_error;
  p.err_handler_arg = &error_target_;
  p.err_handler_flags = 0;  // called from uct_worker_progress, never from UCX's async thread
  p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
  p.mode.device.tl_name = f.tl.c_str();
  p.mode.device.dev_name = f.dev.c_str();
  p.stats_root = nullptr;
  p.rx_headroom = 0;
  const ucs_status_t s = uct_iface_open(f.md, worker_, &p, cfg, &f.iface);
  uct_config_release(cfg);
  check_setup(s, "uct_iface_open", "transport " + f.tl + " on device " + f.dev);
  check_setup(uct_iface_query(f.iface, &f.attr), "uct_iface_query");
}

void UctConnection::allocate_segment(const TransportOptions& opt, Iface& bulk) {
  const std::uint64_t flags = bulk.md_attr.cap.flags;
  if (flags & UCT_MD_FLAG_REG) {
    segment_ = static_cast<std::byte*>(std::aligned_alloc(kAllocAlign, segment_bytes_));
    if (!segment_) throw std::runtime_error("ucx: no memory for the segment");
    check_setup(uct_md_mem_reg(bulk.md, segment_, segment_bytes_, UCT_MD_MEM_ACCESS_ALL, &memh_), "uct_md_mem_reg");
  } else if (flags & UCT_MD_FLAG_ALLOC) {
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t p{};
    p.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MDS | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    p.flags = UCT_MD_MEM_ACCESS_ALL;
    p.mds.mds = &bulk.md;
    p.mds.count = 1;
    p.name = "logpbench segment";
    check_setup(uct_mem_alloc(segment_bytes_, &method, 1, &p, &alloc_), "uct_mem_alloc",
                "the segment on memory domain " + bulk.md_name);
    segment_alloc_ = true;
    segment_ = static_cast<std::byte*>(alloc_.address);
    memh_ = alloc_.memh;
  } else {
    segment_ = static_cast<std::byte*>(std::aligned_alloc(kAllocAlign, segment_bytes_));
    if (!segment_) throw std::runtime_error("ucx: no memory for the segment");
  }
  // A remote key only where the memory domain needs one (posix, sysv, verbs); cma reaches the peer's
  // memory by its address alone. tcp's says it needs a key of 0 bytes and refuses to pack one (UCX 1.13):
  // a key of no bytes is none.
  if ((flags & UCT_MD_FLAG_NEED_RKEY) && bulk.md_attr.rkey_packed_size > 0 &&
      (memh_ != UCT_MEM_HANDLE_NULL || segment_alloc_)) {
    rkey_packed_.resize(bulk.md_attr.rkey_packed_size);
    check_setup(uct_md_mkey_pack(bulk.md, memh_, rkey_packed_.data()), "uct_md_mkey_pack");
  }
  const std::uint64_t caps = bulk.attr.cap.flags;
  if (opt.remote_read && !(caps & (UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY)))
    throw UsageError("this method gets, and UCT transport " + bulk.tl +
                     " has no get here (posix and sysv have "
                     "get_bcopy, cma get_zcopy): add --ucx-bulk-tl cma, or use --ucx-layer ucp");
  // put_zcopy of data from outside the segment goes through a registered staging copy.
  if (!(caps & UCT_IFACE_FLAG_PUT_BCOPY) && (caps & UCT_IFACE_FLAG_PUT_ZCOPY) && (flags & UCT_MD_FLAG_REG)) {
    staging_ = static_cast<std::byte*>(std::aligned_alloc(kAllocAlign, segment_bytes_));
    if (!staging_) throw std::runtime_error("ucx: no memory for the staging area");
    check_setup(uct_md_mem_reg(bulk.md, staging_, segment_bytes_, UCT_MD_MEM_ACCESS_ALL, &staging_memh_),
                "uct_md_mem_reg");
  }
}

UctCaps UctConnection::caps(const TransportOptions& /*opt*/, const Iface& bulk) const {
  UctCaps c;
  const uct_iface_attr_t& a = am_.attr;
  c.am_short = am_short_max(a);
  if (a.cap.flags & UCT_IFACE_FLAG_AM_BCOPY) c.am_bcopy = a.cap.am.max_bcopy;
  if (c.am_bcopy <= sizeof(am::Frame) && c.am_short < sizeof(am::Frame))
    throw UsageError("UCT transport " + am_.tl + " carries no 64-byte message (am_short " + std::to_string(c.am_short) +
                     ", am_bcopy " + std::to_string(c.am_bcopy) + " bytes)");
  const uct_iface_attr_t& b = bulk.attr;
  if (!rkey_packed_.empty() || !(bulk.md_attr.cap.flags & UCT_MD_FLAG_NEED_RKEY) ||
      bulk.md_attr.rkey_packed_size == 0) {
    if (b.cap.flags & UCT_IFACE_FLAG_PUT_BCOPY) c.put_bcopy = b.cap.put.max_bcopy;
    if ((b.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) && (memh_ != UCT_MEM_HANDLE_NULL || separate_bulk_))
      c.put_zcopy = b.cap.put.max_zcopy;
    if (b.cap.flags & UCT_IFACE_FLAG_GET_BCOPY) c.get_bcopy = b.cap.get.max_bcopy;
    if ((b.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) && (memh_ != UCT_MEM_HANDLE_NULL || separate_bulk_))
      c.get_zcopy = b.cap.get.max_zcopy;
    if (c.put_zcopy && !c.put_bcopy && !staging_ && memh_ == UCT_MEM_HANDLE_NULL && !separate_bulk_) c.put_zcopy = 0;
  }
  c.bulk_same_iface = !separate_bulk_;
  return c;
}

nlohmann::json UctConnection::my_addresses(const Iface& f, std::vector<uct_ep_h>& eps, int size) {
  std::vector<std::byte> dev(f.attr.device_addr_len);
  check_setup(uct_iface_get_device_address(f.iface, reinterpret_cast<uct_device_addr_t*>(dev.data())),
              "uct_iface_get_device_address");
  nlohmann::json j = {{"dev", hex(dev.data(), dev.size())}};
  if (f.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) {
    std::vector<std::byte> ia(f.attr.iface_addr_len);
    check_setup(uct_iface_get_address(f.iface, reinterpret_cast<uct_iface_addr_t*>(ia.data())),
                "uct_iface_get_address");
    j["iface"] = hex(ia.data(), ia.size());
    return j;
  }
  if (!(f.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP))
    throw UsageError("UCT transport " + f.tl + " connects neither to an interface nor to an endpoint");
  // Connect to ep: one endpoint per peer now, its address for that peer.
  nlohmann::json eps_j = nlohmann::json::object();
  for (int r = 0; r < size; ++r) {
    if (r == rank_) continue;
    uct_ep_params_t p{};
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    p.iface = f.iface;
    check_setup(uct_ep_create(&p, &eps[r]), "uct_ep_create");
    std::vector<std::byte> ea(f.attr.ep_addr_len);
    check_setup(uct_ep_get_address(eps[r], reinterpret_cast<uct_ep_addr_t*>(ea.data())), "uct_ep_get_address");
    eps_j[std::to_string(r)] = hex(ea.data(), ea.size());
  }
  j["eps"] = eps_j;
  return j;
}

void UctConnection::connect(Ranks& ranks, Iface& f, std::vector<uct_ep_h>& eps, const nlohmann::json& all,
                            const char* key) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const nlohmann::json& a = all[r].at(key);
    const auto dev = unhex(a.at("dev").get<std::string>(), "device address");
    const auto* dev_addr = reinterpret_cast<const uct_device_addr_t*>(dev.data());
    if (a.contains("iface")) {
      const auto ia = unhex(a.at("iface").get<std::string>(), "interface address");
      const auto* iface_addr = reinterpret_cast<const uct_iface_addr_t*>(ia.data());
      if (!uct_iface_is_reachable(f.iface, dev_addr, iface_addr))
        throw UsageError("ucx: rank " + std::to_string(r) + " is not reachable over UCT " + f.tl + "/" + f.dev +
                         " from rank " + std::to_string(rank_));
      uct_ep_params_t p{};
      p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
      p.iface = f.iface;
      p.dev_addr = dev_addr;
      p.iface_addr = iface_addr;
      check_setup(uct_ep_create(&p, &eps[r]), "uct_ep_create", "to rank " + std::to_string(r));
    } else {
      const auto ea = unhex(a.at("eps").at(std::to_string(rank_)).get<std::string>(), "endpoint address");
      check_setup(uct_ep_connect_to_ep(eps[r], dev_addr, reinterpret_cast<const uct_ep_addr_t*>(ea.data())),
                  "uct_ep_connect_to_ep", "to rank " + std::to_string(r));
    }
  }
  (void)ranks;
}

nlohmann::json UctConnection::measure_floor(Ranks& ranks, const Clock& clock, int requester) {
  if (size_ != 2) return nullptr;
  const bool timing = rank_ == requester;
  const std::string loop =
      "a bare UCT ping-pong between the job's two ranks before the job runs: uct_ep_am_short of 64 bytes, "
      "uct_worker_progress until the answer's AM handler ran; no AM layer, this job's interface and cores";
  constexpr std::size_t kPayload = sizeof(am::Frame) - sizeof(std::uint64_t);
  if (am_short_max(am_.attr) < sizeof(am::Frame))
    return timing ? transport_floor_json(clock, {}, 0, loop, sizeof(am::Frame), "no 64-byte am_short on " + am_.tl)
                  : nlohmann::json();
  const auto on_floor = [](void* arg, void* data, std::size_t, unsigned) -> ucs_status_t {
    auto* in = static_cast<FloorInbox*>(arg);
    std::memcpy(&in->last, data, sizeof in->last);
    ++in->count;
    return UCS_OK;
  };
  check_setup(uct_iface_set_am_handler(am_.iface, kFloorAmId, on_floor, &floor_inbox_, 0), "uct_iface_set_am_handler");
  ranks.barrier();  // both ends connected and listening
  uct_ep_h ep = eps_[static_cast<std::size_t>(1 - rank_)];
  alignas(64) const std::byte payload[kPayload] = {};
  const std::uint64_t second = clock.cycles(1e9);
  // False where UCT refuses it, or has had no room for it for a second (UD whose packets never arrive: its
  // window stays full).
  auto send = [&](std::uint64_t header) {
    const std::uint64_t t0 = __rdtsc();
    for (std::uint64_t spins = 0;;) {
      const ucs_status_t st = uct_ep_am_short(ep, kFloorAmId, header, payload, kPayload);
      if (st == UCS_OK) [[likely]]
        return true;
      if (st != UCS_ERR_NO_RESOURCE) return false;
      uct_worker_progress(worker_);
      if ((++spins & 1023) == 0 && __rdtsc() - t0 > second) return false;
    }
  };
  // Progresses until the count-th message has arrived, or `wait` cycles after t0.
  auto arrived = [&](std::uint64_t count, std::uint64_t t0, std::uint64_t wait) {
    for (std::uint64_t spins = 0; floor_inbox_.count < count;) {
      uct_worker_progress(worker_);
      if ((++spins & 1023) == 0 && __rdtsc() - t0 > wait) return false;
    }
    return true;
  };
  if (!timing) {  // answers each request with its own number, until the stop, or 3 s of silence (2 s after
                  // the first request: the requester gives up after 1 s without an answer)
    for (std::uint64_t k = 1; arrived(k, __rdtsc(), (k == 1 ? 3 : 2) * second) && floor_inbox_.last != kFloorStop; ++k)
      if (!send(floor_inbox_.last)) break;
    return nullptr;
  }
  constexpr int kIterations = 5000;
  const int warmup = kIterations / 10 + 100, total = warmup + kIterations;
  std::vector<std::uint64_t> cyc;
  cyc.reserve(static_cast<std::size_t>(total));
  std::string why;
  const std::uint64_t start = __rdtsc(), budget = clock.cycles(200e6);  // 200 ms at most
  for (int k = 0; k < total && !(k > warmup && __rdtsc() - start > budget); ++k) {
    const std::uint64_t t0 = tsc::now();
    if (!send(static_cast<std::uint64_t>(k))) {
      why = "uct_ep_am_short failed, or found no room for 1 s";
      break;
    }
    if (!arrived(static_cast<std::uint64_t>(k) + 1, t0, second)) {
      why = "no answer within 1 s";
      break;
    }
    cyc.push_back(tsc::now_end() - t0);
  }
  if (!send(kFloorStop) && why.empty()) why = "uct_ep_am_short failed (the last message)";
  return transport_floor_json(clock, cyc, static_cast<std::size_t>(warmup), loop, sizeof(am::Frame), why);
}

nlohmann::json UctConnection::record(const TransportOptions& opt, const UctCaps& c) const {
  nlohmann::json j = {
      {"layer", "uct"},
      {"tl", am_.tl},
      {"dev", am_.dev},
      {"md", am_.md_name},
      {"component", am_.component_name},
      {"iface", iface_caps(am_.attr)},
      {"connect", (am_.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ? "to iface" : "to ep"},
      {"segment", segment_alloc_ ? "allocated by memory domain " + am_.md_name
                                 : std::string(memh_ != UCT_MEM_HANDLE_NULL ? "registered" : "plain memory")},
      {"thresholds",
       {{"small_am", c.am_short >= sizeof(am::Frame) ? "am_short" : "am_bcopy"},
        {"store_in_one_am_max", c.am_bcopy > sizeof(am::Frame) ? c.am_bcopy - sizeof(am::Frame) : 0},
        {"put_bcopy_max", c.put_bcopy},
        {"put_zcopy_max", c.put_zcopy},
        {"get_bcopy_max", c.get_bcopy},
        {"get_zcopy_max", c.get_zcopy}}},
      {"version", UCT_VERNO_STRING}};
  if (!workarounds_.empty()) j["workarounds"] = workarounds_;
  if (separate_bulk_)
    j["bulk"] = {{"tl", bulk_.tl}, {"dev", bulk_.dev}, {"md", bulk_.md_name}, {"iface", iface_caps(bulk_.attr)}};
  (void)opt;
  return j;
}

UctConnection::~UctConnection() {
  error_target_ = nullptr;  // the endpoints' own closing may report them failed
  transport_.reset();
  for (int r = 0; r < static_cast<int>(rkeys_.size()); ++r)
    if (rkey_held_[r]) uct_rkey_release((separate_bulk_ ? bulk_ : am_).component, &rkeys_[r]);
  for (auto* v : {&eps_, &bulk_eps_})
    for (uct_ep_h e : *v)
      if (e) uct_ep_destroy(e);
  for (Iface* f : {&bulk_, &am_})
    if (f->iface) uct_iface_close(f->iface);
  Iface& bulk = separate_bulk_ ? bulk_ : am_;
  if (segment_alloc_) {
    uct_mem_free(&alloc_);
  } else {
    if (memh_ != UCT_MEM_HANDLE_NULL && bulk.md) uct_md_mem_dereg(bulk.md, memh_);
    std::free(segment_);
  }
  if (staging_memh_ != UCT_MEM_HANDLE_NULL && bulk.md) uct_md_mem_dereg(bulk.md, staging_memh_);
  std::free(staging_);
  for (Iface* f : {&bulk_, &am_})
    if (f->md) uct_md_close(f->md);
  if (worker_) uct_worker_destroy(worker_);
  if (async_) ucs_async_context_destroy(async_);
  if (components_) uct_release_component_list(components_);
}

}  // namespace logpb::ucx
