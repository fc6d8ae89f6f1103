// The DPDK transport's control path: building the peer table and the bulk segment, tearing down what the
// datapath (dpdk/transport.cpp) still holds, the credit limit the rx rings allow, and what describe()
// reports. Ports, mempools and queues are set up in dpdk/port.cpp.
#include "dpdk/transport.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb::dpdk {

template <class Rig>
Transport<Rig>::Transport(std::vector<Port*> ports, const std::vector<PeerAddress>& peers, const TransportOptions& opt,
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
  if (!Rig::rigged && rigged(opt))
    throw std::logic_error(
        "the plain DPDK datapath has no fault injection and no reflector: build a Transport<Rigged> "
        "for --drop-rate, --dup-rate, --reorder-rate or --reflector (dpdk::connect chooses it)");
  if (size_ < 1 || size_ > am::kMaxRanks || rank_ < 0 || rank_ >= size_)
    throw UsageError("DPDK transport: rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                     " is not a rank of the job");
  if (opt.drop_rate < 0 || opt.drop_rate >= 1) throw UsageError("--drop-rate must be in [0, 1)");
  drop_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.drop_rate, 64));
  if (opt.dup_rate < 0 || opt.dup_rate >= 1) throw UsageError("--dup-rate must be in [0, 1)");
  if (opt.reorder_rate < 0 || opt.reorder_rate >= 1) throw UsageError("--reorder-rate must be in [0, 1)");
  dup_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.dup_rate, 64));
  reorder_threshold_ = static_cast<std::uint64_t>(std::ldexp(opt.reorder_rate, 64));
  inject_ = dup_threshold_ || reorder_threshold_;
  hold_cycles_ = static_cast<std::uint64_t>(static_cast<double>(rte_get_tsc_hz()) * kReorderHoldUs * 1e-6);
  for (const Port* port : ports_)
    if (port->describe().value("driver", std::string()) == "net_af_packet")
      kick_gap_cycles_ = static_cast<std::uint64_t>(static_cast<double>(rte_get_tsc_hz()) * kKickUs * 1e-6);
  if (opt.tx_burst < 1 || opt.tx_burst > kMaxTxBurst)
    throw UsageError("--tx-burst must be in 1.." + std::to_string(kMaxTxBurst));
  tx_burst_ = static_cast<std::uint16_t>(opt.tx_burst);
  if (inject_) burst_ = std::min(burst_, 255);  // inject_faults may double a burst and add one: rx_ holds 512
  std::uint32_t payload = ports_[0]->max_frame_payload();
  for (Port* p : ports_) {
    port_ids_.push_back(p->id());
    pools_.push_back(p->pool());
    payload = std::min(payload, p->max_frame_payload());
  }
  peers_.resize(static_cast<std::size_t>(size_));
  for (const PeerAddress& a : peers) {
    if (a.rank < 0 || a.rank >= size_ || a.rank == rank_ || a.port < 0 || a.port >= static_cast<int>(ports_.size()) ||
        a.rx_ring_sources < 1)
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
  if (!segment_)
    throw std::runtime_error("rte_zmalloc_socket of the " + std::to_string(segment_bytes_) + "-byte segment failed");
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

template <class Rig>
Transport<Rig>::Transport(Port& port, const std::uint8_t peer_mac[6], const TransportOptions& opt,
                          std::function<bool()> peer_alive)
    : Transport(std::vector<Port*>{&port}, {pair_peer(peer_mac, opt.reflector ? 1 : 1 - opt.rank, opt.peer_rx_ring)},
                opt, std::move(peer_alive)) {}

template <class Rig>
void Transport<Rig>::no_route(int rank) const {
  throw UsageError("DPDK transport of rank " + std::to_string(rank_) + ": no route to rank " + std::to_string(rank) +
                   " (not a connected peer in a job of " + std::to_string(size_) + ")");
}

template <class Rig>
Transport<Rig>::~Transport() {
  // What a stream left queued goes out if the PMD takes it now; a stuck port does not hold the exit.
  for (int tries = 0; txq_n_ != 0 && tries < 1000; ++tries) flush_queue();
  for (std::uint16_t i = 0; i < txq_n_; ++i) rte_pktmbuf_free(txq_[i]);
  release_tx_mbufs();
  for (std::uint16_t i = rx_pos_; i < rx_n_; ++i) rte_pktmbuf_free(rx_[i]);
  if (held_) rte_pktmbuf_free(held_);
  for (int i = 0; i < stash_n_; ++i) rte_pktmbuf_free(stash_[static_cast<std::size_t>(i)].m);
  for (; trk_head_ != trk_tail_; ++trk_head_) rte_pktmbuf_free(tracked_[trk_head_ % kTracked].m);  // our references
  rte_free(segment_);
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

template <class Rig>
int Transport<Rig>::own_sources(std::size_t port) const {
  int k = 0;
  for (const Peer& p : peers_)
    if (p.connected && p.port == port) ++k;
  return k;
}

template <class Rig>
int Transport<Rig>::max_credits(int window) const {
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
                     " sending rank(s) leaves room for " + std::to_string(room) +
                     " one-way messages per rank beside 2 x --window " + std::to_string(window) + ", --burst " +
                     std::to_string(burst_) + " and " + std::to_string(kCreditFrameMargin) +
                     " credit frames: raise --rx-ring (on every rank) or lower --window");
  return room;
}

// What local completion meant in this run, from what the PMD was seen to do with tracked mbufs.
template <class Rig>
nlohmann::json Transport<Rig>::describe_local_completion() const {
  const Counters& c = counters_;
  nlohmann::json j = {
      {"mechanism", ports_.size() == 1
                        ? "tx completion: an extra reference on the operation's last mbuf, complete when "
                          "the PMD has freed it (frames on one tx queue complete in order)"
                        : "tx completion per port: an extra reference on the operation's last mbuf, complete "
                          "when the PMD has freed it; frames on one port's tx queue complete in order, so it "
                          "covers the earlier operations to the peers of its own port only"},
      {"tracked", c.tracked},
      {"completed", c.completed},
      {"completed_in_tx_burst", c.completed_in_tx_burst},
      {"completed_later", c.completed - std::min(c.completed, c.completed_in_tx_burst)},
      {"reaping", cleanup_supported_ ? "rte_eth_tx_done_cleanup (or never needed)"
                                     : "an empty rte_eth_tx_burst (the PMD has no tx_done_cleanup)"},
      {"idle_kick_us", kick_gap_cycles_ ? nlohmann::json(kKickUs) : nlohmann::json(nullptr)}};
  if (c.tracked == 0)
    j["meaning"] = "not exercised in this run";
  else if (c.completed_in_tx_burst == c.tracked)
    j["meaning"] =
        "the PMD copies each frame out and frees its mbuf inside rte_eth_tx_burst: local completion "
        "is immediate and its cost is inside the send";
  else
    j["meaning"] =
        "the PMD keeps sent mbufs until the device or the peer is done with them (zero copy or a "
        "completion ring): local completion comes after the send returns";
  return j;
}

template <class Rig>
Counters Transport<Rig>::counters() const {
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

template <class Rig>
nlohmann::json Transport<Rig>::describe() const {
  nlohmann::json j = ports_[0]->describe();  // the first port's facts at the top, as for a pair
  j["rank"] = rank_;
  j["size"] = size_;
  j["burst"] = burst_;
  // Frames per PMD tx burst: 1 (each send goes out in its own call), or, while a stream batched its sends
  // (bw, flood with --tx-burst), up to tx_burst; counters.tx_batches/tx_batched say what happened.
  j["tx_burst"] = tx_burst_;
  // Plain: nothing but the NI in the datapath; rigged: injection and the reflector's swaps tested per frame.
  j["datapath"] = Rig::rigged ? "rigged" : "plain";
  j["drop_rate"] = drop_rate_;
  j["dup_rate"] = dup_rate_;
  j["reorder_rate"] = reorder_rate_;
  j["reorder_hold_us"] = kReorderHoldUs;  // a held frame that no other overtakes is delivered late after this
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
      ports_.size() > 1
          ? "one port per peer: each rx ring receives from one rank, and holds its window, replies and credits"
          : "one port for every peer: its rx ring is divided among the ranks sending into it, each of which may "
            "flood it at once; the credit limit is the smallest share (ring - burst) / senders - 2 x window - 4";
  nlohmann::json peers = nlohmann::json::array();
  for (const Peer& p : peers_) {
    if (!p.connected) continue;
    char mac[18];
    const std::uint8_t* d = p.eth;  // the destination MAC leads the Ethernet header
    std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", d[0], d[1], d[2], d[3], d[4], d[5]);
    peers.push_back({{"rank", p.rank},
                     {"port", p.port_id},
                     {"mac", mac},
                     {"rx_ring", p.rx_ring},
                     {"rx_ring_sources", p.rx_ring_sources},
                     {"tx", p.c.tx},
                     {"rx", p.c.rx},
                     {"lost", p.c.lost},
                     {"reordered", p.c.reordered},
                     {"duplicates", p.c.duplicates},
                     {"late", p.c.late},
                     {"injected_drops", p.c.injected_drops},
                     {"bulk_incomplete", p.c.bulk_incomplete}});
  }
  j["peers"] = std::move(peers);
  return j;
}

template class Transport<Plain>;
template class Transport<Rigged>;

}  // namespace logpb::dpdk
