#include "transport.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb::dpdk {

Transport::Transport(std::vector<Port*> ports, const std::vector<PeerAddress>& peers, const TransportOptions& opt,
                     std::function<bool()> peer_alive)
    : ports_(std::move(ports)),
      peer_alive_(std::move(peer_alive)),
      burst_(std::clamp(opt.burst, 1, 512)),
      rank_(opt.rank),
      size_(opt.size),
      rank16_(static_cast<std::uint16_t>(opt.rank)),
      session_(opt.session),
      reflector_(opt.reflector),
      yield_when_idle_(opt.yield_when_idle),
      reflector_reply_handler_(opt.reflector_reply_handler),
      rng_(opt.seed | 1),
      segment_bytes_(opt.segment_bytes),
      drop_rate_(opt.drop_rate),
      dup_rate_(opt.dup_rate),
      reorder_rate_(opt.reorder_rate) {
  if (ports_.empty()) throw UsageError("a DPDK transport needs at least one port");
  if (size_ < 1 || size_ > am::kMaxRanks || rank_ < 0 || rank_ >= size_)
    throw UsageError("DPDK transport: rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " is not a rank of the job");
  if (opt.drop_rate < 0 || opt.drop_rate >= 1) throw UsageError("--drop-rate must be in [0, 1)");
  drop_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.drop_rate, 64));
  if (opt.dup_rate < 0 || opt.dup_rate >= 1) throw UsageError("--dup-rate must be in [0, 1)");
  if (opt.reorder_rate < 0 || opt.reorder_rate >= 1) throw UsageError("--reorder-rate must be in [0, 1)");
  dup_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.dup_rate, 64));
  reorder_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.reorder_rate, 64));
  inject_ = dup_threshold_ || reorder_threshold_;
  if (opt.tx_burst < 1 || opt.tx_burst > kMaxTxBurst)
    throw UsageError("--tx-burst must be in 1.." + std::to_string(kMaxTxBurst));
  tx_burst_ = static_cast<std::uint16_t>(opt.tx_burst);
  if (inject_) burst_ = std::min(burst_, 255);  // inject_faults may double a burst and add one: rx_ holds 512
  if (const char* e = std::getenv("LOGPB_DPDK_MBUF_REUSE")) reuse_rx_mbuf_ = std::string(e) == "1";
  std::uint32_t payload = ports_[0]->max_frame_payload();
  for (Port* p : ports_) {
    port_ids_.push_back(p->id());
    pools_.push_back(p->pool());
    payload = std::min(payload, p->max_frame_payload());
  }
  peers_.resize(static_cast<std::size_t>(size_));
  for (const PeerAddress& a : peers) {
    if (a.rank < 0 || a.rank >= size_ || a.rank == rank_ || a.port < 0 ||
        a.port >= static_cast<int>(ports_.size()) || a.rx_ring_sources < 1)
      throw std::logic_error("DPDK transport: bad peer entry for rank " + std::to_string(a.rank));
    Peer& p = peers_[static_cast<std::size_t>(a.rank)];
    rte_ether_hdr eth{};
    std::memcpy(eth.dst_addr.addr_bytes, a.mac, 6);
    std::memcpy(eth.src_addr.addr_bytes, ports_[static_cast<std::size_t>(a.port)]->mac(), 6);
    eth.ether_type = rte_cpu_to_be_16(kEtherType);
    std::memcpy(p.eth, &eth, sizeof eth);
    p.port = static_cast<std::uint16_t>(a.port);
    p.port_id = port_ids_[static_cast<std::size_t>(a.port)];
    p.rank = static_cast<std::uint16_t>(a.rank);
    p.rx_ring = a.rx_ring > 0 ? a.rx_ring : ports_[static_cast<std::size_t>(a.port)]->rx_ring();
    p.rx_ring_sources = a.rx_ring_sources;
    p.connected = true;
  }
  chunk_bytes_ = payload - sizeof(WireHdr);
  medium_max_ = chunk_bytes_ - sizeof(am::Frame);  // the Port refuses MTUs below 128, so this is positive
  segment_ = static_cast<std::byte*>(rte_zmalloc_socket("logpb_segment", segment_bytes_, 64, ports_[0]->socket()));
  if (!segment_) throw std::runtime_error("rte_zmalloc_socket of the " + std::to_string(segment_bytes_) + "-byte segment failed");
}

