#include "verbs/context.hpp"

#include <arpa/inet.h>
#include <numa.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "common/errors.hpp"

namespace logpb::verbs {
namespace {

[[noreturn]] void fail(const std::string& call, int err, const std::string& check) {
  throw std::runtime_error(call + " failed: " + std::strerror(err) + (check.empty() ? "" : " (check " + check + ")"));
}

std::string gid_string(const ibv_gid& g) {
  char b[64];
  inet_ntop(AF_INET6, g.raw, b, sizeof b);
  return b;
}

bool ipv4_mapped(const ibv_gid& g) {
  static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, 12) == 0;
}

const char* gid_type_name(std::uint32_t t) {
  switch (t) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
    default:
      return "?";
  }
}

std::byte* alloc_on(int node, std::size_t n) {
  void* p = (numa_available() >= 0 && node >= 0) ? numa_alloc_onnode(n, node) : numa_alloc_local(n);
  if (!p) throw std::runtime_error("cannot allocate " + std::to_string(n) + " bytes for verbs buffers");
  std::memset(p, 0, n);
  return static_cast<std::byte*>(p);
}

}  // namespace

std::string mtu_string(int m) {
  switch (m) {
    case IBV_MTU_256:
      return "256";
    case IBV_MTU_512:
      return "512";
    case IBV_MTU_1024:
      return "1024";
    case IBV_MTU_2048:
      return "2048";
    case IBV_MTU_4096:
      return "4096";
    default:
      return "?";
  }
}

Context::Context(const DeviceOptions& opt, int rank, int size) : opt_(opt), rank_(rank), size_(size) {
  if (size < 2 || rank < 0 || rank >= size)
    throw UsageError("verbs: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                     ": a verbs job needs at least two ranks");
  if (opt.ud && size > 2)
    throw UsageError("verbs --ud runs two ranks only (one UD QP, one address handle); this job has " +
                     std::to_string(size) + " ranks: run it on RC (without --ud)");
  open_device();
  pick_gid();
  std::ifstream nf("/sys/class/infiniband/" + name_ + "/device/numa_node");
  if (!(nf >> numa_node_)) numa_node_ = -1;
  create_cqs();
  register_memory();
  create_qps();
}

void Context::open_device() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    throw UsageError(
        "no RDMA device found (is a driver loaded? `ibv_devices` lists them; for Soft-RoCE: "
        "rdma link add rxe0 type rxe netdev IFACE)");
  }
  ibv_device* dev = nullptr;
  std::string names;
  for (int i = 0; i < n; ++i) {
    names += (names.empty() ? "" : ", ") + std::string(ibv_get_device_name(list[i]));
    if (opt_.device.empty() ? i == 0 : opt_.device == ibv_get_device_name(list[i])) dev = list[i];
  }
  if (!dev) {
    ibv_free_device_list(list);
    throw UsageError("no RDMA device named '" + opt_.device + "' (devices here: " + names + ")");
  }
  name_ = ibv_get_device_name(dev);
  ctx_ = ibv_open_device(dev);
  ibv_free_device_list(list);
  if (!ctx_) fail("ibv_open_device(" + name_ + ")", errno, "permissions on /dev/infiniband");

  if (ibv_query_port(ctx_, static_cast<std::uint8_t>(opt_.port), &port_attr_) != 0)
    throw UsageError("ibv_query_port(" + name_ + ", port " + std::to_string(opt_.port) + ") failed: no such port (-i)");
  if (port_attr_.state != IBV_PORT_ACTIVE)
    throw UsageError(name_ + " port " + std::to_string(opt_.port) + " is " + ibv_port_state_str(port_attr_.state) +
                     ", not ACTIVE: check the link (ibv_devinfo)");
}

