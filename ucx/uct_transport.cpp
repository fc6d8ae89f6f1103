// The UCT datapath's cold parts: stores, gets, completions, errors and describe().
#include "ucx/uct_transport.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "common/errors.hpp"

namespace logpb::ucx {

namespace {
constexpr std::size_t kOpSlots = 256;    // operations that may be in flight at once (zcopy puts)
constexpr double kResourceWaitS = 30.0;  // an operation's later calls waiting this long for resources: broken

struct Pack {
  const am::Frame* frame;
  const void* payload;
  std::uint32_t n;
};
std::size_t pack_message(void* dest, void* arg) {
  const Pack& p = *static_cast<const Pack*>(arg);
  auto* d = static_cast<std::byte*>(dest);
  std::size_t len = 0;
  if (p.frame) {
    std::memcpy(d, p.frame, sizeof(am::Frame));
    len = sizeof(am::Frame);
  }
  if (p.n) std::memcpy(d + len, p.payload, p.n);
  return len + p.n;
}
void unpack_into(void* arg, const void* data, std::size_t length) { std::memcpy(arg, data, length); }
}  // namespace

UctTransport::UctTransport(UctSetup s)
    : Datapath(s.rank, s.size, s.segment, s.segment_bytes, std::move(s.peer_alive), s.yield_when_idle, kOpSlots, 0),
      worker_(s.worker),
      caps_(s.caps),
      segment_memh_(s.segment_memh),
      staging_(s.staging),
      staging_memh_(s.staging_memh) {}

ucs_status_t UctTransport::on_iface_error(void* arg, uct_ep_h /*ep*/, ucs_status_t status) {
  if (UctTransport* self = *static_cast<UctTransport**>(arg))
    self->callback_error_.set(status, "a UCT endpoint (the interface's error handler: the peer is lost)");
  return UCS_OK;  // handled: the endpoint stays failed, and the run ends at the next progress call
}

ucs_status_t UctTransport::on_am(void* arg, void* data, std::size_t length, unsigned /*flags*/) {
  auto* self = static_cast<UctTransport*>(arg);
  if (length < sizeof(am::Frame)) [[unlikely]] {
    self->inbox_.land(data, length, nullptr, 0);  // refused and counted
    return UCS_OK;
  }
  self->inbox_.land(data, sizeof(am::Frame), static_cast<const std::byte*>(data) + sizeof(am::Frame),
                    length - sizeof(am::Frame));
  return UCS_OK;  // copied: UCT may reuse its buffer
}

bool UctTransport::no_resource(ucs_status_t s, const char* call) {
  if (s != UCS_ERR_NO_RESOURCE) [[unlikely]]
    fail_datapath(s, call);
  ++counters_.no_resource;
  progress();
  return false;
}

bool UctTransport::send_bcopy(const UctPeer& p, const am::Frame& out, const void* payload, std::uint32_t n) {
  Pack pack{&out, payload, n};
  guard_.enter("uct_ep_am_bcopy");
  const ssize_t r = uct_ep_am_bcopy(p.ep, kAmId, pack_message, &pack, 0);
  guard_.leave();
  if (r >= 0) [[likely]] {
    ++counters_.bcopies;
    return true;
  }
  return no_resource(static_cast<ucs_status_t>(r), "uct_ep_am_bcopy");
}

template <class Call>
void UctTransport::until_taken(Call&& call, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 1;; ++i) {
    const ucs_status_t s = call();
    if (s != UCS_ERR_NO_RESOURCE) {
      if (s != UCS_OK && s != UCS_INPROGRESS) fail_datapath(s, what);
      return;
    }
    ++counters_.no_resource;
    progress();
    if (i % 4096 == 0) {
      throw_if_interrupted();
      if (!peer_alive_()) throw PeerError(std::string("ucx: a peer is gone while ") + what + " waited for resources");
      if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(kResourceWaitS))
        throw PeerError(std::string("ucx: ") + what + " found no resources for " +
                        std::to_string(static_cast<int>(kResourceWaitS)) + " s");
    }
  }
}