namespace {
PeerAddress pair_peer(const std::uint8_t mac[6], int rank, int rx_ring) {
  PeerAddress a;
  a.rank = rank;
  std::memcpy(a.mac, mac, 6);
  a.rx_ring = rx_ring;
  return a;
}
}  // namespace

Transport::Transport(Port& port, const std::uint8_t peer_mac[6], const TransportOptions& opt, std::function<bool()> peer_alive)
    : Transport(std::vector<Port*>{&port}, {pair_peer(peer_mac, opt.reflector ? 1 : 1 - opt.rank, opt.peer_rx_ring)}, opt,
                std::move(peer_alive)) {}

void Transport::no_route(int rank) const {
  throw UsageError("DPDK transport of rank " + std::to_string(rank_) + ": no route to rank " + std::to_string(rank) +
                   " (not a connected peer in a job of " + std::to_string(size_) + ")");
}

// One rx burst per port, starting after the port that delivered last, until one has frames: every port
// gets its turn, and an idle poll costs one burst per port.
std::uint16_t Transport::rx_round_robin() noexcept {
  const std::size_t n = ports_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = rx_next_;
    rx_next_ = i + 1 == n ? 0 : i + 1;
    const std::uint16_t got = rte_eth_rx_burst(port_ids_[i], 0, rx_, static_cast<std::uint16_t>(burst_));
    if (got) return got;
  }
  return 0;
}

// Duplicates and reordering, injected on receive (as --drop-rate injects loss) to test that the receiver
// never delivers a frame twice or out of order: each received frame is, with probability dup_rate,
// followed by a copy of itself; with probability reorder_rate it is held back and delivered right after
// the next frame received, which overtakes it. A held frame that no other frame follows is delivered at
// the next poll (delayed, not reordered). Rewrites the burst in rx_ (room for twice a burst and one).
std::uint16_t Transport::inject_faults(std::uint16_t n) noexcept {
  rte_mbuf* in[512];
  std::copy(rx_, rx_ + n, in);
  std::uint16_t out = 0;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    if (!held_ && chance(reorder_threshold_)) {
      held_ = m;
      continue;
    }
    rx_[out++] = m;
    if (held_) {
      rx_[out++] = held_;
      held_ = nullptr;
      ++counters_.injected_reorders;
    }
    if (chance(dup_threshold_)) {
      if (rte_mbuf* copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX)) {
        rx_[out++] = copy;
        ++counters_.injected_duplicates;
      }
    }
  }
  if (out == 0 && held_) {
    rx_[out++] = held_;
    held_ = nullptr;
  }
  return out;
}

Transport::~Transport() {
  // What a stream left queued goes out if the PMD takes it now; a stuck port does not hold the exit.
  for (int tries = 0; txq_n_ != 0 && tries < 1000; ++tries) flush_queue();
  for (std::uint16_t i = 0; i < txq_n_; ++i) rte_pktmbuf_free(txq_[i]);
  release_tx_mbufs();
  for (std::uint16_t i = rx_pos_; i < rx_n_; ++i) rte_pktmbuf_free(rx_[i]);
  if (spare_) rte_pktmbuf_free(spare_);
  if (held_) rte_pktmbuf_free(held_);
  for (int i = 0; i < stash_n_; ++i) rte_pktmbuf_free(stash_[static_cast<std::size_t>(i)].m);
  for (; trk_head_ != trk_tail_; ++trk_head_) rte_pktmbuf_free(tracked_[trk_head_ % kTracked].m);  // our references
  rte_free(segment_);
}

bool Transport::flush_queue() noexcept {
  const std::uint16_t sent = rte_eth_tx_burst(txq_port_, 0, txq_, txq_n_);
  if (sent != 0) {
    ++counters_.tx_batches;
    counters_.tx_batched += sent;
  }
  txq_blocked_ = sent != txq_n_;
  if (!txq_blocked_) {
    txq_n_ = 0;
    return true;
  }
  ++counters_.tx_busy;
  std::memmove(txq_, txq_ + sent, (txq_n_ - sent) * sizeof(rte_mbuf*));
  txq_n_ = static_cast<std::uint16_t>(txq_n_ - sent);
  return false;
}

