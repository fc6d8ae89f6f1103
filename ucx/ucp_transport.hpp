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
// Local completion: every send is complete when the call returns: UCP completed it in the call (a NULL
// request), or the call progressed the request UCP returned until its callback.
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

#include "common/frame.hpp"
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
  std::uint64_t sends = 0, requests = 0, medium_stores = 0, bulk_stores = 0, puts = 0, fences = 0, gets = 0, full = 0;
};

class UcpTransport : public Datapath<UcpTransport, UcpPeer> {
 public:
  explicit UcpTransport(UcpSetup s);

  // UCP's AM receive handler (registered by the control path with this transport as its argument).
  static ucs_status_t on_am(void* arg, const void* header, std::size_t header_length, void* data, std::size_t length,
                            const ucp_am_recv_param_t* param);
  // Set by UcpConnection's destructor once the transport is gone and before it closes the endpoints:
  // closing cancels the requests still in flight, and their callbacks must neither touch the slots (freed)
  // nor throw (they run inside that destructor: std::terminate).
  static inline bool closing = false;
  // An endpoint's error handler under --ucp-err-mode peer (arg: this transport): the peer is lost. Noted, and
  // thrown by the next progress() as a datapath failure (exit 3), as a failed request's callback is.
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

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

  void progress() {
    progress_by("ucp_worker_progress", [this] { ucp_worker_progress(worker_); });
  }
  nlohmann::json describe() const;

 private:
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
  // A request UCP returned (the send waits in UCP's own queue, or for the transport's completion): it is
  // progressed to its callback here, so the call returns complete. A request left for a later progress
  // call would wait for one that may never come: a rank whose last message is queued and that goes on to
  // a bootstrap collective (k-to-one's stream end over posix hung so, 2 runs in 7); an error ends the run.
  void in_flight(ucs_status_ptr_t r, Ops::Slot& s, const char* call) {
    if (r == nullptr) [[likely]]
      return;
    if (UCS_PTR_IS_ERR(r)) [[unlikely]]
      fail_datapath(UCS_PTR_STATUS(r), call);
    Ops::add_part(s);
    ++counters_.requests;
    settle(s, call);
  }
  void settle(Ops::Slot& s, const char* call);
  static void on_sent(void* request, ucs_status_t status, void* user_data);
  struct Get {
    UcpTransport* self;
    am::Frame frame;
  };
  static void on_got(void* request, ucs_status_t status, void* user_data);

  ucp_worker_h worker_;
  std::vector<std::unique_ptr<Get>> gets_;
  std::vector<Get*> free_gets_;
  UcpCounters counters_;
};

}  // namespace logpb::ucx
