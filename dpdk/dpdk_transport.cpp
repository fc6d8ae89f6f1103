#include "dpdk_transport.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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
  if (opt.drop_rate < 0 || opt.drop_rate >= 1) throw UsageError("--drop-rate must be in [0, 1)");
  drop_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.drop_rate, 64));
  rte_ether_hdr eth{};
  std::memcpy(eth.dst_addr.addr_bytes, peer_mac, 6);
  std::memcpy(eth.src_addr.addr_bytes, port.mac(), 6);
  eth.ether_type = rte_cpu_to_be_16(kEtherType);
  std::memcpy(eth_template_, &eth, sizeof eth);
  chunk_bytes_ = port.max_frame_payload() - sizeof(WireHdr);
  segment_ = static_cast<std::byte*>(rte_zmalloc_socket("logpb_segment", segment_bytes_, 64, port.socket()));
  if (!segment_) throw std::runtime_error("rte_zmalloc_socket of the " + std::to_string(segment_bytes_) + "-byte segment failed");
}

Transport::~Transport() {
  for (std::uint16_t i = rx_pos_; i < rx_n_; ++i) rte_pktmbuf_free(rx_[i]);
  rte_free(segment_);
}

void Transport::transmit_until_sent(rte_mbuf* m) {
  for (long tries = 0; rte_eth_tx_burst(port_.id(), 0, &m, 1) != 1; ++tries) {
    ++counters_.tx_busy;
    if (tries > 100000000L) {
      rte_pktmbuf_free(m);
      throw PeerError("the DPDK tx ring never drained: link down or device stuck");
    }
  }
  ++tx_seq_;
  ++counters_.tx;
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
      if (rx_frame_.bulk_len != 0 && bulk_broken_) {  // some of its data never arrived
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

bool Transport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  rte_mbuf* head = frame_mbuf(WireType::am, sizeof(am::Frame), 0);
  if (!head) return false;
  rte_pktmbuf_free(head);  // only a check that the pool has room; chunks go first
  send_bulk(static_cast<const std::uint8_t*>(src), n, remote_off, f);
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
  send_bulk(reinterpret_cast<const std::uint8_t*>(segment_) + g.remote_off, g.len, g.local_off, reply);
}

// n bytes as MTU-sized chunks for offset dest_off of the peer's segment, then the AM frame that announces
// them (frames stay in order on one queue, so the frame arrives after its data). Waits for ring room.
void Transport::send_bulk(const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f) {
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t len = std::min(chunk_bytes_, n - done);
    rte_mbuf* m = nullptr;
    while (!(m = frame_mbuf(WireType::chunk, len, dest_off + done))) {
    }
    std::memcpy(payload(m), src + done, len);
    transmit_until_sent(m);
    done += len;
  }
  rte_mbuf* m = nullptr;
  while (!(m = frame_mbuf(WireType::am, sizeof(am::Frame), 0))) {
  }
  std::memcpy(payload(m), &f, sizeof f);
  transmit_until_sent(m);
}

nlohmann::json Transport::describe() const {
  nlohmann::json j = port_.describe();
  j["burst"] = burst_;
  j["tx_burst"] = 1;
  j["drop_rate"] = drop_rate_;
  j["reflector"] = reflector_;
  j["chunk_bytes"] = chunk_bytes_;
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
                   {"get_served", c.get_served}};
  return j;
}

}  // namespace logpb::dpdk