// A full tx ring is retried, but not past the peer's death: a memif whose peer died is torn down by the
// EAL interrupt thread (its regions unmapped), and a tx_burst racing that teardown crashed in the PMD
// (SIGSEGV in fault trials that killed the receiver of a flood of 128 KiB stores). Every 1024 tries the
// peer and link are checked, so the retries stop within microseconds of the link going down.
void Transport::tx_retry_check(long tries) {
  if ((tries & 1023) == 1023 && !peer_alive_())
    throw PeerError("a peer is gone (link down or rank exited) while a send waited for the DPDK tx ring");
  if (tries > 100000000L) throw PeerError("rte_eth_tx_burst: the DPDK tx ring never drained (link down or device stuck?)");
}

void Transport::drain_sends() {
  for (long tries = 0; !flush_sends(); ++tries) tx_retry_check(tries);
}

void Transport::transmit_until_sent(Peer& p, rte_mbuf* m) {
  drain_sends();  // batched frames before it hold earlier sequence numbers
  const bool tracked = track_pending_;
  if (tracked) rte_mbuf_refcnt_update(m, 1);
  for (long tries = 0; rte_eth_tx_burst(p.port_id, 0, &m, 1) != 1; ++tries) {
    ++counters_.tx_busy;
    try {
      tx_retry_check(tries);
    } catch (...) {
      if (tracked) rte_mbuf_refcnt_update(m, -1);
      rte_pktmbuf_free(m);
      throw;
    }
  }
  ++p.tx_seq;
  ++p.c.tx;
  if (tracked) record_tracked(p, m);
}