// GID: the one asked for, or a RoCE v2 IPv4-mapped one (what routable RoCE needs), or index 0 on IB.
void Context::pick_gid() {
  std::string valid;
  int auto_pick = -1;
  for (int i = 0; i < port_attr_.gid_tbl_len; ++i) {
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx_, static_cast<std::uint32_t>(opt_.port), static_cast<std::uint32_t>(i), &e, 0) != 0)
      continue;
    valid += (valid.empty() ? "" : ", ") + std::to_string(i) + " (" + gid_type_name(e.gid_type) + " " +
             gid_string(e.gid) + ")";
    if (auto_pick < 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4_mapped(e.gid)) auto_pick = i;
    if (i == opt_.gid_index || (opt_.gid_index < 0 && i == auto_pick)) {
      gid_ = e.gid;
      gid_index_ = i;
      gid_type_ = gid_type_name(e.gid_type);
    }
  }
  if (opt_.gid_index >= 0 && gid_type_.empty())
    throw UsageError("GID index " + std::to_string(opt_.gid_index) + " is not valid on " + name_ + " port " +
                     std::to_string(opt_.port) + " (valid: " + (valid.empty() ? "none" : valid) + ")");
  if (opt_.gid_index < 0 && auto_pick < 0) {
    if (port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET)
      throw UsageError("no RoCE v2 IPv4 GID on " + name_ + " (valid: " + valid +
                       "): give one with -x, or give the "
                       "interface an IPv4 address");
    gid_index_ = 0;  // InfiniBand: addressed by LID, GID 0 for the GRH-less case
    gid_type_ = "IB";
  }
}

void Context::create_cqs() {
  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) fail("ibv_alloc_pd", errno, "");
  if (opt_.events) {
    channel_ = ibv_create_comp_channel(ctx_);
    if (!channel_) fail("ibv_create_comp_channel", errno, "");
    // Non-blocking: the transport sleeps in poll() with a timeout and then takes every queued event.
    const int fl = fcntl(channel_->fd, F_GETFL);
    if (fl < 0 || fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0)
      fail("fcntl(completion channel, O_NONBLOCK)", errno, "");
  }
  // Both CQs report to the channel: event mode also sleeps for a get's or a tracked send's completion.
  // One of each for every QP, deep enough for all of them at once.
  const int peers = size_ - 1;
  ibv_device_attr da{};
  if (int r = ibv_query_device(ctx_, &da)) fail("ibv_query_device", r, "");
  const long send_cqe = static_cast<long>(peers) * opt_.sq_depth, recv_cqe = static_cast<long>(peers) * opt_.rq_depth;
  if (std::max(send_cqe, recv_cqe) > da.max_cqe)
    throw UsageError("verbs: " + std::to_string(peers) + " peers x --sq-depth/--rq-depth need a CQ of " +
                     std::to_string(std::max(send_cqe, recv_cqe)) + " entries; " + name_ + " allows " +
                     std::to_string(da.max_cqe) + ": lower --rq-depth/--sq-depth");
  send_cq_ = ibv_create_cq(ctx_, static_cast<int>(send_cqe), nullptr, channel_, 0);
  recv_cq_ = ibv_create_cq(ctx_, static_cast<int>(recv_cqe), nullptr, channel_, 0);
  if (!send_cq_ || !recv_cq_) fail("ibv_create_cq", errno, "the device's max_cqe");
}

