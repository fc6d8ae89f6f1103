// UCP datapath: the AM layer over UCP, one worker and one endpoint per peer (ucx/ucp_connect.hpp opens
// them). This is the rung ucx_perftest's -t ucp_am_lat measures and Open MPI's pml ucx sits on: UCP
// chooses the transports (UCX_TLS), the lanes and the protocol per size itself; meta.ucx records what it
// chose.
//
//  - A small AM is ucp_am_send_nbx with the frame as the AM's header and no data, eager
//    (UCP_AM_SEND_FLAG_EAGER). The header must live until the send completes (UCX 1.13 has no flag to copy
//    it), so it is sent from an Ops slot (ucx/transport.hpp) that a request still in flight holds.
//  - A store of up to kPayloadMax bytes is one eager AM, the frame as header and the payload (copied into
//    the slot) as data. A larger one is ucp_put_nbx into the peer's segment (mapped with ucp_mem_map, its
//    key unpacked with ucp_ep_rkey_unpack), ucp_worker_fence, then the frame.
//  - A get is ucp_get_nbx into the segment; its completion delivers the frame locally.
// Receives: UCP calls our AM handler from ucp_worker_progress with the header and the data; they land in
// the Inbox and poll() hands the frames up. A rendezvous AM (never sent by logpbench: every AM is eager)
// is refused and counted.
// Local completion: a send UCP completed in the call (a NULL request) is complete at once; one that
// returned a request holds its slot until the request's callback.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/call_guard.hpp"
#include "common/frame.hpp"
#include "common/transport.hpp"
#include "ucx/transport.hpp"

namespace logpb::ucx {

struct UcpPeer {
  ucp_ep_h ep = nullptr;  // null: not a peer
  std::uint64_t segment_addr = 0;
  ucp_rkey_h rkey = nullptr;
};

struct UcpSetup {
  int rank = 0, size = 0;
  ucp_worker_h worker = nullptr;
  std::byte* segment = nullptr;
  std::uint32_t segment_bytes = 0;
  std::function<bool()> peer_alive;
  bool yield_when_idle = false;
};

struct UcpCounters {
  std::uint64_t sends = 0, requests = 0, medium_stores = 0, bulk_stores = 0, puts = 0, fences = 0, gets = 0,
                full = 0, tracked = 0;
};

class UcpTransport {
 public:
  explicit UcpTransport(UcpSetup s);
  UcpTransport(const UcpTransport&) = delete;
  UcpTransport& operator=(const UcpTransport&) = delete;

  void set_peers(std::vector<UcpPeer> peers) { peers_ = std::move(peers); }
  void set_peer_alive(std::function<bool()> f);
  // UCP's AM receive handler (registered by the control path with this transport as its argument).
  static ucs_status_t on_am(void* arg, const void* header, std::size_t header_length, void* data, std::size_t length,
                            const ucp_am_recv_param_t* param);

  bool try_send(const am::Frame& f) {
    const UcpPeer& p = peer(f.dst);
    if (!ops_.room()) [[unlikely]]
      return full();
    Ops::Slot& s = ops_.begin();
    s.frame = f;
    s.frame.seq = tx_seq_++;
    send_am(p, s, nullptr, 0);
    ++counters_.sends;
    return true;
  }
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  template <class Sink>
  int poll(Sink&& sink) {
    if (inbox_.empty()) progress();
    return inbox_.drain(sink);
  }

  // LocalCompletion (common/transport.hpp).
  std::uint64_t tx_posted() const { return ops_.posted(); }
  void track_next() { ++counters_.tracked; }  // every request reports its completion anyway
  std::uint64_t tx_completed() {
    if (ops_.in_flight()) progress();
    return ops_.completed();
  }
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  void set_describe_head(nlohmann::json j) { head_ = std::move(j); }
  // The endpoints are about to be closed: the requests they cancel are no failure of the run.
  void closing() { ops_.closing(); }

 private:
  const UcpPeer& peer(std::uint16_t dst) const {
    if (dst >= peers_.size() || !peers_[dst].ep) [[unlikely]]
      bad_dst(dst);
    return peers_[dst];
  }
  [[noreturn]] void bad_dst(std::uint16_t dst) const;
  void progress() {
    guard_.enter("ucp_worker_progress");
    ucp_worker_progress(worker_);
    guard_.leave();
    ops_.throw_if_failed();
  }
  bool full() {
    ++counters_.full;
    progress();
    return false;
  }
  // The slot's frame as an eager AM's header, with n bytes of data from `data`; commits the slot.
  void send_am(const UcpPeer& p, Ops::Slot& s, const void* data, std::uint32_t n) {
    ucp_request_param_t rp;
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_AM_SEND_FLAG_EAGER;
    rp.cb.send = &UcpTransport::on_sent;
    rp.user_data = &s;
    guard_.enter("ucp_am_send_nbx");
    const ucs_status_ptr_t r = ucp_am_send_nbx(p.ep, kAmId, &s.frame, sizeof s.frame, data, n, &rp);
    guard_.leave();
    in_flight(r, s, "ucp_am_send_nbx");
    ops_.commit(s);
  }
  // A request UCP returned: the slot waits for its callback; an error ends the run.
  void in_flight(ucs_status_ptr_t r, Ops::Slot& s, const char* call) {
    if (r == nullptr) [[likely]]
      return;
    if (UCS_PTR_IS_ERR(r)) [[unlikely]]
      fail_datapath(UCS_PTR_STATUS(r), call);
    Ops::add_part(s);
    ++counters_.requests;
  }
  static void on_sent(void* request, ucs_status_t status, void* user_data);
  struct Get {
    UcpTransport* self;
    am::Frame frame;
  };
  static void on_got(void* request, ucs_status_t status, void* user_data);

  int rank_, size_;
  ucp_worker_h worker_;
  std::vector<UcpPeer> peers_;
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  std::function<bool()> peer_alive_;
  bool yield_when_idle_;
  std::uint32_t tx_seq_ = 0;
  Ops ops_;
  std::vector<std::unique_ptr<Get>> gets_;
  std::vector<Get*> free_gets_;
  Inbox inbox_;
  nlohmann::json head_;
  CallGuard guard_;
  UcpCounters counters_;
};

}  // namespace logpb::ucx
