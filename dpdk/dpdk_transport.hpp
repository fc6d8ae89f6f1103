// DPDK datapath: one small AM per Ethernet frame, sent with a burst of one (latency first), received
// with rx bursts and busy polling. Frames of other EtherTypes, sessions or versions, short or malformed
// ones are counted and dropped; a gap in the sequence numbers is a loss, counted (and, for bulk data,
// the AM that would have announced incomplete data is dropped so the AM layer's loss timeout re-measures).
#pragma once

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"
#include "dpdk/dpdk_port.hpp"
#include "dpdk/wire.hpp"

namespace logpb::dpdk {

struct TransportOptions {
  std::uint32_t session = 0;
  int burst = 32;          // rx burst size
  double drop_rate = 0;    // injected loss on receive, for testing loss handling
  bool reflector = false;  // the peer echoes our frames back (testpmd macswap): an echoed request is the reply
  std::uint16_t reflector_reply_handler = 0;
  std::uint32_t segment_bytes = 1 << 20;
  std::uint64_t seed = 1;
};

struct Counters {
  std::uint64_t tx = 0, tx_busy = 0, rx = 0, delivered = 0;
  std::uint64_t lost = 0, injected_drops = 0, reordered = 0;
  std::uint64_t foreign_ethertype = 0, foreign_session = 0, malformed = 0, bulk_incomplete = 0, get_served = 0;
};

class Transport {
 public:
  Transport(Port& port, const std::uint8_t peer_mac[6], const TransportOptions& opt, std::function<bool()> peer_alive);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport();

  bool try_send(const am::Frame& f) noexcept {
    rte_mbuf* m = frame_mbuf(WireType::am, sizeof(am::Frame), 0);
    if (!m) return false;
    std::memcpy(payload(m), &f, sizeof f);
    return transmit(m);
  }

  template <class Sink>
  int poll(Sink&& sink) {
    if (rx_pos_ == rx_n_) {
      rx_n_ = rte_eth_rx_burst(port_.id(), 0, rx_, static_cast<std::uint16_t>(burst_));
      rx_pos_ = 0;
      if (rx_n_ == 0) return 0;
    }
    int delivered = 0;
    while (rx_pos_ < rx_n_) {
      rte_mbuf* m = rx_[rx_pos_++];
      const am::Frame* f = accept(m);
      if (f) {
        sink(static_cast<const void*>(f), sizeof(am::Frame));
        ++delivered;
      }
      rte_pktmbuf_free(m);
    }
    counters_.delivered += static_cast<std::uint64_t>(delivered);
    return delivered;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  const Counters& counters() const { return counters_; }

 private:
  static constexpr std::uint32_t kHeaders = sizeof(rte_ether_hdr) + sizeof(WireHdr);
  static std::uint8_t* payload(rte_mbuf* m) { return rte_pktmbuf_mtod(m, std::uint8_t*) + kHeaders; }

  rte_mbuf* frame_mbuf(WireType t, std::uint32_t len, std::uint32_t off) noexcept {
    rte_mbuf* m = rte_pktmbuf_alloc(port_.pool());
    if (!m) return nullptr;
    auto* p = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(kHeaders + len)));
    std::memcpy(p, eth_template_, sizeof(rte_ether_hdr));
    WireHdr h{t, kWireVersion, static_cast<std::uint16_t>(len), tx_seq_, session_, off};
    std::memcpy(p + sizeof(rte_ether_hdr), &h, sizeof h);
    return m;
  }
  bool transmit(rte_mbuf* m) noexcept {
    if (rte_eth_tx_burst(port_.id(), 0, &m, 1) == 1) {
      ++tx_seq_;
      ++counters_.tx;
      return true;
    }
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  void transmit_until_sent(rte_mbuf* m);  // bulk chunks: the NI drains its ring, so this ends

  // Validates one received frame; returns the AM frame to deliver, or nullptr (consumed or dropped).
  const am::Frame* accept(rte_mbuf* m);
  void serve_get(const GetRequest& g, const am::Frame& reply);
  void send_bulk(const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f);

  Port& port_;
  std::function<bool()> peer_alive_;
  int burst_;
  rte_mbuf* rx_[512];
  std::uint16_t rx_n_ = 0, rx_pos_ = 0;
  std::uint8_t eth_template_[sizeof(rte_ether_hdr)];
  std::uint32_t tx_seq_ = 0, rx_expect_ = 0, session_;
  bool bulk_broken_ = false;
  bool reflector_;
  std::uint16_t reflector_reply_handler_;
  std::uint64_t drop_threshold_ = 0, rng_;
  std::uint32_t chunk_bytes_;
  std::byte* segment_ = nullptr;
  std::uint32_t segment_bytes_;
  alignas(64) am::Frame rx_frame_{};  // the delivered frame, copied out of the mbuf to be aligned
  Counters counters_;
  double drop_rate_;
};

}  // namespace logpb::dpdk
