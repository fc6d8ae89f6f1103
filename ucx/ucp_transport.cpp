// The UCP datapath's cold parts: stores, gets, callbacks, errors and describe().
#include "ucx/ucp_transport.hpp"

#include <chrono>

#include "common/errors.hpp"

namespace logpb::ucx {

namespace {
constexpr std::size_t kOpSlots = 256;  // sends that may wait for their requests at once
}  // namespace

UcpTransport::UcpTransport(UcpSetup s)
    : Datapath(s.rank, s.size, s.segment, s.segment_bytes, std::move(s.peer_alive), s.yield_when_idle, kOpSlots,
               kPayloadMax),
      worker_(s.worker) {
  ops_.set_context(this);
}

ucs_status_t UcpTransport::on_am(void* arg, const void* header, std::size_t header_length, void* data,
                                 std::size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcpTransport*>(arg);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) [[unlikely]] {
    self->inbox_.note_rendezvous_refused();  // logpbench sends every AM eager: not ours
    return UCS_OK;
  }
  self->inbox_.land(header, header_length, data, length);
  return UCS_OK;  // copied: UCP may release the data
}

// The callbacks run inside UCP: an error is noted (Ops::fail) and thrown by the next progress().
void UcpTransport::on_sent(void* request, ucs_status_t status, void* user_data) {
  if (closing) [[unlikely]] {
    ucp_request_free(request);
    return;
  }
  auto& slot = *static_cast<Ops::Slot*>(user_data);
  if (status != UCS_OK) [[unlikely]]
    static_cast<UcpTransport*>(slot.owner->context())->callback_error_.set(status, "a UCP send (its request)");
  Ops::part_done(slot);
  ucp_request_free(request);
}

void UcpTransport::on_ep_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  if (closing) [[unlikely]]
    return;  // the endpoints' own closing (the transport is gone)
  static_cast<UcpTransport*>(arg)->callback_error_.set(status, "a UCP endpoint (its error handler: the peer is lost)");
}

void UcpTransport::on_got(void* request, ucs_status_t status, void* user_data) {
  if (closing) [[unlikely]] {
    ucp_request_free(request);
    return;
  }
  auto* g = static_cast<Get*>(user_data);
  if (status != UCS_OK) [[unlikely]]
    g->self->callback_error_.set(status, "ucp_get_nbx (its request)");
  g->self->inbox_.push(g->frame);
  g->self->free_gets_.push_back(g);
  ucp_request_free(request);
}

void UcpTransport::settle(Ops::Slot& s, const char* call) {
  constexpr double kRequestWaitS = 30.0;  // a request not complete after this long: the communication broke
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 1; s.parts > 1; ++i) {  // the one part left is commit()'s
    progress();
    if (i % 4096 == 0) {
      throw_if_interrupted();
      if (!peer_alive_()) throw PeerError(std::string("ucx: a peer is gone while ") + call + "'s request waited");
      if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(kRequestWaitS))
        throw PeerError(std::string("ucx: ") + call + "'s request did not complete in 30 s");
    }
  }
}

bool UcpTransport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  const UcpPeer& p = peer(f.dst);
  if (!ops_.room()) return full();
  Ops::Slot& s = ops_.begin();
  s.frame = f;
  s.frame.bulk_len = n;
  s.frame.bulk_off = remote_off;
  s.frame.seq = tx_seq_++;
  if (n <= kPayloadMax) {
    std::memcpy(s.payload, src, n);
    send_am(p, s, s.payload, n);
    ++counters_.medium_stores;
    return true;
  }
  // The data by put, then the frame alone: it must not carry the payload again (bulk_len says where the
  // data already is), so it travels as a frame with no data and the receiver finds the bytes in place.
  ucp_request_param_t rp;
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &UcpTransport::on_sent;
  rp.user_data = &s;
  guard_.enter("ucp_put_nbx");
  const ucs_status_ptr_t r = ucp_put_nbx(p.ep, src, n, p.segment_addr + remote_off, p.rkey, &rp);
  guard_.leave();
  in_flight(r, s, "ucp_put_nbx");
  ++counters_.puts;
  guard_.enter("ucp_worker_fence");
  const ucs_status_t fs = ucp_worker_fence(worker_);
  guard_.leave();
  if (fs != UCS_OK) fail_datapath(fs, "ucp_worker_fence");
  ++counters_.fences;
  send_am(p, s, nullptr, 0);
  ++counters_.bulk_stores;
  return true;
}

bool UcpTransport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  const UcpPeer& p = peer(f.src);
  if (local_off > segment_bytes_ || n > segment_bytes_ - local_off) [[unlikely]]
    throw PeerError("ucx: a get beyond this rank's segment");
  if (free_gets_.empty()) {
    gets_.push_back(std::make_unique<Get>());
    gets_.back()->self = this;
    free_gets_.push_back(gets_.back().get());
  }
  Get* g = free_gets_.back();
  free_gets_.pop_back();
  g->frame = f;
  g->frame.bulk_len = n;
  g->frame.bulk_off = local_off;
  ucp_request_param_t rp;
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &UcpTransport::on_got;
  rp.user_data = g;
  guard_.enter("ucp_get_nbx");
  const ucs_status_ptr_t r = ucp_get_nbx(p.ep, segment_ + local_off, n, p.segment_addr + remote_off, p.rkey, &rp);
  guard_.leave();
  ++counters_.gets;
  if (r == nullptr) {
    inbox_.push(g->frame);
    free_gets_.push_back(g);
  } else if (UCS_PTR_IS_ERR(r)) [[unlikely]] {
    fail_datapath(UCS_PTR_STATUS(r), "ucp_get_nbx");
  }
  return true;
}

nlohmann::json UcpTransport::describe() const {
  const UcpCounters& c = counters_;
  nlohmann::json j = describe_common();
  j["small_am"] =
      "ucp_am_send_nbx, eager, the frame as the AM's header and no data, from a slot held until the "
      "send completes";
  j["store"] = "up to " + std::to_string(kPayloadMax) +
               " bytes: one eager ucp_am_send_nbx, the frame as header and the payload (copied into the slot) as "
               "data; larger: ucp_put_nbx into the peer's segment, ucp_worker_fence, then the frame";
  j["get"] = "ucp_get_nbx into the segment; its completion delivers the frame locally";
  j["receive"] =
      "UCP's AM handler (called inside ucp_worker_progress) queues the frame and copies any data into "
      "the segment; poll() progresses once when the queue is empty and hands up what is queued";
  j["completion_means"] =
      "UCP's request, waited for in the call: a send is complete when ucp_am_send_nbx (or ucp_put_nbx) returns no "
      "request, or once the request it returned has completed, which the call progresses UCP for (counters."
      "requests). Bell's flood, Doerfler's wait and the overlap see the call: for small eager AMs over shared "
      "memory or a short-capable transport the send alone, under back-pressure also the wait for UCP to send it";
  j["counters"].update({{"sends", c.sends},
                        {"requests", c.requests},
                        {"medium_stores", c.medium_stores},
                        {"bulk_stores", c.bulk_stores},
                        {"puts", c.puts},
                        {"fences", c.fences},
                        {"gets", c.gets},
                        {"slots_full", c.full}});
  return j;
}

}  // namespace logpb::ucx
