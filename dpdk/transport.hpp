// DPDK datapath: one small AM per Ethernet frame, sent with a burst of one (latency first), received
// with rx bursts and busy polling. A stream of one-way messages may batch its sends (--tx-burst B: see
// batch_sends): frames are handed to the PMD B at a time, as testpmd and perftest's bw tests post them.
// Frames of other EtherTypes, sessions, versions or ranks, short or malformed ones are counted and
// dropped; a gap in a source's sequence numbers is a loss, counted (and, for bulk data, the AM that would
// have announced incomplete data is dropped so the AM layer's loss timeout re-measures).
//
// Peers: a rank -> (port, MAC) table. Sends route on f.dst; sequence numbers run per ordered pair of
// ranks (tx per destination, rx per source), so K interleaved senders are K streams and not loss.
// Several ports (one memif per pair of ranks in a local job) are polled round robin, one rx burst each;
// one port (a NIC behind a switch, af_xdp on a bridge) serves every peer, the switch routing by MAC.
//
// A store of up to medium_max bytes (what fits in one frame beside the AM frame) is a medium AM: one
// frame, the AM frame followed by the data, so a "minimum message" of 8 bytes costs one NI operation
// like a small AM. Larger stores are chunked: MTU-sized data frames, then the announcing AM frame.
//
// Local completion (Bell et al. 4.2, Doerfler & Brightwell 2) is tx completion: the PMD is done with the
// mbuf. A tracked operation's last mbuf carries one extra reference; when the PMD has freed it the
// count is back to 1. Frames on one tx queue complete in order, so that covers every earlier operation
// on the same port; with several ports, an operation is covered by a later tracked one only on its own
// port (describe() says so). The methods track the sends of one link, which stay on one port. Only a
// send whose caller asked for it (track_next(): the AM layer's oneway(..., track) before a wait_local)
// carries the extra reference; every other send, a ping-pong's among them, goes out as it is.
//
// The test machinery (injected loss, duplicates and reordering; the reflector's swaps of an echoed frame)
// is a policy chosen once, when the transport is built (dpdk/connect.cpp), as the shm transport's NI is:
// Transport<Plain> (every measurement of logpbench's own peers) has none of it in its datapath, the
// compiler removes each hook; Transport<Rigged> tests each at run time, as one transport did for both.
#pragma once

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <sched.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"
#include "common/transport.hpp"
#include "dpdk/options.hpp"
#include "dpdk/port.hpp"
#include "dpdk/wire.hpp"