UctTransport::Completion* UctTransport::take_completion(Ops::Slot* slot, Get* get) {
  if (free_completions_.empty()) {
    completions_.push_back(std::make_unique<Completion>());
    free_completions_.push_back(completions_.back().get());
  }
  Completion* c = free_completions_.back();
  free_completions_.pop_back();
  c->c = {.func = &UctTransport::on_done, .count = 1, .status = UCS_OK};
  c->self = this;
  c->slot = slot;
  c->get = get;
  if (slot) Ops::add_part(*slot);
  if (get) ++get->pending;
  return c;
}

void UctTransport::on_done(uct_completion_t* uc) {
  auto* c = reinterpret_cast<Completion*>(uc);
  UctTransport& t = *c->self;
  if (uc->status != UCS_OK) [[unlikely]]
    t.callback_error_.set(uc->status, c->get ? "a get (its uct completion)" : "a put (its uct completion)");
  if (c->slot) Ops::part_done(*c->slot);
  if (c->get) t.get_piece_done(c->get);
  t.give_back(c);
}

void UctTransport::get_piece_done(Get* g) {
  if (--g->pending != 0) return;
  inbox_.push(g->frame);
  free_gets_.push_back(g);
}

bool UctTransport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  const UctPeer& p = peer(f.dst);
  alignas(64) am::Frame out = f;
  out.bulk_len = n;
  out.bulk_off = remote_off;
  if (sizeof(am::Frame) + n <= caps_.am_bcopy) {
    out.seq = tx_seq_;
    if (!send_bcopy(p, out, src, n)) return false;
    ++tx_seq_;
    ++counters_.medium_stores;
    ops_.complete_now();
    return true;
  }
  const bool put = p.rma && (caps_.put_bcopy || caps_.put_zcopy);
  if (put ? !store_put(p, out, src, n, remote_off) : !store_chunks(p, out, src, n)) return false;
  ++counters_.bulk_stores;
  return true;
}

bool UctTransport::store_put(const UctPeer& p, am::Frame& out, const void* src, std::uint32_t n,
                             std::uint32_t remote_off) {
  if (!ops_.room()) {
    progress();
    return false;
  }
  const bool bcopy = caps_.put_bcopy != 0;
  const std::size_t piece_max = bcopy ? caps_.put_bcopy : caps_.put_zcopy;
  // put_zcopy reads registered memory: the segment itself, or a staging copy of outside data.
  const auto* from = static_cast<const std::byte*>(src);
  uct_mem_h memh = segment_memh_;
  if (!bcopy && !(from >= segment_ && from + n <= segment_ + segment_bytes_)) {
    // One staging area: a put still reading it (an earlier store's, in flight) must finish first.
    until_taken([&] { return ops_.in_flight() ? UCS_ERR_NO_RESOURCE : UCS_OK; }, "an earlier staged put");
    std::memcpy(staging_, src, n);
    from = staging_;
    memh = staging_memh_;
    ++counters_.staged;
  }
  Ops::Slot& slot = ops_.begin();
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t piece = static_cast<std::uint32_t>(std::min<std::size_t>(n - done, piece_max));
    const std::uint64_t to = p.segment_addr + remote_off + done;
    auto call = [&]() -> ucs_status_t {
      if (bcopy) {
        Pack pk{nullptr, from + done, piece};
        guard_.enter("uct_ep_put_bcopy");
        const ssize_t r = uct_ep_put_bcopy(p.bulk_ep, pack_message, &pk, to, p.rkey);
        guard_.leave();
        return r >= 0 ? UCS_OK : static_cast<ucs_status_t>(r);
      }
      Completion* c = take_completion(&slot, nullptr);
      uct_iov_t iov{const_cast<std::byte*>(from + done), piece, memh, 0, 1};
      guard_.enter("uct_ep_put_zcopy");
      const ucs_status_t s = uct_ep_put_zcopy(p.bulk_ep, &iov, 1, to, p.rkey, &c->c);
      guard_.leave();
      if (s != UCS_INPROGRESS) {  // no callback will come
        --slot.parts;
        give_back(c);
      }
      return s;
    };
    until_taken(call, bcopy ? "uct_ep_put_bcopy" : "uct_ep_put_zcopy");
    ++counters_.puts;
    done += piece;
  }
  if (caps_.bulk_same_iface) {
    until_taken([&] { return uct_ep_fence(p.ep, 0); }, "uct_ep_fence");
    ++counters_.fences;
  } else {
    // Another interface: no fence orders the frame after the data; wait until the puts completed.
    until_taken([&] { return slot.parts > 1 ? UCS_ERR_NO_RESOURCE : UCS_OK; }, "a put's completion");
  }
  out.seq = tx_seq_;
  until_taken([&] { return send_frame(p, out, tx_seq_) ? UCS_OK : UCS_ERR_NO_RESOURCE; }, "the frame after a put");
  ++tx_seq_;
  ops_.commit(slot);
  return true;
}

