// Verbs control path, readable top to bottom like rc_pingpong: open the device, check the port, pick a
// GID, allocate the PD, register the memory, create the CQs and the RC QP, and (once the peer's address
// is known) take the QP through INIT -> RTR -> RTS. Every failure names the call and what to check.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace logpb::verbs {

struct DeviceOptions {
  std::string device;        // -d: empty = the first device
  int port = 1;              // -i
  int gid_index = -1;        // -x: -1 = auto (a RoCE v2 IPv4-mapped GID, else index 0)
  std::uint32_t segment_bytes = 1 << 20;
  bool remote_read = false;  // the bulk segment may be read by the peer (only runs with a get need it)
  int sq_depth = 256, rq_depth = 512;
  int recv_batch = 32;       // consumed receives are re-posted this many at a time (clamped: recv_batch())
  int inline_bytes = 64;     // asked for; the device may give more or less (recorded)
  int mtu = 0;               // 0: the port's active MTU
  bool events = false;       // completion channel for event mode
  bool ud = false;           // unreliable datagram QP instead of RC: small AMs only, loss possible
};

inline std::uint32_t mtu_bytes(ibv_mtu m) { return 128u << static_cast<int>(m); }  // IBV_MTU_256 = 1

// What the peer needs to reach us (exchanged over the TCP bootstrap).
struct Address {
  std::uint32_t qpn = 0, psn = 0;
  std::uint16_t lid = 0;
  std::uint8_t gid[16] = {};
  std::uint64_t segment_addr = 0, headers_addr = 0;
  std::uint32_t segment_rkey = 0, headers_rkey = 0, segment_bytes = 0;
  int mtu = 0;  // enum ibv_mtu value
  bool remote_read = false;  // whether its segment may be RDMA-read
  // What the peer's one-way requests and stores may count on (Transport::max_credits): receives always
  // posted (rq_depth less one re-post batch), bulk-store header slots, and the bytes a receive holds.
  std::uint32_t rq_depth = 0, recv_batch = 0, header_slots = 0, recv_slot_bytes = 0;
};
nlohmann::json to_json(const Address& a);
Address address_from_json(const nlohmann::json& j);  // throws PeerError on a malformed address

class Device {
 public:
  static constexpr std::uint32_t kUdQkey = 0x11111111;
  static constexpr std::uint32_t kGrhBytes = 40;  // a UD receive starts with the GRH (or room for it)

  explicit Device(const DeviceOptions& opt);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  Address local_address() const;
  void connect(const Address& peer);  // INIT -> RTR -> RTS

  ibv_context* ctx() const { return ctx_; }
  ibv_qp* qp() const { return qp_; }
  ibv_cq* send_cq() const { return send_cq_; }
  ibv_cq* recv_cq() const { return recv_cq_; }
  ibv_comp_channel* channel() const { return channel_; }
  std::byte* segment() const { return segment_; }
  std::byte* headers() const { return headers_; }
  std::byte* recv_buffers() const { return recv_buf_; }
  std::byte* tx_buffers() const { return tx_buf_; }     // sq_depth slots: frames (and medium AMs) sent from memory
  std::uint32_t tx_slot_bytes() const { return recv_slot_bytes(); }
  std::byte* staging() const { return staging_; }       // bulk data that is not already in the segment
  std::uint32_t tx_lkey() const { return tx_mr_->lkey; }
  std::uint32_t staging_lkey() const { return staging_mr_->lkey; }
  std::uint32_t segment_lkey() const { return seg_mr_->lkey; }
  std::uint32_t recv_lkey() const { return recv_mr_->lkey; }
  // A receive slot holds one frame, after the GRH on UD; on RC one packet of the port's MTU, so a medium
  // AM (the frame and its payload in one SEND, see transport.hpp) fits.
  std::uint32_t recv_slot_bytes() const { return opt_.ud ? 128 : mtu_bytes(construct_mtu_); }
  std::uint32_t recv_frame_offset() const { return opt_.ud ? kGrhBytes : 0; }
  // Bulk-store header slots, one per receive: every store in flight also holds one of our receives, so
  // the limits that keep receives from running out (max_credits, the window) keep the ring unlapped.
  std::uint32_t header_slots() const { return static_cast<std::uint32_t>(opt_.rq_depth); }
  int recv_batch() const;
  std::uint32_t path_mtu_bytes() const { return mtu_bytes(path_mtu_); }
  ibv_ah* ah() const { return ah_; }              // UD: the peer's address handle
  std::uint32_t peer_qpn() const { return peer_qpn_; }
  const DeviceOptions& options() const { return opt_; }
  std::uint32_t max_inline() const { return max_inline_; }
  int numa_node() const { return numa_node_; }
  nlohmann::json describe() const;

 private:
  DeviceOptions opt_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq *send_cq_ = nullptr, *recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_ah* ah_ = nullptr;
  std::uint32_t peer_qpn_ = 0;
  ibv_mr *seg_mr_ = nullptr, *hdr_mr_ = nullptr, *recv_mr_ = nullptr, *tx_mr_ = nullptr, *staging_mr_ = nullptr;
  std::byte *segment_ = nullptr, *headers_ = nullptr, *recv_buf_ = nullptr, *tx_buf_ = nullptr, *staging_ = nullptr;
  std::size_t segment_alloc_ = 0, headers_alloc_ = 0, recv_alloc_ = 0, tx_alloc_ = 0;
  ibv_port_attr port_attr_{};
  ibv_gid gid_{};
  int gid_index_ = 0;
  std::string gid_type_;
  std::uint32_t psn_ = 0, max_inline_ = 0;
  int numa_node_ = -1;
  ibv_mtu path_mtu_ = IBV_MTU_1024;
  ibv_mtu construct_mtu_ = IBV_MTU_1024;  // --ib-mtu or the port's active MTU: sizes the receive slots
  std::string name_;
};

std::string mtu_string(int ibv_mtu_value);

}  // namespace logpb::verbs