namespace logpb::dpdk {

struct TransportOptions {
  std::uint32_t session = 0;
  int rank = 0;  // this side's rank, and the job's size (ranks are 16-bit on the wire)
  int size = 2;
  int burst = 32;           // rx burst size
  int tx_burst = 1;         // frames per tx burst while a stream batches its sends (batch_sends); 1: never batched
  double drop_rate = 0;     // injected loss on receive, for testing loss handling
  double dup_rate = 0;      // injected duplicates on receive: a frame is received twice
  double reorder_rate = 0;  // injected reordering on receive: a frame is held back until the next one passed it
  bool reflector = false;   // the peer echoes our frames back (testpmd macswap): an echoed request is the reply
  std::uint16_t reflector_reply_handler = 0;
  std::uint32_t segment_bytes = 1 << 20;
  std::uint64_t seed = 1;
  // More ranks than cores on this host: give the core away (sched_yield) after a poll that found
  // nothing, so every rank progresses. Otherwise a pure busy poll.
  bool yield_when_idle = false;
  int peer_rx_ring = 0;  // the pair constructor only: the peer's rx ring (0: same as ours)
};

// Another rank as this transport reaches it, and what its receiving side holds (for the credit limit).
struct PeerAddress {
  int rank = -1;
  int port = 0;              // index into the transport's ports
  std::uint8_t mac[6] = {};  // the peer's MAC on that link
  int rx_ring = 0;           // the peer's rx ring that receives our frames
  int rx_ring_sources = 1;   // how many ranks send into that ring: 1 for a memif per pair, size-1 for a shared port
};

// Totals over every peer (counters()) and, for what tells one stream from another, per peer.
struct Counters {
  std::uint64_t tx = 0, tx_busy = 0, rx = 0, delivered = 0;
  std::uint64_t lost = 0, injected_drops = 0, reordered = 0, duplicates = 0, late = 0;
  std::uint64_t injected_duplicates = 0, injected_reorders = 0;  // what the injection did (fault tests)
  std::uint64_t foreign_ethertype = 0, foreign_session = 0, foreign_rank = 0, malformed = 0, bulk_incomplete = 0;
  std::uint64_t get_served = 0;
  std::uint64_t medium_sent = 0, medium_rejected = 0;  // rejected: data length or place outside the segment
  std::uint64_t tracked = 0, completed = 0, completed_in_tx_burst = 0;  // local completion (tracked sends)
  std::uint64_t tx_batches = 0, tx_batched = 0;  // batched sends: PMD tx bursts and the frames they carried
};
struct PeerCounters {
  // reordered: frames that came after a later one and were put back in sequence; late: frames that came
  // after their gap had been given up as lost (dropped); duplicates: frames that had arrived before.
  std::uint64_t tx = 0, rx = 0, lost = 0, reordered = 0, duplicates = 0, late = 0, injected_drops = 0,
                bulk_incomplete = 0;
};

// The datapath with nothing in it but the NI: injection and a reflector are refused at construction.
struct Plain {
  static constexpr bool rigged = false;
};
// Test machinery on receive, each part switched at run time by its option: --drop-rate, --dup-rate,
// --reorder-rate and --reflector (testpmd macswap echoes our own frames).
struct Rigged {
  static constexpr bool rigged = true;
};
// Whether these options need Transport<Rigged>.
inline bool rigged(const TransportOptions& o) {
  return o.reflector || o.drop_rate != 0 || o.dup_rate != 0 || o.reorder_rate != 0;
}

template <class Rig = Plain>
class Transport {
 public:
  // `ports` are this rank's, each peer names the one that reaches it. The ports must outlive this.
  Transport(std::vector<Port*> ports, const std::vector<PeerAddress>& peers, const TransportOptions& opt,
            std::function<bool()> peer_alive);
  // A pair: one port, one peer (rank 1 - opt.rank; the reflector is rank 1) whose receiving ring is
  // opt.peer_rx_ring (0: ours).
  Transport(Port& port, const std::uint8_t peer_mac[6], const TransportOptions& opt, std::function<bool()> peer_alive);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport();

  bool try_send(const am::Frame& f) {
    Peer& p = peer(f.dst);
    rte_mbuf* m = frame_mbuf(p, WireType::am, sizeof(am::Frame), 0);
    if (!m) return false;
    std::memcpy(payload(m), &f, sizeof f);
    if (!transmit(p, m)) return false;
    ++tx_ops_;
    return true;
  }

  // A store: medium (one frame) up to medium_max bytes, else chunked. No probe: a medium store's own
  // mbuf, or a chunked one's first chunk, is the test that the NI can take it now.
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
    Peer& p = peer(f.dst);
    if (n > medium_max_) return try_store_chunked(p, f, src, n, remote_off);
    rte_mbuf* m = frame_mbuf(p, WireType::am, sizeof(am::Frame) + n, 0);
    if (!m) return false;
    put_medium(payload(m), f, src, n, remote_off);
    if (!transmit(p, m)) return false;
    ++tx_ops_;
    ++counters_.medium_sent;
    return true;
  }