// The tracked send's last mbuf keeps one reference of ours beyond the PMD's: when the PMD frees it the
// count drops back to 1 and the mbuf stays ours until tx_completed() sees that. (A PMD using the
// MBUF_FAST_FREE offload would ignore reference counts; the port never enables it.)
bool Transport::transmit_tracked(Peer& p, rte_mbuf* m) noexcept {
  if (batching_) {
    // The tracked frame ends the batch: it joins the queue, and the queue goes to the PMD now.
    rte_mbuf_refcnt_update(m, 1);
    if (!enqueue(p, m)) {  // it dropped one of the two references
      rte_pktmbuf_free(m);
      return false;
    }
    flush_sends();
    record_tracked(p, m);
    return true;
  }
  if (!flush_sends()) {  // batched frames before it hold earlier sequence numbers: they go first
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  rte_mbuf_refcnt_update(m, 1);
  if (rte_eth_tx_burst(p.port_id, 0, &m, 1) != 1) {
    rte_mbuf_refcnt_update(m, -1);
    rte_pktmbuf_free(m);
    ++counters_.tx_busy;
    return false;
  }
  ++p.tx_seq;
  ++p.c.tx;
  record_tracked(p, m);
  return true;
}

void Transport::record_tracked(const Peer& p, rte_mbuf* m) noexcept {
  // track_next() made room. The operation being sent is the next one: its number is tx_ops_ + 1.
  tracked_[trk_tail_ % kTracked] = {tx_ops_ + 1, m, p.port_id};
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
  flush_sends();
  while (trk_head_ != trk_tail_) {
    const Tracked& t = tracked_[trk_head_ % kTracked];
    if (rte_mbuf_refcnt_read(t.m) != 1) {
      // PMDs that free sent mbufs lazily, on a later tx_burst (af_xdp reaps its completion ring there),
      // are asked to reap them now: tx_done_cleanup where the PMD has it, else an empty tx burst.
      if (cleanup_supported_ && rte_eth_tx_done_cleanup(t.port_id, 0, 0) == -ENOTSUP) cleanup_supported_ = false;
      if (!cleanup_supported_) rte_eth_tx_burst(t.port_id, 0, nullptr, 0);
      if (rte_mbuf_refcnt_read(t.m) != 1) break;
    }
    rte_pktmbuf_free(t.m);
    tx_done_ = t.op;
    ++trk_head_;
    ++counters_.completed;
  }
  return tx_done_;
}

// Beside the one-way requests, a receiving rx ring must hold, for each rank sending into it, a window
// of its requests and one of its replies and a few credit frames (one ask is outstanding at a time per
// pair), and once a frame per rx burst already taken from the ring but not yet consumed. A ring that K
// ranks share (one NIC port serving every peer) is divided among them: each may flood it at once. The
// credit limit is one figure for every peer of the AM layer, so it is the smallest share of any ring
// this rank knows (its own, and each peer's as the peer reported it). One-way requests beyond that would
// overrun a ring: dropped frames on a NIC (imissed), a stalled sender on memif.
namespace {
constexpr int kCreditFrameMargin = 4;
int ring_share(int ring, int sources, int window, int burst) {
  return (ring - burst) / sources - 2 * window - kCreditFrameMargin;
}
}  // namespace

int Transport::own_sources(std::size_t port) const {
  int k = 0;
  for (const Peer& p : peers_)
    if (p.connected && p.port == port) ++k;
  return k;
}

int Transport::max_credits(int window) const {
  int room = INT32_MAX, ring = 0, sources = 1;
  auto consider = [&](int r, int k) {
    const int share = ring_share(r, k, window, burst_);
    if (share < room) room = share, ring = r, sources = k;
  };
  for (std::size_t i = 0; i < ports_.size(); ++i)
    if (const int k = own_sources(i); k > 0) consider(ports_[i]->rx_ring(), k);
  for (const Peer& p : peers_)
    if (p.connected) consider(p.rx_ring, p.rx_ring_sources);
  if (room < 2)
    throw UsageError("an rx ring of " + std::to_string(ring) + " frames shared by " + std::to_string(sources) +
                     " sending rank(s) leaves room for " + std::to_string(room) + " one-way messages per rank beside 2 x --window " +
                     std::to_string(window) + ", --burst " + std::to_string(burst_) + " and " + std::to_string(kCreditFrameMargin) +
                     " credit frames: raise --rx-ring (on every rank) or lower --window");
  return room;
}

rte_mbuf* Transport::unstash(int src) noexcept {
  int best = -1;
  for (int i = 0; i < stash_n_; ++i) {
    const Stashed& e = stash_[static_cast<std::size_t>(i)];
    if (src >= 0) {
      if (e.src == src && e.seq == peers_[e.src].rx_expect) {
        best = i;
        break;
      }
    } else if (best < 0 || (e.src == stash_[static_cast<std::size_t>(best)].src &&
                            static_cast<std::int32_t>(e.seq - stash_[static_cast<std::size_t>(best)].seq) < 0)) {
      best = i;  // the oldest of the first stream found: streams are independent
    }
  }
  if (best < 0) return nullptr;
  rte_mbuf* m = stash_[static_cast<std::size_t>(best)].m;
  --peers_[stash_[static_cast<std::size_t>(best)].src].stashed;
  stash_[static_cast<std::size_t>(best)] = stash_[static_cast<std::size_t>(--stash_n_)];
  return m;
}

const am::Frame* Transport::accept(rte_mbuf* m, bool again, int& src) {
  if (!again) ++counters_.rx;
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  if (len < kHeaders || m->nb_segs != 1) {
    ++counters_.malformed;
    return nullptr;
  }
  const auto* b = rte_pktmbuf_mtod(m, const std::uint8_t*);
  rte_ether_hdr eth;
  std::memcpy(&eth, b, sizeof eth);
  if (eth.ether_type != rte_cpu_to_be_16(kEtherType)) {
    ++counters_.foreign_ethertype;
    return nullptr;
  }
  WireHdr h;
  std::memcpy(&h, b + sizeof(rte_ether_hdr), sizeof h);
  if (h.version != kWireVersion || h.len > len - kHeaders) {
    ++counters_.malformed;
    return nullptr;
  }
  if (h.session != session_) {
    ++counters_.foreign_session;
    return nullptr;
  }
  if (reflector_) [[unlikely]]
    std::swap(h.src, h.dst);  // our own frame echoed: it comes from the rank we sent it to
  if (h.dst != rank_ || h.src >= peers_.size() || !peers_[h.src].connected) {
    ++counters_.foreign_rank;
    return nullptr;
  }
  Peer& p = peers_[h.src];
  if (!again) {
    ++p.c.rx;
    if (drop_threshold_ && chance(drop_threshold_)) [[unlikely]] {
      ++p.c.injected_drops;
      return nullptr;
    }
  }
  const auto ahead = static_cast<std::int32_t>(h.seq - p.rx_expect);
  if (ahead < 0) [[unlikely]] {
    // Older than expected: a duplicate of a frame that arrived (never delivered twice), or a frame that
    // came after a later one and was already given up on as lost (delivering it now could land old bulk
    // data over newer data, or an AM after its own loss timeout): counted and dropped either way. The
    // last 64 frames are told apart by rx_missing; an older one counts as late.
    const auto behind = static_cast<std::uint32_t>(-(ahead + 1));
    if (behind >= 64 || (p.rx_missing >> behind) & 1) {
      ++p.c.late;
      if (behind < 64) p.rx_missing &= ~(std::uint64_t{1} << behind);  // a second copy of it is a duplicate
    } else {
      ++p.c.duplicates;
    }
    return nullptr;
  }
  if (ahead > 0 && !again) [[unlikely]] {
    // Ahead of its stream: held until the frames before it come (reordering), unless the stash is full
    // (then what it holds goes first, its gaps lost) or the gap is too wide to be reordering.
    if (ahead < kStash) {
      if (stash_n_ == kStash) {
        src = kStashFull;  // the caller flushes, then offers this frame again
        return nullptr;
      }
      for (int i = 0; i < stash_n_; ++i)  // the same frame twice in the stash: a duplicate
        if (stash_[static_cast<std::size_t>(i)].src == h.src && stash_[static_cast<std::size_t>(i)].seq == h.seq) {
          ++p.c.duplicates;
          return nullptr;
        }
      stash_[static_cast<std::size_t>(stash_n_++)] = {m, h.src, h.seq};
      ++p.stashed;
      src = kStashed;
      return nullptr;
    }
  }
  if (stash_n_ && ahead == 0 && p.stashed > 0 && !again) ++p.c.reordered;  // it came after later frames that the stash held
  src = h.src;
  if (ahead > 0) {
    p.c.lost += static_cast<std::uint64_t>(ahead);
    p.bulk_broken = true;
  }
  if (ahead == 0) [[likely]]
    p.rx_missing <<= 1;
  else  // frames rx_expect .. h.seq - 1 never came: bits 1 .. ahead
    p.rx_missing = ahead >= 63 ? ~std::uint64_t{1} : (p.rx_missing << (ahead + 1)) | (((std::uint64_t{1} << ahead) - 1) << 1);
  p.rx_expect = h.seq + 1;
  const std::uint8_t* body = b + kHeaders;
  switch (h.type) {
    case WireType::chunk:
      if (h.off > segment_bytes_ || h.len > segment_bytes_ - h.off) {
        ++counters_.malformed;
        p.bulk_broken = true;
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
      serve_get(p, g, reply);
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
          p.bulk_broken = false;
          return nullptr;
        }
        std::memcpy(segment_ + rx_frame_.bulk_off, body + sizeof(am::Frame), data);
      } else if (rx_frame_.bulk_len != 0 && p.bulk_broken) {  // some of its chunks never arrived
        ++p.c.bulk_incomplete;
        p.bulk_broken = false;
        return nullptr;
      }
      p.bulk_broken = false;
      if (reflector_) [[unlikely]] {
        std::swap(rx_frame_.src, rx_frame_.dst);
        if (rx_frame_.kind == am::Kind::request) {
          rx_frame_.kind = am::Kind::reply;
          rx_frame_.handler = static_cast<std::uint8_t>(reflector_reply_handler_);
        }
      }
      return &rx_frame_;
    }
  }
  ++counters_.malformed;
  return nullptr;
}