bool UctTransport::store_chunks(const UctPeer& p, am::Frame& out, const void* src, std::uint32_t n) {
  if (caps_.am_bcopy <= sizeof(am::Frame)) [[unlikely]]
    throw PeerError("ucx: a store of " + std::to_string(n) + " bytes, and this interface has neither put nor am_bcopy");
  const std::uint32_t piece_max = static_cast<std::uint32_t>(caps_.am_bcopy - sizeof(am::Frame));
  const auto* from = static_cast<const std::byte*>(src);
  const std::uint32_t off = out.bulk_off;
  bool first = true;
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t piece = std::min(n - done, piece_max);
    alignas(64) am::Frame chunk = out;
    chunk.seq = kChunk;
    chunk.bulk_off = off + done;
    chunk.bulk_len = piece;
    if (first) {
      if (!send_bcopy(p, chunk, from + done, piece)) return false;  // nothing sent yet: the AM layer retries
      first = false;
    } else {
      until_taken([&] { return send_bcopy(p, chunk, from + done, piece) ? UCS_OK : UCS_ERR_NO_RESOURCE; },
                  "uct_ep_am_bcopy (a store's data)");
    }
    ++counters_.chunks;
    done += piece;
  }
  until_taken([&] { return uct_ep_fence(p.ep, 0); }, "uct_ep_fence");
  ++counters_.fences;
  out.seq = tx_seq_;
  out.bulk_len = n;
  out.bulk_off = off;
  until_taken([&] { return send_frame(p, out, tx_seq_) ? UCS_OK : UCS_ERR_NO_RESOURCE; }, "the frame after a store");
  ++tx_seq_;
  ops_.complete_now();
  return true;
}

