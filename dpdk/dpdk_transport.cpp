#include "dpdk_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb::dpdk {

Transport::Transport(Port& port, const std::uint8_t peer_mac[6], const TransportOptions& opt,
                     std::function<bool()> peer_alive)
    : port_(port),
      peer_alive_(std::move(peer_alive)),
      burst_(std::clamp(opt.burst, 1, 512)),
      session_(opt.session),
      reflector_(opt.reflector),
      reflector_reply_handler_(opt.reflector_reply_handler),
      rng_(opt.seed | 1),
      segment_bytes_(opt.segment_bytes),
      drop_rate_(opt.drop_rate) {
  peer_rx_ring_ = opt.peer_rx_ring;
  if (opt.drop_rate < 0 || opt.drop_rate >= 1) throw UsageError("--drop-rate must be in [0, 1)");
  drop_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.drop_rate, 64));
  rte_ether_hdr eth{};
  std::memcpy(eth.dst_addr.addr_bytes, peer_mac, 6);
  std::memcpy(eth.src_addr.addr_bytes, port.mac(), 6);
  eth.ether_type = rte_cpu_to_be_16(kEtherType);
  std::memcpy(eth_template_, &eth, sizeof eth);
  chunk_bytes_ = port.max_frame_payload() - sizeof(WireHdr);
  medium_max_ = chunk_bytes_ - sizeof(am::Frame);  // the Port refuses MTUs below 128, so this is positive
  segment_ = static_cast<std::byte*>(rte_zmalloc_socket("logpb_segment", segment_bytes_, 64, port.socket()));
  if (!segment_) throw std::runtime_error("rte_zmalloc_socket of the " + std::to_string(segment_bytes_) + "-byte segment failed");
}

Transport::~Transport() {
  for (std::uint16_t i = rx_pos_; i < rx_n_; ++i) rte_pktmbuf_free(rx_[i]);
  for (; trk_head_ != trk_tail_; ++trk_head_) rte_pktmbuf_free(tracked_[trk_head_ % kTracked].m);  // our references
  rte_free(segment_);
}

void Transport::transmit_until_sent(rte_mbuf* m) {
  const bool tracked = track_pending_;
  if (tracked) rte_mbuf_refcnt_update(m, 1);
  for (long tries = 0; rte_eth_tx_burst(port_.id(), 0, &m, 1) != 1; ++tries) {
    ++counters_.tx_busy;
    if (tries > 100000000L) {
      if (tracked) rte_mbuf_refcnt_update(m, -1);
      rte_pktmbuf_free(m);
      throw PeerError("rte_eth_tx_burst: the DPDK tx ring never drained (link down or device stuck?)");
    }
  }
  ++tx_seq_;
  ++counters_.tx;
  if (tracked) record_tracked(m);
}