// Memory, on the device's NUMA node, each region with only the access it needs: receive buffers
// local only; bulk headers remote-write; the segment remote-write, and remote-read only when asked.
void Context::register_memory() {
  const int peers = size_ - 1;
  construct_mtu_ = opt_.mtu > 0 ? static_cast<ibv_mtu>(opt_.mtu) : port_attr_.active_mtu;
  segment_alloc_ = opt_.segment_bytes;
  headers_alloc_ = static_cast<std::size_t>(peers) * header_ring_bytes();
  recv_alloc_ = static_cast<std::size_t>(peers) * static_cast<std::size_t>(opt_.rq_depth) * recv_slot_bytes();
  segment_ = alloc_on(numa_node_, segment_alloc_);
  headers_ = alloc_on(numa_node_, headers_alloc_);
  recv_buf_ = alloc_on(numa_node_, recv_alloc_);
  const int seg_access =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | (opt_.remote_read ? IBV_ACCESS_REMOTE_READ : 0);
  seg_mr_ = ibv_reg_mr(pd_, segment_, segment_alloc_, seg_access);
  hdr_mr_ = ibv_reg_mr(pd_, headers_, headers_alloc_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  // An int, not the enumerator: rdma-core's ibv_reg_mr macro masks the flags with an enumerator of another
  // enum type, which clang warns of (-Wdeprecated-enum-enum-conversion) when given a bare enumerator.
  const int recv_access = IBV_ACCESS_LOCAL_WRITE;
  recv_mr_ = ibv_reg_mr(pd_, recv_buf_, recv_alloc_, recv_access);
  tx_alloc_ = static_cast<std::size_t>(peers) * static_cast<std::size_t>(opt_.sq_depth) * tx_slot_bytes();
  tx_buf_ = alloc_on(numa_node_, tx_alloc_);
  staging_ = alloc_on(numa_node_, segment_alloc_);
  tx_mr_ = ibv_reg_mr(pd_, tx_buf_, tx_alloc_, 0);
  staging_mr_ = ibv_reg_mr(pd_, staging_, segment_alloc_, 0);
  if (!seg_mr_ || !hdr_mr_ || !recv_mr_ || !tx_mr_ || !staging_mr_)
    fail("ibv_reg_mr", errno, "ulimit -l (locked memory) and --segment size");
}

// One QP per peer, all on the two CQs; each with its own receive queue (see context.hpp).
void Context::create_qps() {
  links_.resize(static_cast<std::size_t>(size_));
  std::random_device rd;
  bool first = true;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    ibv_qp_init_attr qa{};
    qa.send_cq = send_cq_;
    qa.recv_cq = recv_cq_;
    qa.qp_type = opt_.ud ? IBV_QPT_UD : IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = static_cast<std::uint32_t>(opt_.sq_depth);
    qa.cap.max_recv_wr = static_cast<std::uint32_t>(opt_.rq_depth);
    qa.cap.max_send_sge = 2;  // a medium AM: the frame, then its payload in place
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = static_cast<std::uint32_t>(std::max(opt_.inline_bytes, 0));
    ibv_qp* qp = ibv_create_qp(pd_, &qa);
    if (!qp && opt_.inline_bytes > 0) {  // the device allows less inline data: ask for none, send from memory
      qa.cap.max_inline_data = 0;
      qp = ibv_create_qp(pd_, &qa);
    }
    if (!qp)
      fail(opt_.ud ? "ibv_create_qp(UD)" : "ibv_create_qp(RC, peer " + std::to_string(p) + ")", errno,
           "the device's max_qp_wr against --sq-depth/--rq-depth, max_sge >= 2, max_qp");
    max_inline_ = first ? qa.cap.max_inline_data : std::min(max_inline_, qa.cap.max_inline_data);  // what every QP has
    first = false;
    links_[p].qp = qp;
    links_[p].psn = rd() & 0xffffff;
    links_[p].path_mtu = construct_mtu_;
  }
}

// The transport re-posts consumed receives in batches of this many; the peer counts on the rest.
int Context::recv_batch() const { return std::clamp(opt_.recv_batch, 1, std::min(512, opt_.rq_depth / 2)); }

