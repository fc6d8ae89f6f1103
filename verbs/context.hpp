// Verbs control path, readable top to bottom like rc_pingpong: open the device, check the port, pick a
// GID, allocate the PD, register the memory, create the CQs and one queue pair per peer rank, and (once
// a peer's address is known) take its QP through INIT -> RTR -> RTS. Every failure names the call and
// what to check. verbs/connect.hpp drives this over the job's Ranks; verbs/transport.hpp is the datapath.
//
// One context per rank, shared by all its connections (after eRPC's split of the device from the
// datapath): the device, the PD, ONE send CQ and ONE receive CQ for every QP (one poll serves all
// peers), the registered segment (every peer's bulk stores land in it; placement within it is the AM
// layer's business), and per peer: an RC QP with its own receive queue and receive buffers, a ring of
// bulk-store header slots that only that peer writes into, and a ring of send slots. Own receive queues
// rather than a shared receive queue: the bound on one-way requests (Transport::max_credits) then holds
// per peer, whatever the other peers do, and a pair keeps exactly the queues it had.
// UD (--ud) is one datagram QP with one address handle: two ranks only (refused for more).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verbs/options.hpp"

namespace logpb::verbs {

inline std::uint32_t mtu_bytes(ibv_mtu m) { return 128u << static_cast<int>(m); }  // IBV_MTU_256 = 1

// What rank s needs to reach rank r over the QP r keeps for s (exchanged by the connect step): r's QP
// for s, r's segment (the same for every s), and the header ring r keeps for s's bulk stores.
struct Address {
  std::uint32_t qpn = 0, psn = 0;
  std::uint16_t lid = 0;
  std::uint8_t gid[16] = {};
  std::uint64_t segment_addr = 0, headers_addr = 0;
  std::uint32_t segment_rkey = 0, headers_rkey = 0, segment_bytes = 0;
  int mtu = 0;               // enum ibv_mtu value
  bool remote_read = false;  // whether its segment may be RDMA-read
  // What the peer's one-way requests and stores may count on (Transport::max_credits): receives always
  // posted (rq_depth less one re-post batch), bulk-store header slots, and the bytes a receive holds.
  std::uint32_t rq_depth = 0, recv_batch = 0, header_slots = 0, recv_slot_bytes = 0;
};
nlohmann::json to_json(const Address& a);
Address address_from_json(const nlohmann::json& j);  // throws PeerError on a malformed address

class Context {
 public:
  static constexpr std::uint32_t kUdQkey = 0x11111111;
  static constexpr std::uint32_t kGrhBytes = 40;  // a UD receive starts with the GRH (or room for it)
  static constexpr std::uint32_t kHeaderBytes = 64;

  // This rank of a job of `size` ranks: one QP for each other rank (UD: size must be 2).
  Context(const DeviceOptions& opt, int rank, int size);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  int rank() const { return rank_; }
  int size() const { return size_; }
  Address local_address(int peer) const;     // what `peer` needs to reach us
  void connect(int peer, const Address& a);  // INIT -> RTR -> RTS (UD: the address handle)