// The tracked send's last mbuf keeps one reference of ours beyond the PMD's: when the PMD frees it the
// count drops back to 1 and the mbuf stays ours until tx_completed() sees that. (A PMD using the
// MBUF_FAST_FREE offload would ignore reference counts; the port never enables it.)
bool Transport::transmit_tracked(rte_mbuf* m) noexcept {
  rte_mbuf_refcnt_update(m, 1);
  if (rte_eth_tx_burst(port_.id(), 0, &m, 1) != 1) {
    rte_mbuf_refcnt_update(m, -1);
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  ++tx_seq_;
  ++counters_.tx;
  record_tracked(m);
  return true;
}

void Transport::record_tracked(rte_mbuf* m) noexcept {
  // track_next() made room. The operation being sent is the next one: its number is tx_ops_ + 1.
  tracked_[trk_tail_ % kTracked] = {tx_ops_ + 1, m};
  ++trk_tail_;
  track_pending_ = false;
  ++counters_.tracked;
  // What the PMD does: copy-and-free inside tx_burst (memif copy mode), or keep the mbuf until the
  // device or the peer is done with it (zero copy, completion queues).
  if (rte_mbuf_refcnt_read(m) == 1) ++counters_.completed_in_tx_burst;
}

void Transport::track_next() {
  if (trk_tail_ - trk_head_ == kTracked) {
    // Every slot holds an operation the PMD has not finished: wait for the oldest, never overwrite it.
    for (long tries = 0; trk_tail_ - trk_head_ == kTracked; ++tries) {
      tx_completed();
      if (tries > 100000000L)
        throw PeerError("DPDK tx completion: " + std::to_string(kTracked) +
                        " tracked sends never completed (link down, or the PMD holds mbufs until more are sent)");
    }
  }
  track_pending_ = true;
}

std::uint64_t Transport::tx_completed() {
  while (trk_head_ != trk_tail_) {
    const Tracked& t = tracked_[trk_head_ % kTracked];
    if (rte_mbuf_refcnt_read(t.m) != 1) {
      // PMDs that free sent mbufs lazily, on a later tx_burst (af_xdp reaps its completion ring there),
      // are asked to reap them now: tx_done_cleanup where the PMD has it, else an empty tx burst.
      if (cleanup_supported_ && rte_eth_tx_done_cleanup(port_.id(), 0, 0) == -ENOTSUP) cleanup_supported_ = false;
      if (!cleanup_supported_) rte_eth_tx_burst(port_.id(), 0, nullptr, 0);
      if (rte_mbuf_refcnt_read(t.m) != 1) break;
    }
    rte_pktmbuf_free(t.m);
    tx_done_ = t.op;
    ++trk_head_;
    ++counters_.completed;
  }
  return tx_done_;
}

// Beside the one-way requests, the receiver's rx ring must hold a window of requests and one of replies,
// a frame per rx burst already taken from the ring but not yet consumed, and a few credit frames (one
// ask is outstanding at a time). One-way requests beyond that would overrun it: dropped frames on a
// NIC (imissed), a stalled sender on memif.
int Transport::max_credits(int window) const {
  constexpr int kCreditFrameMargin = 4;
  const int ring = peer_rx_ring_ > 0 ? std::min(port_.rx_ring(), peer_rx_ring_) : port_.rx_ring();
  const int room = ring - 2 * window - burst_ - kCreditFrameMargin;
  if (room < 2)
    throw UsageError("an rx ring of " + std::to_string(ring) + " frames leaves room for " + std::to_string(room) +
                     " one-way messages beside 2 x --window " + std::to_string(window) + ", --burst " +
                     std::to_string(burst_) + " and " + std::to_string(kCreditFrameMargin) +
                     " credit frames: raise --rx-ring (on both sides) or lower --window");
  return room;
}

const am::Frame* Transport::accept(rte_mbuf* m) {
  ++counters_.rx;
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  if (len < kHeaders || m->nb_segs != 1) {
    ++counters_.malformed;
    return nullptr;
  }
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  rte_ether_hdr eth;
  std::memcpy(&eth, p, sizeof eth);
  if (eth.ether_type != rte_cpu_to_be_16(kEtherType)) {
    ++counters_.foreign_ethertype;
    return nullptr;
  }
  WireHdr h;
  std::memcpy(&h, p + sizeof(rte_ether_hdr), sizeof h);
  if (h.version != kWireVersion || h.len > len - kHeaders) {
    ++counters_.malformed;
    return nullptr;
  }
  if (h.session != session_) {
    ++counters_.foreign_session;
    return nullptr;
  }
  if (drop_threshold_) {  // xorshift64: cheap, and only on when loss is being injected
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    if (rng_ < drop_threshold_) {
      ++counters_.injected_drops;
      return nullptr;
    }
  }
  const auto ahead = static_cast<std::int32_t>(h.seq - rx_expect_);
  if (ahead < 0) {  // older than expected: duplicated or reordered, already given up on
    ++counters_.reordered;
    return nullptr;
  }
  if (ahead > 0) {
    counters_.lost += static_cast<std::uint64_t>(ahead);
    bulk_broken_ = true;
  }
  rx_expect_ = h.seq + 1;
  const std::uint8_t* body = p + kHeaders;
  switch (h.type) {
    case WireType::chunk:
      if (h.off > segment_bytes_ || h.len > segment_bytes_ - h.off) {
        ++counters_.malformed;
        bulk_broken_ = true;
        return nullptr;
      }
      std::memcpy(segment_ + h.off, body, h.len);
      return nullptr;
    case WireType::get_req: {
      if (h.len < sizeof(GetRequest) + sizeof(am::Frame)) {
        ++counters_.malformed;
        return nullptr;
      }
      GetRequest g;
      std::memcpy(&g, body, sizeof g);
      am::Frame reply;
      std::memcpy(&reply, body + sizeof g, sizeof reply);
      serve_get(g, reply);
      return nullptr;
    }
    case WireType::am: {
      if (h.len < sizeof(am::Frame)) {
        ++counters_.malformed;
        return nullptr;
      }
      std::memcpy(&rx_frame_, body, sizeof rx_frame_);
      if (const std::uint32_t data = h.len - sizeof(am::Frame); data != 0) {
        // A medium AM: its data follows in this frame. Checked against the segment before a byte is
        // copied there; the AM layer checks the same fields again before dispatch.
        if (rx_frame_.bulk_len != data || rx_frame_.bulk_off > segment_bytes_ || data > segment_bytes_ - rx_frame_.bulk_off) {
          ++counters_.medium_rejected;
          bulk_broken_ = false;
          return nullptr;
        }
        std::memcpy(segment_ + rx_frame_.bulk_off, body + sizeof(am::Frame), data);
      } else if (rx_frame_.bulk_len != 0 && bulk_broken_) {  // some of its chunks never arrived
        ++counters_.bulk_incomplete;
        bulk_broken_ = false;
        return nullptr;
      }
      bulk_broken_ = false;
      if (reflector_ && rx_frame_.kind == am::Kind::request) {
        rx_frame_.kind = am::Kind::reply;
        rx_frame_.handler = reflector_reply_handler_;
      }
      return &rx_frame_;
    }
  }
  ++counters_.malformed;
  return nullptr;
}

// More than a medium AM holds: the first chunk's mbuf is the admission test, then all of it goes out.
bool Transport::try_store_chunked(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  rte_mbuf* first = frame_mbuf(WireType::chunk, std::min(chunk_bytes_, n), remote_off);
  if (!first) return false;
  send_bulk(static_cast<const std::uint8_t*>(src), n, remote_off, f, first);
  ++tx_ops_;
  return true;
}

bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  rte_mbuf* m = frame_mbuf(WireType::get_req, sizeof(GetRequest) + sizeof(am::Frame), 0);
  if (!m) return false;
  const GetRequest g{remote_off, n, local_off, 0};
  std::memcpy(payload(m), &g, sizeof g);
  std::memcpy(payload(m) + sizeof g, &f, sizeof f);
  return transmit(m);
}