// More than a medium AM holds: the first chunk's mbuf is the admission test, then all of it goes out.
bool Transport::try_store_chunked(Peer& p, const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  rte_mbuf* first = frame_mbuf(p, WireType::chunk, std::min(chunk_bytes_, n), remote_off);
  if (!first) return false;
  send_bulk(p, static_cast<const std::uint8_t*>(src), n, remote_off, f, first);
  ++tx_ops_;
  return true;
}

// The request goes to the rank whose segment is read: the completion's source.
bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  Peer& p = peer(f.src);
  rte_mbuf* m = frame_mbuf(p, WireType::get_req, sizeof(GetRequest) + sizeof(am::Frame), 0);
  if (!m) return false;
  const GetRequest g{remote_off, n, local_off, 0};
  std::memcpy(payload(m), &g, sizeof g);
  std::memcpy(payload(m) + sizeof g, &f, sizeof f);
  return transmit(p, m);
}

// Rank `to` asked for part of our segment (a one-sided get: no AM handler runs here). The data and the
// completion go back to whoever sent the request, whatever the completion frame names.
void Transport::serve_get(Peer& to, const GetRequest& g, const am::Frame& reply) {
  if (g.remote_off > segment_bytes_ || g.len > segment_bytes_ - g.remote_off) {
    ++counters_.malformed;
    return;
  }
  ++counters_.get_served;
  // Served from inside poll(), possibly while a tracked send of ours waits for ring room: the data we
  // send back here is not that operation and must not take its tracking.
  const bool pending = track_pending_;
  track_pending_ = false;
  send_bulk(to, reinterpret_cast<const std::uint8_t*>(segment_) + g.remote_off, g.len, g.local_off, reply);
  track_pending_ = pending;
}