  ibv_context* ctx() const { return ctx_; }
  ibv_qp* qp(int peer) const { return links_[peer].qp; }
  ibv_ah* ah(int peer) const { return links_[peer].ah; }  // UD: the peer's address handle
  std::uint32_t path_mtu_bytes(int peer) const { return mtu_bytes(links_[peer].path_mtu); }
  ibv_cq* send_cq() const { return send_cq_; }
  ibv_cq* recv_cq() const { return recv_cq_; }
  ibv_comp_channel* channel() const { return channel_; }
  std::byte* segment() const { return segment_; }
  // Per peer: the header ring it writes its bulk-store headers into (header_slots() slots, then one
  // scratch slot a flush write may land in), our receive buffers for its QP, our send slots for it.
  std::byte* headers(int peer) const { return headers_ + region(peer) * header_ring_bytes(); }
  std::byte* recv_buffers(int peer) const {
    return recv_buf_ + region(peer) * static_cast<std::size_t>(opt_.rq_depth) * recv_slot_bytes();
  }
  std::byte* tx_buffers(int peer) const {
    return tx_buf_ + region(peer) * static_cast<std::size_t>(opt_.sq_depth) * tx_slot_bytes();
  }
  std::uint32_t tx_slot_bytes() const { return recv_slot_bytes(); }
  std::byte* staging() const { return staging_; }  // bulk data that is not already in the segment
  std::uint32_t tx_lkey() const { return tx_mr_->lkey; }
  std::uint32_t staging_lkey() const { return staging_mr_->lkey; }
  std::uint32_t segment_lkey() const { return seg_mr_->lkey; }
  std::uint32_t recv_lkey() const { return recv_mr_->lkey; }
  // A receive slot holds one frame, after the GRH on UD; on RC one packet of the port's MTU, so a medium
  // AM (the frame and its payload in one SEND, see transport.hpp) fits.
  std::uint32_t recv_slot_bytes() const { return opt_.ud ? 128 : mtu_bytes(construct_mtu_); }
  std::uint32_t recv_frame_offset() const { return opt_.ud ? kGrhBytes : 0; }
  // Bulk-store header slots per peer, one per receive of its QP: every store in flight also holds one of
  // our receives, so the limits that keep receives from running out (max_credits, the window) keep the
  // ring unlapped.
  std::uint32_t header_slots() const { return static_cast<std::uint32_t>(opt_.rq_depth); }
  std::size_t header_ring_bytes() const { return (static_cast<std::size_t>(header_slots()) + 1) * kHeaderBytes; }
  int recv_batch() const;
  const DeviceOptions& options() const { return opt_; }
  std::uint32_t max_inline() const { return max_inline_; }
  int numa_node() const { return numa_node_; }
  nlohmann::json describe() const;

 private:
  // The constructor's steps, in order: each sets the members it names.
  void open_device();      // ctx_, name_, port_attr_ (the port must be ACTIVE)
  void pick_gid();         // gid_, gid_index_, gid_type_
  void create_cqs();       // pd_, channel_ (event mode), send_cq_, recv_cq_
  void register_memory();  // the buffers on the device's NUMA node and their memory regions
  void create_qps();       // one QP per peer in links_, and max_inline_
  // Memory regions hold one part per peer, in rank order, none for this rank.
  std::size_t region(int peer) const { return static_cast<std::size_t>(peer < rank_ ? peer : peer - 1); }
  struct Link {
    ibv_qp* qp = nullptr;
    ibv_ah* ah = nullptr;
    std::uint32_t psn = 0;
    ibv_mtu path_mtu = IBV_MTU_1024;
  };

  DeviceOptions opt_;
  int rank_ = 0, size_ = 2;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq *send_cq_ = nullptr, *recv_cq_ = nullptr;
  std::vector<Link> links_;  // by rank; this rank's entry unused
  ibv_mr *seg_mr_ = nullptr, *hdr_mr_ = nullptr, *recv_mr_ = nullptr, *tx_mr_ = nullptr, *staging_mr_ = nullptr;
  std::byte *segment_ = nullptr, *headers_ = nullptr, *recv_buf_ = nullptr, *tx_buf_ = nullptr, *staging_ = nullptr;
  std::size_t segment_alloc_ = 0, headers_alloc_ = 0, recv_alloc_ = 0, tx_alloc_ = 0;
  ibv_port_attr port_attr_{};
  ibv_gid gid_{};
  int gid_index_ = 0;
  std::string gid_type_;
  std::uint32_t max_inline_ = 0;
  int numa_node_ = -1;
  ibv_mtu construct_mtu_ = IBV_MTU_1024;  // --ib-mtu or the port's active MTU: sizes the receive slots
  std::string name_;
};

std::string mtu_string(int ibv_mtu_value);

}  // namespace logpb::verbs