// The peer asked for part of our segment (a one-sided get: no AM handler runs here).
void Transport::serve_get(const GetRequest& g, const am::Frame& reply) {
  if (g.remote_off > segment_bytes_ || g.len > segment_bytes_ - g.remote_off) {
    ++counters_.malformed;
    return;
  }
  ++counters_.get_served;
  // Served from inside poll(), possibly while a tracked send of ours waits for ring room: the data we
  // send back here is not that operation and must not take its tracking.
  const bool pending = track_pending_;
  track_pending_ = false;
  send_bulk(reinterpret_cast<const std::uint8_t*>(segment_) + g.remote_off, g.len, g.local_off, reply);
  track_pending_ = pending;
}

// n bytes for offset dest_off of the peer's segment, announced by f: one medium frame if they fit beside
// it, else MTU-sized chunks and then the AM frame (frames stay in order on one queue, so the frame
// arrives after its data). `first`, when given, is the first chunk's mbuf, already allocated. Waits for
// pool and ring room.
void Transport::send_bulk(const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f,
                          rte_mbuf* first) {
  rte_mbuf* m = nullptr;
  if (n <= medium_max_ && !first) {
    while (!(m = frame_mbuf(WireType::am, sizeof(am::Frame) + n, 0))) {
    }
    put_medium(payload(m), f, src, n, dest_off);
    transmit_until_sent(m);
    ++counters_.medium_sent;
    return;
  }
  // Only the announcing frame may carry the tracking reference.
  const bool tracked = track_pending_;
  track_pending_ = false;
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t len = std::min(chunk_bytes_, n - done);
    m = first;
    first = nullptr;
    if (!m)
      while (!(m = frame_mbuf(WireType::chunk, len, dest_off + done))) {
      }
    std::memcpy(payload(m), src + done, len);
    transmit_until_sent(m);
    done += len;
  }
  while (!(m = frame_mbuf(WireType::am, sizeof(am::Frame), 0))) {
  }
  put_am(payload(m), f, n, dest_off);
  track_pending_ = tracked;
  transmit_until_sent(m);
}