Context::~Context() {
  for (auto& l : links_) {
    if (l.ah) ibv_destroy_ah(l.ah);
    if (l.qp) ibv_destroy_qp(l.qp);
  }
  if (seg_mr_) ibv_dereg_mr(seg_mr_);
  if (hdr_mr_) ibv_dereg_mr(hdr_mr_);
  if (recv_mr_) ibv_dereg_mr(recv_mr_);
  if (tx_mr_) ibv_dereg_mr(tx_mr_);
  if (staging_mr_) ibv_dereg_mr(staging_mr_);
  if (send_cq_) ibv_destroy_cq(send_cq_);
  if (recv_cq_) ibv_destroy_cq(recv_cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
  if (segment_) numa_free(segment_, segment_alloc_);
  if (headers_) numa_free(headers_, headers_alloc_);
  if (recv_buf_) numa_free(recv_buf_, recv_alloc_);
  if (tx_buf_) numa_free(tx_buf_, tx_alloc_);
  if (staging_) numa_free(staging_, segment_alloc_);
}

Address Context::local_address(int peer) const {
  const Link& l = links_.at(static_cast<std::size_t>(peer));
  if (!l.qp) throw std::logic_error("verbs: no QP for rank " + std::to_string(peer));
  Address a;
  a.qpn = l.qp->qp_num;
  a.psn = l.psn;
  a.lid = port_attr_.lid;
  std::memcpy(a.gid, gid_.raw, 16);
  a.segment_addr = reinterpret_cast<std::uint64_t>(segment_);
  a.segment_rkey = seg_mr_->rkey;
  a.segment_bytes = static_cast<std::uint32_t>(segment_alloc_);
  a.headers_addr = reinterpret_cast<std::uint64_t>(headers(peer));
  a.headers_rkey = hdr_mr_->rkey;
  a.mtu = construct_mtu_;
  a.remote_read = opt_.remote_read;
  a.rq_depth = static_cast<std::uint32_t>(opt_.rq_depth);
  a.recv_batch = static_cast<std::uint32_t>(recv_batch());
  a.header_slots = header_slots();
  a.recv_slot_bytes = recv_slot_bytes() - recv_frame_offset();
  return a;
}

// The address vector of the peer: a GRH for RoCE (and IB across subnets), the LID otherwise.
static ibv_ah_attr peer_av(const Address& peer, int port, int gid_index, bool global) {
  ibv_ah_attr av{};
  av.dlid = peer.lid;
  av.sl = 0;
  av.port_num = static_cast<std::uint8_t>(port);
  if (global) {
    av.is_global = 1;
    std::memcpy(av.grh.dgid.raw, peer.gid, 16);
    av.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
    av.grh.hop_limit = 64;
  }
  return av;
}

void Context::connect(int p, const Address& peer) {
  Link& l = links_.at(static_cast<std::size_t>(p));
  if (!l.qp) throw std::logic_error("verbs: no QP for rank " + std::to_string(p));
  ibv_qp* const qp = l.qp;
  l.path_mtu = std::min(construct_mtu_, static_cast<ibv_mtu>(peer.mtu));
  const bool global = gid_type_ != "IB" || peer.lid == 0;
  if (opt_.ud) {  // datagrams: INIT with a Q_Key, RTR, RTS; the peer is an address handle
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = static_cast<std::uint8_t>(opt_.port);
    a.qkey = kUdQkey;
    if (int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
      fail("ibv_modify_qp(UD INIT)", r, "port number -i");
    a = {};
    a.qp_state = IBV_QPS_RTR;
    if (int r = ibv_modify_qp(qp, &a, IBV_QP_STATE)) fail("ibv_modify_qp(UD RTR)", r, "");
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = l.psn;
    if (int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) fail("ibv_modify_qp(UD RTS)", r, "");
    ibv_ah_attr av = peer_av(peer, opt_.port, gid_index_, global);
    l.ah = ibv_create_ah(pd_, &av);
    if (!l.ah) fail("ibv_create_ah", errno, "GID index -x on both sides");
    return;
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<std::uint8_t>(opt_.port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | (opt_.remote_read ? IBV_ACCESS_REMOTE_READ : 0);
  if (int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    fail("ibv_modify_qp(INIT)", r, "port number -i");

  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = l.path_mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;  // the peer may have one RDMA READ in flight against us
  a.min_rnr_timer = 12;
  a.ah_attr = peer_av(peer, opt_.port, gid_index_, global);
  if (int r = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    fail("ibv_modify_qp(RTR, peer " + std::to_string(p) + ")", r,
         "GID index -x on both sides, path MTU, that both ends are on one network");

  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try: a dead peer errors the QP in about half a second
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = l.psn;
  a.max_rd_atomic = 1;
  if (int r = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC))
    fail("ibv_modify_qp(RTS)", r, "");
}

nlohmann::json Context::describe() const {
  ibv_mtu path = construct_mtu_;  // the smallest over the connections
  for (int p = 0; p < size_; ++p)
    if (p != rank_) path = std::min(path, links_[static_cast<std::size_t>(p)].path_mtu);
  ibv_device_attr da{};
  ibv_query_device(ctx_, &da);
  return {{"kind", "verbs"},
          {"device", name_},
          {"fw_ver", da.fw_ver},
          {"port", opt_.port},
          {"link_layer", port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand"},
          {"active_mtu", mtu_string(port_attr_.active_mtu)},
          {"path_mtu", mtu_string(path)},
          {"gid_index", gid_index_},
          {"gid_type", gid_type_},
          {"gid", gid_string(gid_)},
          {"qp_type", opt_.ud ? "UD" : "RC"},
          {"qps", opt_.ud ? 1 : size_ - 1},
          {"receive_queues", "one per QP (per peer), no shared receive queue: the one-way bound holds per peer"},
          {"max_inline", max_inline_},
          {"inline_requested", opt_.inline_bytes},
          {"sq_depth", opt_.sq_depth},
          {"rq_depth", opt_.rq_depth},
          {"recv_batch", recv_batch()},
          {"recv_slot_bytes", recv_slot_bytes()},
          {"header_slots", header_slots()},
          {"header_rings", "one per peer"},
          {"segment_bytes", segment_alloc_},
          {"segment_remote_read", opt_.remote_read},
          {"completions", opt_.events ? "event" : "busy-poll"},
          {"numa_node", numa_node_}};
}

nlohmann::json to_json(const Address& a) {
  char gid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(gid + 2 * i, 3, "%02x", a.gid[i]);
  return {{"qpn", a.qpn},
          {"psn", a.psn},
          {"lid", a.lid},
          {"gid", gid},
          {"segment_addr", a.segment_addr},
          {"segment_rkey", a.segment_rkey},
          {"segment_bytes", a.segment_bytes},
          {"headers_addr", a.headers_addr},
          {"headers_rkey", a.headers_rkey},
          {"mtu", a.mtu},
          {"remote_read", a.remote_read},
          {"rq_depth", a.rq_depth},
          {"recv_batch", a.recv_batch},
          {"header_slots", a.header_slots},
          {"recv_slot_bytes", a.recv_slot_bytes}};
}

Address address_from_json(const nlohmann::json& j) {
  try {
    Address a;
    a.qpn = j.at("qpn").get<std::uint32_t>();
    a.psn = j.at("psn").get<std::uint32_t>();
    a.lid = j.at("lid").get<std::uint16_t>();
    const std::string g = j.at("gid").get<std::string>();
    if (g.size() != 32) throw std::invalid_argument("gid");
    for (int i = 0; i < 16; ++i) a.gid[i] = static_cast<std::uint8_t>(std::stoul(g.substr(2 * i, 2), nullptr, 16));
    a.segment_addr = j.at("segment_addr").get<std::uint64_t>();
    a.segment_rkey = j.at("segment_rkey").get<std::uint32_t>();
    a.segment_bytes = j.at("segment_bytes").get<std::uint32_t>();
    a.headers_addr = j.at("headers_addr").get<std::uint64_t>();
    a.headers_rkey = j.at("headers_rkey").get<std::uint32_t>();
    a.mtu = j.at("mtu").get<int>();
    a.remote_read = j.at("remote_read").get<bool>();
    a.rq_depth = j.at("rq_depth").get<std::uint32_t>();
    a.recv_batch = j.at("recv_batch").get<std::uint32_t>();
    a.header_slots = j.at("header_slots").get<std::uint32_t>();
    a.recv_slot_bytes = j.at("recv_slot_bytes").get<std::uint32_t>();
    if (a.mtu < IBV_MTU_256 || a.mtu > IBV_MTU_4096) throw std::invalid_argument("mtu");
    if (a.recv_batch < 1 || a.recv_batch >= a.rq_depth || a.header_slots < 1 || a.header_slots > 65536 ||
        a.recv_slot_bytes < 64)
      throw std::invalid_argument("queue sizes");
    return a;
  } catch (const std::exception& e) {
    throw PeerError(std::string("malformed verbs address from the peer: ") + e.what());
  }
}

}  // namespace logpb::verbs
