// The DPDK transport's datapath: rx bursts and the validation of each received frame (accept), tx bursts,
// batched and tracked sends, bulk data and one-sided gets. Construction and reporting are in
// dpdk/transport_control.cpp.
#include "dpdk/transport.hpp"

#include <dirent.h>
#include <sys/socket.h>

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

// One rx burst per port, starting after the port that delivered last, until one has frames: every port
// gets its turn, and an idle poll costs one burst per port.
template <class Rig>
std::uint16_t Transport<Rig>::rx_round_robin() noexcept {
  const std::size_t n = ports_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = rx_next_;
    rx_next_ = i + 1 == n ? 0 : i + 1;
    const std::uint16_t got = rte_eth_rx_burst(port_ids_[i], 0, rx_, static_cast<std::uint16_t>(burst_));
    if (got) return got;
  }
  return 0;
}

// DPDK 22.11's net_af_packet passes a tx burst to the kernel with one sendto(MSG_DONTWAIT). When the
// socket's send buffer is full (a qdisc such as tbf still holds earlier frames), the kernel sends what fits
// and leaves the rest in the PMD's ring marked for sending, while the PMD reports the whole burst sent
// (EAGAIN is not an error to it); only a later sendto takes them out. A sender that then waits for its peer
// (credits, a reply) sends nothing more, so they never leave: through tbf at 100 Mbit/s a flood stopped
// after ~1,300 frames, "peer lost", with no drop counted anywhere (tests/e2e/tbf.py; strace showed the
// EAGAINs). An empty tx burst would not help: 22.11.11's eth_af_packet_tx returns at once for 0 frames.
// So an idle poll, at most every kKickUs, makes that sendto itself on the process's AF_PACKET sockets
// (the PMD's, one per queue pair; the PMD offers no way to reach them), found once in /proc/self/fd.
namespace {
const std::vector<int>& packet_sockets() {
  static const std::vector<int> fds = [] {
    std::vector<int> v;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (const dirent* e = readdir(d)) {
        const int fd = std::atoi(e->d_name);
        int domain = 0;
        socklen_t len = sizeof domain;
        if (fd > 2 && fd != dirfd(d) && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
            domain == AF_PACKET)
          v.push_back(fd);
      }
      closedir(d);
    }
    return v;
  }();
  return fds;
}
}  // namespace

template <class Rig>
void Transport<Rig>::kick_stranded() noexcept {
  const std::uint64_t now = rte_get_tsc_cycles();
  if (now - last_kick_ < kick_gap_cycles_) return;
  last_kick_ = now;
  for (int fd : packet_sockets()) ::sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0);
}