  template <class Sink>
  int poll(Sink&& sink) {
    if (rx_pos_ == rx_n_) {
      // While a batch of sends is being filled the NI is looked at once per batch, as testpmd polls once
      // per burst: the AM layer polls before every send, and an empty rx burst costs about what a send
      // does. A wait flushes the batch first (progress), so a waiting endpoint polls every time.
      // A batch the PMD would not take (its ring full) does not stop the polling: the peer may need us to
      // take in what it sends before its side drains.
      if (txq_n_ != 0 && !txq_blocked_) [[unlikely]]
        return 0;
      rx_pos_ = 0;
      rx_n_ = ports_.size() == 1 ? rte_eth_rx_burst(port_ids_[0], 0, rx_, static_cast<std::uint16_t>(burst_))
                                 : rx_round_robin();
      if constexpr (Rig::rigged)
        if (inject_) rx_n_ = inject_faults(rx_n_);
      if (rx_n_ == 0) {
        if (kick_gap_cycles_ != 0) [[unlikely]]
          kick_stranded();
        if (stash_n_ == 0) [[likely]]
          return 0;
        const int d = flush_stash(sink);  // nothing more came: what the stash waits for is lost
        counters_.delivered += static_cast<std::uint64_t>(d);
        return d;
      }
    }
    int delivered = 0;
    rte_mbuf* done[512];  // consumed mbufs, freed together after the burst (one mempool put)
    int n_done = 0;
    while (rx_pos_ < rx_n_) {
      rte_mbuf* m = rx_[rx_pos_++];
      int src = -1;
      const am::Frame* f = accept(m, false, src);
      if (src < -1) [[unlikely]] {  // stashed, or the stash is full: out of the fast path
        stashed(m, src, sink, delivered);
        continue;
      }
      // accept() copied out what it delivers; the mbuf is freed after the handler, with the burst's others.
      if (f) {
        sink(static_cast<const void*>(f), sizeof(am::Frame));
        ++delivered;
      }
      done[n_done++] = m;
      if (stash_n_ && src >= 0) [[unlikely]]  // it may be the frame that stashed ones waited for
        if (rte_mbuf* next = unstash(src)) consume(next, true, sink, delivered);
    }
    if (n_done) rte_pktmbuf_free_bulk(done, static_cast<unsigned>(n_done));
    counters_.delivered += static_cast<std::uint64_t>(delivered);
    return delivered;
  }

  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }
  std::uint32_t medium_max() const { return medium_max_; }

  // Local completion (common/transport.hpp, LocalCompletion). Operations are try_send and try_store
  // calls that succeeded, numbered from 1 across all peers.
  std::uint64_t tx_posted() const { return tx_ops_; }
  void track_next();
  std::uint64_t tx_completed();

  // One-way requests a receiving rx ring holds, per source, beside the request window (CreditLimited):
  // the smallest share over every ring of the job this rank knows of (its own and its peers').
  int max_credits(int window) const;

  // TxBatch (common/transport.hpp). While on (and --tx-burst > 1), try_send and medium stores queue
  // their frame and the queue goes to the PMD tx_burst frames at a time; flush_sends() hands over what
  // is queued (the AM layer calls it before it waits, and after a credit frame). Turning it off drains
  // the queue, unless drain is false (a stream unwinding on an error: the destructor sends or frees it).
  // Frames that must go at once (a tracked send, bulk chunks, get data) first flush it, so order on the
  // wire is the order of the calls.
  void batch_sends(bool on, bool drain = true) {
    if (!on && drain) drain_sends();
    batching_ = on && tx_burst_ > 1;
    if (!batching_) release_tx_mbufs();
  }
  // True when nothing is left queued.
  bool flush_sends() noexcept {
    if (txq_n_ == 0) [[likely]]
      return true;
    return flush_queue();
  }

  // IdleWait (common/transport.hpp): yields only when the job has more ranks than cores.
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  Counters counters() const;  // totals
  const PeerCounters& counters(int rank) const { return peers_.at(static_cast<std::size_t>(rank)).c; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  static constexpr std::uint32_t kHeaders = sizeof(rte_ether_hdr) + sizeof(WireHdr);

 public:
  static constexpr int kMaxTxBurst = 128;

 private:
  static std::uint8_t* payload(rte_mbuf* m) { return rte_pktmbuf_mtod(m, std::uint8_t*) + kHeaders; }

  // Everything a send to one rank and a receive from it touch: one cache line (two with counters).
  struct alignas(64) Peer {
    std::uint8_t eth[sizeof(rte_ether_hdr)];  // destination MAC, our port's MAC, our EtherType
    std::uint16_t port_id = 0;                // the DPDK port that reaches it
    std::uint16_t port = 0;                   // its index in ports_
    std::uint16_t rank = 0;
    bool connected = false;
    bool bulk_broken = false;  // a frame from it was lost since its last announcing AM
    std::uint32_t tx_seq = 0, rx_expect = 0;
    int rx_ring = 0, rx_ring_sources = 1;  // its receiving side (credit limit)
    PeerCounters c;
    // Bit k: frame rx_expect - 1 - k never arrived (given up as lost): a frame older than rx_expect is
    // late when its bit is set, else a duplicate. All set at the start (nothing before the first frame
    // arrived); a frame in sequence shifts in a 0, a gap shifts in its missing frames.
    std::uint64_t rx_missing = ~std::uint64_t{0};
    int stashed = 0;  // its frames in the stash, waiting for an earlier one
  };
  Peer& peer(int rank) {
    if (static_cast<unsigned>(rank) >= peers_.size() || !peers_[static_cast<std::size_t>(rank)].connected) [[unlikely]]
      no_route(rank);
    return peers_[static_cast<std::size_t>(rank)];
  }
  [[noreturn]] void no_route(int rank) const;

  // The next send's mbuf, fresh from the pool (whose per-core cache hands back the mbuf the last burst
  // freed, still in cache). While a stream batches its sends, mbufs come from the pool a batch at a time
  // (one mempool call per tx_burst frames, as testpmd's txonly takes them), kept in tx_mbufs_ until used.
  rte_mbuf* frame_mbuf(const Peer& p, WireType t, std::uint32_t len, std::uint32_t off) noexcept {
    rte_mbuf* m;
    if (batching_) {
      if (tx_mbufs_n_ == 0 || tx_mbufs_pool_ != pools_[p.port]) [[unlikely]]
        refill_tx_mbufs(pools_[p.port]);
      if (tx_mbufs_n_ != 0) [[likely]]
        m = tx_mbufs_[--tx_mbufs_n_];
      else if (!(m = rte_pktmbuf_alloc(pools_[p.port])))
        return nullptr;
    } else if (!(m = rte_pktmbuf_alloc(pools_[p.port]))) {
      return nullptr;
    }
    auto* b = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(kHeaders + len)));
    std::memcpy(b, p.eth, sizeof(rte_ether_hdr));
    put_wire_hdr(b + sizeof(rte_ether_hdr), t, static_cast<std::uint16_t>(len), p.rank, p.tx_seq, off);
    return m;
  }
  // The wire header is written into the frame field by field. Built on the stack and copied, its narrow
  // stores were read back at once by a 16-byte load that store forwarding cannot serve: the send waited
  // for them to reach the cache (half the time frame_mbuf took in a flood).
  void put_wire_hdr(std::uint8_t* w, WireType t, std::uint16_t len, std::uint16_t dst, std::uint32_t seq,
                    std::uint32_t off) const noexcept {
    static_assert(offsetof(WireHdr, version) == offsetof(WireHdr, type) + 1);
    const std::uint8_t type_version[2] = {static_cast<std::uint8_t>(t), kWireVersion};
    std::memcpy(w + offsetof(WireHdr, type), type_version, 2);
    std::memcpy(w + offsetof(WireHdr, len), &len, 2);
    std::memcpy(w + offsetof(WireHdr, src), &rank16_, 2);
    std::memcpy(w + offsetof(WireHdr, dst), &dst, 2);
    std::memcpy(w + offsetof(WireHdr, seq), &seq, 4);
    std::memcpy(w + offsetof(WireHdr, session), &session_, 4);
    std::memcpy(w + offsetof(WireHdr, off), &off, 4);
  }
  // The AM frame as sent: its bulk fields always name the data it announces (carried behind it in a
  // medium AM, sent ahead of it as chunks otherwise). The mbuf data is not 64-byte aligned: memcpy.
  static void put_am(std::uint8_t* p, const am::Frame& f, std::uint32_t bulk_len, std::uint32_t bulk_off) noexcept {
    std::memcpy(p, &f, sizeof f);
    std::memcpy(p + offsetof(am::Frame, bulk_len), &bulk_len, sizeof bulk_len);
    std::memcpy(p + offsetof(am::Frame, bulk_off), &bulk_off, sizeof bulk_off);
  }
  static void put_medium(std::uint8_t* p, const am::Frame& f, const void* src, std::uint32_t n,
                         std::uint32_t off) noexcept {
    put_am(p, f, n, off);
    std::memcpy(p + sizeof f, src, n);
  }
  bool transmit(Peer& p, rte_mbuf* m) noexcept {
    if (track_pending_) [[unlikely]]
      return transmit_tracked(p, m);
    if (batching_) return enqueue(p, m);
    if (rte_eth_tx_burst(p.port_id, 0, &m, 1) == 1) {
      ++p.tx_seq;
      ++p.c.tx;
      return true;
    }
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  bool flush_queue() noexcept;
  std::uint16_t rx_round_robin() noexcept;
  void kick_stranded() noexcept;  // net_af_packet only: see transport.cpp
  std::uint16_t inject_faults(std::uint16_t n) noexcept;
  bool chance(std::uint64_t threshold) noexcept {  // xorshift64: cheap, and only run when faults are injected
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_ < threshold;
  }
  bool transmit_tracked(Peer& p, rte_mbuf* m) noexcept;
  // Batched sends (batch_sends): a frame joins the tx queue and takes its sequence number there; the
  // queue goes to the PMD when it holds tx_burst frames. False (m freed, nothing taken) only when the
  // queue is full and the PMD takes none of it.
  bool enqueue(Peer& p, rte_mbuf* m) noexcept {
    if (txq_n_ != 0 && (txq_port_ != p.port_id || txq_n_ == tx_burst_) && !flush_sends()) [[unlikely]] {
      rte_pktmbuf_free(m);
      ++counters_.tx_busy;
      return false;
    }
    txq_[txq_n_++] = m;
    txq_port_ = p.port_id;
    ++p.tx_seq;
    ++p.c.tx;
    if (txq_n_ == tx_burst_) flush_sends();
    return true;
  }
  // Batched sends' mbufs: tx_mbufs_ holds what the last bulk allocation left, all from tx_mbufs_pool_.
  void refill_tx_mbufs(rte_mempool* pool) noexcept {
    release_tx_mbufs();
    if (rte_pktmbuf_alloc_bulk(pool, tx_mbufs_, tx_burst_) == 0) {
      tx_mbufs_n_ = tx_burst_;
      tx_mbufs_pool_ = pool;
    }
  }
  void release_tx_mbufs() noexcept {
    if (tx_mbufs_n_ != 0) rte_pktmbuf_free_bulk(tx_mbufs_, tx_mbufs_n_);
    tx_mbufs_n_ = 0;
  }
  void drain_sends();               // flush_sends until the queue is empty (the NI drains its ring), else PeerError
  void tx_retry_check(long tries);  // in a loop retrying a full tx ring: PeerError once the peer is gone
  void record_tracked(const Peer& p, rte_mbuf* m) noexcept;
  nlohmann::json describe_local_completion() const;
  void transmit_until_sent(Peer& p, rte_mbuf* m);  // bulk chunks: the NI drains its ring, so this ends
  bool try_store_chunked(Peer& p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);

  // The slow path of poll(), for reordered frames only. One received frame: validated, delivered if it
  // holds an AM, its mbuf freed, or (ahead of its stream) held in the stash;
  // `again`: it comes out of the stash. Counts what it delivers in `delivered` (poll adds it up).
  template <class Sink>
  void consume(rte_mbuf* m, bool again, Sink& sink, int& delivered) {
    int src = -1;
    const am::Frame* f = accept(m, again, src);
    if (src < -1) return stashed(m, src, sink, delivered);
    rte_pktmbuf_free(m);
    if (f) {
      ++delivered;
      sink(static_cast<const void*>(f), sizeof(am::Frame));
    }
    // A frame in sequence may be the one that frames held in the stash waited for.
    if (stash_n_ && src >= 0)
      if (rte_mbuf* next = unstash(src)) consume(next, true, sink, delivered);
  }
  // accept() stashed m (nothing to do), or found the stash full: what it holds goes first (its gaps
  // lost), then m, already counted as received.
  template <class Sink>
  void stashed(rte_mbuf* m, int src, Sink& sink, int& delivered) {
    if (src == kStashed) return;
    delivered += flush_stash(sink);
    consume(m, true, sink, delivered);
  }
  // Out of frames: the stash goes in sequence order, its gaps counted as lost.
  template <class Sink>
  int flush_stash(Sink& sink) {
    int delivered = 0;
    while (rte_mbuf* m = unstash(-1)) consume(m, true, sink, delivered);
    return delivered;
  }
  // Validates one received frame; returns the AM frame to deliver, or nullptr (consumed, dropped, or
  // stashed: then src is kStashed). src is the frame's source rank when it was taken in sequence.
  static constexpr int kStashed = -2, kStashFull = -3;
  const am::Frame* accept(rte_mbuf* m, bool again, int& src);
  // accept()'s steps, in the order it takes them (dpdk/transport.cpp).
  [[gnu::always_inline]] inline Peer* admit(rte_mbuf* m, const std::uint8_t* b, bool again, WireHdr& h) noexcept;
  [[gnu::always_inline]] inline void drop_behind(Peer& p, std::int32_t ahead) noexcept;
  [[gnu::always_inline]] inline void stash_ahead(rte_mbuf* m, Peer& p, const WireHdr& h, int& src) noexcept;
  [[gnu::always_inline]] inline void take_in_sequence(Peer& p, const WireHdr& h, std::int32_t ahead, bool again,
                                                      int& src) noexcept;
  [[gnu::always_inline]] inline void store_chunk(Peer& p, const WireHdr& h, const std::uint8_t* body) noexcept;
  [[gnu::always_inline]] inline void take_get_request(Peer& p, const WireHdr& h, const std::uint8_t* body);
  [[gnu::always_inline]] inline const am::Frame* take_am(Peer& p, const WireHdr& h, const std::uint8_t* body) noexcept;
  void reflect(am::Frame& f) const noexcept;  // Rigged with a reflector: an echoed request is the reply
  // The stashed frame that comes next: from `src` the one its stream expects (or none), or with src -1
  // the oldest of any stream (or none).
  rte_mbuf* unstash(int src) noexcept;
  void serve_get(Peer& to, const GetRequest& g, const am::Frame& reply);
  void send_bulk(Peer& p, const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f,
                 rte_mbuf* first = nullptr);
  int own_sources(std::size_t port) const;  // peers routed over one of our ports: ranks sending into its ring

  std::vector<Port*> ports_;
  std::vector<std::uint16_t> port_ids_;
  std::vector<rte_mempool*> pools_;
  std::vector<Peer> peers_;  // indexed by rank; our own entry and ranks we do not reach are not connected
  std::function<bool()> peer_alive_;
  int burst_;
  int rank_, size_;
  std::uint16_t rank16_;
  std::size_t rx_next_ = 0;  // the port whose rx burst comes next (several ports)
  // One rx burst, at most 512 frames. With injected faults the burst is at most 255 (constructor), so the
  // rewritten burst (each frame duplicated, plus a frame held back from the burst before) still fits.
  // The fields poll() reads on every frame stay together as on a build without injection: what only the
  // injection and the stash use lies at the end, and the flags the fast path tests sit in what was padding.
  rte_mbuf* rx_[512];
  std::uint16_t rx_n_ = 0, rx_pos_ = 0;
  std::uint32_t session_;
  bool reflector_;  // Rigged only (Plain refuses it)
  bool yield_when_idle_;
  std::uint16_t reflector_reply_handler_;
  bool inject_ = false;  // Rigged only: duplicates or reordering are injected
  bool batching_ = false;     // batch_sends(true) with tx_burst_ > 1
  bool txq_blocked_ = false;  // the last flush left frames queued (the PMD took fewer than offered)
  std::uint16_t txq_n_ = 0, txq_port_ = 0, tx_burst_ = 1;
  rte_mbuf* txq_[kMaxTxBurst];  // batched sends not yet taken by the PMD, oldest first
  std::uint16_t tx_mbufs_n_ = 0;
  rte_mempool* tx_mbufs_pool_ = nullptr;
  rte_mbuf* tx_mbufs_[kMaxTxBurst];  // allocated for batched sends, not yet used (frame_mbuf)
  std::uint16_t stash_n_ = 0;        // frames in stash_ (0 unless a gap was seen)
  std::uint64_t drop_threshold_ = 0, rng_;
  std::uint32_t chunk_bytes_, medium_max_;
  // Tracked operations not yet seen complete, oldest first: (operation number, its last mbuf, its port).
  static constexpr std::uint32_t kTracked = 1024;
  struct Tracked {
    std::uint64_t op;
    rte_mbuf* m;
    std::uint16_t port_id;
  };
  std::array<Tracked, kTracked> tracked_{};
  std::uint32_t trk_head_ = 0, trk_tail_ = 0;
  std::uint64_t tx_ops_ = 0, tx_done_ = 0;
  bool track_pending_ = false, cleanup_supported_ = true;
  std::byte* segment_ = nullptr;
  std::uint32_t segment_bytes_;
  alignas(64) am::Frame rx_frame_{};  // the delivered frame, copied out of the mbuf to be aligned
  Counters counters_;                 // what is not kept per peer
  double drop_rate_, dup_rate_, reorder_rate_;
  // Cold: only the injection and the stash (after a gap) touch these.
  std::uint64_t dup_threshold_ = 0, reorder_threshold_ = 0;
  rte_mbuf* held_ = nullptr;       // reorder injection: the frame that the next received one overtakes
  std::uint64_t held_at_ = 0;      // when it was held (TSC); released alone after hold_cycles_
  std::uint64_t hold_cycles_ = 0;  // kReorderHoldUs (dpdk/options.hpp) in TSC cycles
  std::uint64_t kick_gap_cycles_ = 0, last_kick_ = 0;  // net_af_packet: kick_stranded() (0: another PMD)
  // Frames that came ahead of their stream (a gap before them), held until the missing ones arrive, so
  // that reordered frames reach the AM layer in order. Flushed (the gap then counted as lost) when an
  // rx burst comes back empty or the stash is full.
  static constexpr int kStash = 16;
  struct Stashed {
    rte_mbuf* m;
    std::uint16_t src;
    std::uint32_t seq;
  };
  std::array<Stashed, kStash> stash_{};
};

}  // namespace logpb::dpdk