bool UctTransport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  const UctPeer& p = peer(f.src);
  if (!p.rma || !(caps_.get_bcopy || caps_.get_zcopy)) [[unlikely]]
    throw PeerError("ucx: a get on an interface without get or a peer's key (the control path should refuse it)");
  if (local_off > segment_bytes_ || n > segment_bytes_ - local_off) [[unlikely]]
    throw PeerError("ucx: a get beyond this rank's segment");
  if (free_gets_.empty()) {
    gets_.push_back(std::make_unique<Get>());
    free_gets_.push_back(gets_.back().get());
  }
  Get* g = free_gets_.back();
  free_gets_.pop_back();
  g->frame = f;
  g->frame.bulk_len = n;
  g->frame.bulk_off = local_off;
  g->pending = 1;  // until every piece is posted
  const bool bcopy = caps_.get_bcopy >= n || !caps_.get_zcopy;
  const std::size_t piece_max = bcopy ? caps_.get_bcopy : caps_.get_zcopy;
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t piece = static_cast<std::uint32_t>(std::min<std::size_t>(n - done, piece_max));
    std::byte* to = segment_ + local_off + done;
    const std::uint64_t from = p.segment_addr + remote_off + done;
    auto call = [&]() -> ucs_status_t {
      Completion* c = take_completion(nullptr, g);
      ucs_status_t s;
      if (bcopy) {
        guard_.enter("uct_ep_get_bcopy");
        s = uct_ep_get_bcopy(p.bulk_ep, unpack_into, to, piece, from, p.rkey, &c->c);
      } else {
        uct_iov_t iov{to, piece, segment_memh_, 0, 1};
        guard_.enter("uct_ep_get_zcopy");
        s = uct_ep_get_zcopy(p.bulk_ep, &iov, 1, from, p.rkey, &c->c);
      }
      guard_.leave();
      if (s != UCS_INPROGRESS) {
        --g->pending;
        give_back(c);
      }
      return s;
    };
    if (done == 0) {
      const ucs_status_t s = call();
      if (s == UCS_ERR_NO_RESOURCE) {
        free_gets_.push_back(g);
        return no_resource(s, "uct_ep_get");
      }
      if (s != UCS_OK && s != UCS_INPROGRESS) fail_datapath(s, bcopy ? "uct_ep_get_bcopy" : "uct_ep_get_zcopy");
    } else {
      until_taken(call, bcopy ? "uct_ep_get_bcopy" : "uct_ep_get_zcopy");
    }
    done += piece;
  }
  ++counters_.gets;
  get_piece_done(g);  // the guard: delivers now if every piece completed in its call
  return true;
}

nlohmann::json UctTransport::describe() const {
  const UctCounters& c = counters_;
  nlohmann::json j = describe_common();
  j["small_am"] = caps_.am_short >= sizeof(am::Frame)
                      ? "uct_ep_am_short: 8 bytes of header and 56 of payload; complete when the call returns"
                      : "uct_ep_am_bcopy (64 bytes do not fit am_short here): copied, complete when the call returns";
  j["store"] = "up to " + std::to_string(caps_.am_bcopy > sizeof(am::Frame) ? caps_.am_bcopy - sizeof(am::Frame) : 0) +
               " bytes: one uct_ep_am_bcopy with the frame; larger: " +
               (caps_.put_bcopy || caps_.put_zcopy
                    ? std::string(caps_.put_bcopy ? "uct_ep_put_bcopy" : "uct_ep_put_zcopy") +
                          " into the peer's segment, then " +
                          (caps_.bulk_same_iface ? "uct_ep_fence and the frame"
                                                 : "the frame once the puts completed (they are on another interface)")
                    : "am_bcopy data messages, uct_ep_fence, then the frame (no put on this interface)");
  j["get"] = caps_.get_bcopy || caps_.get_zcopy
                 ? std::string(caps_.get_bcopy ? "uct_ep_get_bcopy" : "uct_ep_get_zcopy") +
                       " into the segment; its completion delivers the frame locally"
                 : "none (no get on this interface)";
  j["receive"] =
      "UCT's AM handler (called inside uct_worker_progress) copies each message's frame into a queue and its "
      "payload into the segment; poll() progresses once when the queue is empty and hands up what is queued";
  j["completion_means"] =
      "UCT's local completion: short and bcopy calls copy the data and return complete, so Bell's flood, "
      "Doerfler's wait and the overlap see the send call alone for small AMs and medium stores; a zcopy put is "
      "complete when its uct_completion_t fires (the transport may still be sending it)";
  j["counters"].update({{"am_short", c.shorts},
                        {"am_bcopy", c.bcopies},
                        {"puts", c.puts},
                        {"fences", c.fences},
                        {"gets", c.gets},
                        {"store_data_messages", c.chunks},
                        {"no_resource", c.no_resource},
                        {"medium_stores", c.medium_stores},
                        {"bulk_stores", c.bulk_stores},
                        {"staged", c.staged}});
  return j;
}

}  // namespace logpb::ucx