// Duplicates and reordering, injected on receive (as --drop-rate injects loss) to test that the receiver
// never delivers a frame twice or out of order: each received frame is, with probability dup_rate,
// followed by a copy of itself; with probability reorder_rate it is held back and delivered right after
// the next frame received, which overtakes it. A held frame that no other frame follows within
// kReorderHoldUs is delivered at the first poll after that (delayed, not reordered): a request/reply
// exchange with one frame in flight would otherwise wait for ever. Released at the next poll instead, as
// it once was, a frame was overtaken only when its follower came in the same rx burst, and a sanitized
// verify run once held 100 frames and saw none overtaken. Rewrites the burst in rx_ (room for twice a
// burst and one).
template <class Rig>
std::uint16_t Transport<Rig>::inject_faults(std::uint16_t n) noexcept {
  rte_mbuf* in[512];
  std::copy(rx_, rx_ + n, in);
  std::uint16_t out = 0;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    if (!held_ && chance(reorder_threshold_)) {
      held_ = m;
      held_at_ = rte_rdtsc();
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
  if (out == 0 && held_ && rte_rdtsc() - held_at_ >= hold_cycles_) {
    rx_[out++] = held_;
    held_ = nullptr;
  }
  return out;
}

template <class Rig>
bool Transport<Rig>::flush_queue() noexcept {
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
template <class Rig>
void Transport<Rig>::tx_retry_check(long tries) {
  if ((tries & 1023) == 1023 && !peer_alive_())
    throw PeerError("a peer is gone (link down or rank exited) while a send waited for the DPDK tx ring");
  if (tries > 100000000L)
    throw PeerError("rte_eth_tx_burst: the DPDK tx ring never drained (link down or device stuck?)");
}

template <class Rig>
void Transport<Rig>::drain_sends() {
  for (long tries = 0; !flush_sends(); ++tries) tx_retry_check(tries);
}

template <class Rig>
void Transport<Rig>::transmit_until_sent(Peer& p, rte_mbuf* m) {
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
template <class Rig>
bool Transport<Rig>::transmit_tracked(Peer& p, rte_mbuf* m) noexcept {
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

template <class Rig>
void Transport<Rig>::record_tracked(const Peer& p, rte_mbuf* m) noexcept {
  // track_next() made room. The operation being sent is the next one: its number is tx_ops_ + 1.
  tracked_[trk_tail_ % kTracked] = {tx_ops_ + 1, m, p.port_id};
  ++trk_tail_;
  track_pending_ = false;
  ++counters_.tracked;
  // What the PMD does: copy-and-free inside tx_burst (memif copy mode), or keep the mbuf until the
  // device or the peer is done with it (zero copy, completion queues).
  if (rte_mbuf_refcnt_read(m) == 1) ++counters_.completed_in_tx_burst;
}

template <class Rig>
void Transport<Rig>::track_next() {
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

template <class Rig>
std::uint64_t Transport<Rig>::tx_completed() {
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

template <class Rig>
rte_mbuf* Transport<Rig>::unstash(int src) noexcept {
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

// accept()'s steps are forced inline: the receive path stays one function, as the compiler built it
// before it was cut into steps.

// The frame's headers: ours (EtherType, wire version, session), long enough, for this rank from a
// connected peer; counted as received. nullptr when it is not, counted by reason.
template <class Rig>
typename Transport<Rig>::Peer* Transport<Rig>::admit(rte_mbuf* m, const std::uint8_t* b, bool again, WireHdr& h) noexcept {
  if (!again) ++counters_.rx;
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  if (len < kHeaders || m->nb_segs != 1) {
    ++counters_.malformed;
    return nullptr;
  }
  rte_ether_hdr eth;
  std::memcpy(&eth, b, sizeof eth);
  if (eth.ether_type != rte_cpu_to_be_16(kEtherType)) {
    ++counters_.foreign_ethertype;
    return nullptr;
  }
  std::memcpy(&h, b + sizeof(rte_ether_hdr), sizeof h);
  if (h.version != kWireVersion || h.len > len - kHeaders) {
    ++counters_.malformed;
    return nullptr;
  }
  if (h.session != session_) {
    ++counters_.foreign_session;
    return nullptr;
  }
  if constexpr (Rig::rigged)
    if (reflector_) std::swap(h.src, h.dst);  // our own frame echoed: it comes from the rank we sent it to
  if (h.dst != rank_ || h.src >= peers_.size() || !peers_[h.src].connected) {
    ++counters_.foreign_rank;
    return nullptr;
  }
  Peer& p = peers_[h.src];
  if (!again) {
    ++p.c.rx;
    if constexpr (Rig::rigged) {
      if (drop_threshold_ && chance(drop_threshold_)) {
        ++p.c.injected_drops;
        return nullptr;
      }
    }
  }
  return &p;
}

// Older than expected: a duplicate of a frame that arrived (never delivered twice), or a frame that came
// after a later one and was already given up on as lost (delivering it now could land old bulk data over
// newer data, or an AM after its own loss timeout): counted and dropped either way. The last 64 frames are
// told apart by rx_missing; an older one counts as late.
template <class Rig>
void Transport<Rig>::drop_behind(Peer& p, std::int32_t ahead) noexcept {
  const auto behind = static_cast<std::uint32_t>(-(ahead + 1));
  if (behind >= 64 || (p.rx_missing >> behind) & 1) {
    ++p.c.late;
    if (behind < 64) p.rx_missing &= ~(std::uint64_t{1} << behind);  // a second copy of it is a duplicate
  } else {
    ++p.c.duplicates;
  }
}

// Ahead of its stream by less than the stash holds: held until the frames before it come (reordering),
// unless the stash is full (src kStashFull: the caller flushes it, then offers this frame again).
template <class Rig>
void Transport<Rig>::stash_ahead(rte_mbuf* m, Peer& p, const WireHdr& h, int& src) noexcept {
  if (stash_n_ == kStash) {
    src = kStashFull;
    return;
  }
  for (int i = 0; i < stash_n_; ++i)  // the same frame twice in the stash: a duplicate
    if (stash_[static_cast<std::size_t>(i)].src == h.src && stash_[static_cast<std::size_t>(i)].seq == h.seq) {
      ++p.c.duplicates;
      return;
    }
  stash_[static_cast<std::size_t>(stash_n_++)] = {m, h.src, h.seq};
  ++p.stashed;
  src = kStashed;
}

// The frame is taken as the next of its stream: frames it skipped (ahead > 0, a gap too wide to be
// reordering, or frames out of the stash) are lost.
template <class Rig>
void Transport<Rig>::take_in_sequence(Peer& p, const WireHdr& h, std::int32_t ahead, bool again, int& src) noexcept {
  if (stash_n_ && ahead == 0 && p.stashed > 0 && !again)
    ++p.c.reordered;  // it came after later frames that the stash held
  src = h.src;
  if (ahead > 0) {
    p.c.lost += static_cast<std::uint64_t>(ahead);
    p.bulk_broken = true;
  }
  if (ahead == 0) [[likely]]
    p.rx_missing <<= 1;
  else  // frames rx_expect .. h.seq - 1 never came: bits 1 .. ahead
    p.rx_missing =
        ahead >= 63 ? ~std::uint64_t{1} : (p.rx_missing << (ahead + 1)) | (((std::uint64_t{1} << ahead) - 1) << 1);
  p.rx_expect = h.seq + 1;
}

// A chunk of bulk data, copied into the segment where it says.
template <class Rig>
void Transport<Rig>::store_chunk(Peer& p, const WireHdr& h, const std::uint8_t* body) noexcept {
  if (h.off > segment_bytes_ || h.len > segment_bytes_ - h.off) {
    ++counters_.malformed;
    p.bulk_broken = true;
    return;
  }
  std::memcpy(segment_ + h.off, body, h.len);
}

// A one-sided get's request, served here (no AM handler runs).
template <class Rig>
void Transport<Rig>::take_get_request(Peer& p, const WireHdr& h, const std::uint8_t* body) {
  if (h.len < sizeof(GetRequest) + sizeof(am::Frame)) {
    ++counters_.malformed;
    return;
  }
  GetRequest g;
  std::memcpy(&g, body, sizeof g);
  am::Frame reply;
  std::memcpy(&reply, body + sizeof g, sizeof reply);
  serve_get(p, g, reply);
}

// An AM frame, copied out to be delivered, with the data of a medium AM put into the segment. nullptr when
// its data does not fit the segment, or bulk data it announces lost a chunk.
template <class Rig>
const am::Frame* Transport<Rig>::take_am(Peer& p, const WireHdr& h, const std::uint8_t* body) noexcept {
  if (h.len < sizeof(am::Frame)) {
    ++counters_.malformed;
    return nullptr;
  }
  std::memcpy(&rx_frame_, body, sizeof rx_frame_);
  if (const std::uint32_t data = h.len - sizeof(am::Frame); data != 0) {
    // A medium AM: its data follows in this frame. Checked against the segment before a byte is
    // copied there; the AM layer checks the same fields again before dispatch.
    if (rx_frame_.bulk_len != data || rx_frame_.bulk_off > segment_bytes_ ||
        data > segment_bytes_ - rx_frame_.bulk_off) {
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
  if constexpr (Rig::rigged) {
    if (reflector_) reflect(rx_frame_);
  }
  return &rx_frame_;
}

// An echoed request of ours (the reflector is rank 1): it comes from the rank we sent it to, and is
// delivered as that rank's reply to the handler the reflector's replies go to.
template <class Rig>
void Transport<Rig>::reflect(am::Frame& f) const noexcept {
  std::swap(f.src, f.dst);
  if (f.kind == am::Kind::request) {
    f.kind = am::Kind::reply;
    f.handler = static_cast<std::uint8_t>(reflector_reply_handler_);
  }
}

template <class Rig>
const am::Frame* Transport<Rig>::accept(rte_mbuf* m, bool again, int& src) {
  const auto* b = rte_pktmbuf_mtod(m, const std::uint8_t*);
  WireHdr h;
  Peer* p = admit(m, b, again, h);
  if (!p) return nullptr;
  const auto ahead = static_cast<std::int32_t>(h.seq - p->rx_expect);
  if (ahead < 0) [[unlikely]] {
    drop_behind(*p, ahead);
    return nullptr;
  }
  if (ahead > 0 && !again && ahead < kStash) [[unlikely]] {
    stash_ahead(m, *p, h, src);
    return nullptr;
  }
  take_in_sequence(*p, h, ahead, again, src);
  const std::uint8_t* body = b + kHeaders;
  switch (h.type) {
    case WireType::chunk:
      store_chunk(*p, h, body);
      return nullptr;
    case WireType::get_req:
      take_get_request(*p, h, body);
      return nullptr;
    case WireType::am:
      return take_am(*p, h, body);
  }
  ++counters_.malformed;
  return nullptr;
}

// More than a medium AM holds: the first chunk's mbuf is the admission test, then all of it goes out.
template <class Rig>
bool Transport<Rig>::try_store_chunked(Peer& p, const am::Frame& f, const void* src, std::uint32_t n,
                                  std::uint32_t remote_off) {
  rte_mbuf* first = frame_mbuf(p, WireType::chunk, std::min(chunk_bytes_, n), remote_off);
  if (!first) return false;
  send_bulk(p, static_cast<const std::uint8_t*>(src), n, remote_off, f, first);
  ++tx_ops_;
  return true;
}

// The request goes to the rank whose segment is read: the completion's source.
template <class Rig>
bool Transport<Rig>::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
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
template <class Rig>
void Transport<Rig>::serve_get(Peer& to, const GetRequest& g, const am::Frame& reply) {
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
template <class Rig>
void Transport<Rig>::send_bulk(Peer& p, const std::uint8_t* src, std::uint32_t n, std::uint32_t dest_off, const am::Frame& f,
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

template class Transport<Plain>;
template class Transport<Rigged>;

}  // namespace logpb::dpdk