// n bytes for offset dest_off of rank p's segment, announced by f: one medium frame if they fit beside
// it, else MTU-sized chunks and then the AM frame (frames stay in order on one queue, so the frame
// arrives after its data). `first`, when given, is the first chunk's mbuf, already allocated. Waits for
// pool and ring room.
void Transport::send_bulk(Peer& p, const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f,
                          rte_mbuf* first) {
  rte_mbuf* m = nullptr;
  if (n <= medium_max_ && !first) {
    while (!(m = frame_mbuf(p, WireType::am, sizeof(am::Frame) + n, 0))) {
    }
    put_medium(payload(m), f, src, n, dest_off);
    transmit_until_sent(p, m);
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
      while (!(m = frame_mbuf(p, WireType::chunk, len, dest_off + done))) {
      }
    std::memcpy(payload(m), src + done, len);
    transmit_until_sent(p, m);
    done += len;
  }
  while (!(m = frame_mbuf(p, WireType::am, sizeof(am::Frame), 0))) {
  }
  put_am(payload(m), f, n, dest_off);
  track_pending_ = tracked;
  transmit_until_sent(p, m);
}

// What local completion meant in this run, from what the PMD was seen to do with tracked mbufs.
nlohmann::json Transport::describe_local_completion() const {
  const Counters& c = counters_;
  nlohmann::json j = {{"mechanism", ports_.size() == 1
                                        ? "tx completion: an extra reference on the operation's last mbuf, complete when "
                                          "the PMD has freed it (frames on one tx queue complete in order)"
                                        : "tx completion per port: an extra reference on the operation's last mbuf, complete "
                                          "when the PMD has freed it; frames on one port's tx queue complete in order, so it "
                                          "covers the earlier operations to the peers of its own port only"},
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

Counters Transport::counters() const {
  Counters c = counters_;
  for (const Peer& p : peers_) {
    c.tx += p.c.tx;
    c.lost += p.c.lost;
    c.reordered += p.c.reordered;
    c.duplicates += p.c.duplicates;
    c.late += p.c.late;
    c.injected_drops += p.c.injected_drops;
    c.bulk_incomplete += p.c.bulk_incomplete;
  }
  return c;
}

nlohmann::json Transport::describe() const {
  nlohmann::json j = ports_[0]->describe();  // the first port's facts at the top, as for a pair
  j["rank"] = rank_;
  j["size"] = size_;
  j["burst"] = burst_;
  // Frames per PMD tx burst: 1 (each send goes out in its own call), or, while a stream batched its sends
  // (bw, flood with --tx-burst), up to tx_burst; counters.tx_batches/tx_batched say what happened.
  j["tx_burst"] = tx_burst_;
  j["rx_mbuf_reuse"] = reuse_rx_mbuf_;  // a send goes out in the last received mbuf (LOGPB_DPDK_MBUF_REUSE=1)
  j["drop_rate"] = drop_rate_;
  j["dup_rate"] = dup_rate_;
  j["reorder_rate"] = reorder_rate_;
  j["reflector"] = reflector_;
  j["idle"] = yield_when_idle_ ? "sched_yield after an empty poll (more ranks than cores)" : "busy poll";
  j["chunk_bytes"] = chunk_bytes_;
  j["medium_max_bytes"] = medium_max_;  // stores up to this size are one frame (AM + data); larger are chunked
  j["segment_bytes"] = segment_bytes_;
  j["ethertype"] = kEtherType;
  j["wire_version"] = kWireVersion;
  const Counters c = counters();
  j["counters"] = {{"tx", c.tx},
                   {"tx_busy", c.tx_busy},
                   {"rx", c.rx},
                   {"delivered", c.delivered},
                   {"lost", c.lost},
                   {"injected_drops", c.injected_drops},
                   {"reordered", c.reordered},
                   {"duplicates", c.duplicates},
                   {"late", c.late},
                   {"injected_duplicates", c.injected_duplicates},
                   {"injected_reorders", c.injected_reorders},
                   {"foreign_ethertype", c.foreign_ethertype},
                   {"foreign_session", c.foreign_session},
                   {"foreign_rank", c.foreign_rank},
                   {"malformed", c.malformed},
                   {"bulk_incomplete", c.bulk_incomplete},
                   {"get_served", c.get_served},
                   {"medium_sent", c.medium_sent},
                   {"medium_rejected", c.medium_rejected},
                   {"rx_mbuf_reused", c.rx_mbuf_reused},
                   {"tx_batches", c.tx_batches},
                   {"tx_batched", c.tx_batched}};
  j["local_completion"] = describe_local_completion();
  // Ports: each with what it dropped itself (rx ring full, no mbuf: what the credit limit exists to
  // prevent) and how many ranks share its rx ring.
  nlohmann::json ports = nlohmann::json::array();
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    nlohmann::json pj = ports_[i]->describe();
    pj["rx_ring_sources"] = own_sources(i);
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_ids_[i], &st) == 0)
      pj["port_stats"] = {{"ipackets", st.ipackets}, {"opackets", st.opackets}, {"imissed", st.imissed},
                          {"ierrors", st.ierrors},   {"oerrors", st.oerrors},   {"rx_nombuf", st.rx_nombuf}};
    else
      pj["port_stats"] = {{"error", "rte_eth_stats_get failed: rx drops unknown"}};
    ports.push_back(std::move(pj));
  }
  j["port_stats"] = ports[0]["port_stats"];
  j["ports"] = std::move(ports);
  j["rx_ring_sharing"] =
      ports_.size() > 1 ? "one port per peer: each rx ring receives from one rank, and holds its window, replies and credits"
                        : "one port for every peer: its rx ring is divided among the ranks sending into it, each of which may "
                          "flood it at once; the credit limit is the smallest share (ring - burst) / senders - 2 x window - 4";
  nlohmann::json peers = nlohmann::json::array();
  for (const Peer& p : peers_) {
    if (!p.connected) continue;
    char mac[18];
    const std::uint8_t* d = p.eth;  // the destination MAC leads the Ethernet header
    std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", d[0], d[1], d[2], d[3], d[4], d[5]);
    peers.push_back({{"rank", p.rank},           {"port", p.port_id},          {"mac", mac},
                     {"rx_ring", p.rx_ring},     {"rx_ring_sources", p.rx_ring_sources},
                     {"tx", p.c.tx},             {"rx", p.c.rx},               {"lost", p.c.lost},
                     {"reordered", p.c.reordered}, {"duplicates", p.c.duplicates}, {"late", p.c.late},
                     {"injected_drops", p.c.injected_drops},
                     {"bulk_incomplete", p.c.bulk_incomplete}});
  }
  j["peers"] = std::move(peers);
  return j;
}

}  // namespace logpb::dpdk
