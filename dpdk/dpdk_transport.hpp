// DPDK datapath: one small AM per Ethernet frame, sent with a burst of one (latency first), received
// with rx bursts and busy polling. Frames of other EtherTypes, sessions or versions, short or malformed
// ones are counted and dropped; a gap in the sequence numbers is a loss, counted (and, for bulk data,
// the AM that would have announced incomplete data is dropped so the AM layer's loss timeout re-measures).
//
// A store of up to medium_max bytes (what fits in one frame beside the AM frame) is a medium AM: one
// frame, the AM frame followed by the data, so a "minimum message" of 8 bytes costs one NI operation
// like a small AM. Larger stores are chunked: MTU-sized data frames, then the announcing AM frame.
//
// Local completion (Bell et al. 4.2, Doerfler & Brightwell 2) is tx completion: the PMD is done with the
// mbuf. A tracked operation's last mbuf carries one extra reference; when the PMD has freed it the
// count is back to 1. Frames on one tx queue complete in order, so that covers every earlier operation.
#pragma once

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <array>
#include <cstddef>
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
  int peer_rx_ring = 0;  // the receiving side's rx ring for the credit limit (0: same as ours)
};

struct Counters {
  std::uint64_t tx = 0, tx_busy = 0, rx = 0, delivered = 0;
  std::uint64_t lost = 0, injected_drops = 0, reordered = 0;
  std::uint64_t foreign_ethertype = 0, foreign_session = 0, malformed = 0, bulk_incomplete = 0, get_served = 0;
  std::uint64_t medium_sent = 0, medium_rejected = 0;  // rejected: data length or place outside the segment
  std::uint64_t tracked = 0, completed = 0, completed_in_tx_burst = 0;  // local completion (tracked sends)
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
    if (!transmit(m)) return false;
    ++tx_ops_;
    return true;
  }

  // A store: medium (one frame) up to medium_max bytes, else chunked. No probe: a medium store's own
  // mbuf, or a chunked one's first chunk, is the test that the NI can take it now.
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
    if (n > medium_max_) return try_store_chunked(f, src, n, remote_off);
    rte_mbuf* m = frame_mbuf(WireType::am, sizeof(am::Frame) + n, 0);
    if (!m) return false;
    put_medium(payload(m), f, src, n, remote_off);
    if (!transmit(m)) return false;
    ++tx_ops_;
    ++counters_.medium_sent;
    return true;
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

  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }
  std::uint32_t medium_max() const { return medium_max_; }

  // Local completion (common/transport.hpp, LocalCompletion). Operations are try_send and try_store
  // calls that succeeded, numbered from 1.
  std::uint64_t tx_posted() const { return tx_ops_; }
  void track_next();
  std::uint64_t tx_completed();

  // One-way requests the peer's rx ring holds beside the request window (CreditLimited).
  int max_credits(int window) const;

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
  // The AM frame as sent: its bulk fields always name the data it announces (carried behind it in a
  // medium AM, sent ahead of it as chunks otherwise). The mbuf data is not 64-byte aligned: memcpy.
  static void put_am(std::uint8_t* p, const am::Frame& f, std::uint32_t bulk_len, std::uint32_t bulk_off) noexcept {
    std::memcpy(p, &f, sizeof f);
    std::memcpy(p + offsetof(am::Frame, bulk_len), &bulk_len, sizeof bulk_len);
    std::memcpy(p + offsetof(am::Frame, bulk_off), &bulk_off, sizeof bulk_off);
  }
  static void put_medium(std::uint8_t* p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t off) noexcept {
    put_am(p, f, n, off);
    std::memcpy(p + sizeof f, src, n);
  }
  bool transmit(rte_mbuf* m) noexcept {
    if (track_pending_) [[unlikely]]
      return transmit_tracked(m);
    if (rte_eth_tx_burst(port_.id(), 0, &m, 1) == 1) {
      ++tx_seq_;
      ++counters_.tx;
      return true;
    }
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  bool transmit_tracked(rte_mbuf* m) noexcept;
  void record_tracked(rte_mbuf* m) noexcept;
  nlohmann::json describe_local_completion() const;
  void transmit_until_sent(rte_mbuf* m);  // bulk chunks: the NI drains its ring, so this ends
  bool try_store_chunked(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);

  // Validates one received frame; returns the AM frame to deliver, or nullptr (consumed or dropped).
  const am::Frame* accept(rte_mbuf* m);
  void serve_get(const GetRequest& g, const am::Frame& reply);
  void send_bulk(const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f,
                 rte_mbuf* first = nullptr);

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
  std::uint32_t chunk_bytes_, medium_max_;
  int peer_rx_ring_;
  // Tracked operations not yet seen complete, oldest first: (operation number, its last mbuf).
  static constexpr std::uint32_t kTracked = 1024;
  struct Tracked {
    std::uint64_t op;
    rte_mbuf* m;
  };
  std::array<Tracked, kTracked> tracked_{};
  std::uint32_t trk_head_ = 0, trk_tail_ = 0;
  std::uint64_t tx_ops_ = 0, tx_done_ = 0;
  bool track_pending_ = false, cleanup_supported_ = true;
  std::byte* segment_ = nullptr;
  std::uint32_t segment_bytes_;
  alignas(64) am::Frame rx_frame_{};  // the delivered frame, copied out of the mbuf to be aligned
  Counters counters_;
  double drop_rate_;
};

}  // namespace logpb::dpdk