// What local completion meant in this run, from what the PMD was seen to do with tracked mbufs.
nlohmann::json Transport::describe_local_completion() const {
  const auto& c = counters_;
  nlohmann::json j = {{"mechanism", "tx completion: an extra reference on the operation's last mbuf, complete when "
                                    "the PMD has freed it (frames on one tx queue complete in order)"},
                      {"tracked", c.tracked},
                      {"completed", c.completed},
                      {"completed_in_tx_burst", c.completed_in_tx_burst},
                      {"completed_later", c.completed - std::min(c.completed, c.completed_in_tx_burst)},
                      {"reaping", cleanup_supported_ ? "rte_eth_tx_done_cleanup (or never needed)" : "an empty rte_eth_tx_burst (the PMD has no tx_done_cleanup)"}};
  if (c.tracked == 0)
    j["meaning"] = "not exercised in this run";
  else if (c.completed_in_tx_burst == c.tracked)
    j["meaning"] = "the PMD copies each frame out and frees its mbuf inside rte_eth_tx_burst: local completion "
                   "is immediate and its cost is inside the send";
  else
    j["meaning"] = "the PMD keeps sent mbufs until the device or the peer is done with them (zero copy or a "
                   "completion ring): local completion comes after the send returns";
  return j;
}

nlohmann::json Transport::describe() const {
  nlohmann::json j = port_.describe();
  j["burst"] = burst_;
  j["tx_burst"] = 1;
  j["drop_rate"] = drop_rate_;
  j["reflector"] = reflector_;
  j["chunk_bytes"] = chunk_bytes_;
  j["medium_max_bytes"] = medium_max_;  // stores up to this size are one frame (AM + data); larger are chunked
  j["segment_bytes"] = segment_bytes_;
  j["ethertype"] = kEtherType;
  const auto& c = counters_;
  j["counters"] = {{"tx", c.tx},
                   {"tx_busy", c.tx_busy},
                   {"rx", c.rx},
                   {"delivered", c.delivered},
                   {"lost", c.lost},
                   {"injected_drops", c.injected_drops},
                   {"reordered", c.reordered},
                   {"foreign_ethertype", c.foreign_ethertype},
                   {"foreign_session", c.foreign_session},
                   {"malformed", c.malformed},
                   {"bulk_incomplete", c.bulk_incomplete},
                   {"get_served", c.get_served},
                   {"medium_sent", c.medium_sent},
                   {"medium_rejected", c.medium_rejected}};
  j["local_completion"] = describe_local_completion();
  // Frames the port itself dropped (rx ring full, no mbuf): what the credit limit exists to prevent.
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_.id(), &st) == 0)
    j["port_stats"] = {{"ipackets", st.ipackets}, {"opackets", st.opackets}, {"imissed", st.imissed},
                       {"ierrors", st.ierrors},   {"oerrors", st.oerrors},   {"rx_nombuf", st.rx_nombuf}};
  else
    j["port_stats"] = {{"error", "rte_eth_stats_get failed: rx drops unknown"}};
  return j;
}

}  // namespace logpb::dpdk
