// The floor under the DPDK transport's datapath (meta.transport_floor, as over MPI): a bare request/reply
// loop between the two ranks of a job, on the ports and pool connect() built, before the transport exists.
// One mbuf of the small AM's size on the wire each way, rte_eth_tx_burst and rte_eth_rx_burst, nothing else
// (bench/dpdk_bare_pingpong is the same loop as a program of its own). What logpbench's small-AM round trip
// takes beyond it is logpbench's own code: the AM layer (meta.harness) and the DPDK transport's datapath,
// which the table and `compare` then show apart (analysis/results_json.hpp, transport_share).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "dpdk/port.hpp"

namespace logpb::dpdk {

// The EtherType of the floor's frames: not the transport's, so a frame of it that arrives late (the
// requester gave up on it) is counted by the transport as foreign and dropped.
inline constexpr std::uint16_t kFloorEtherType = 0x88b7;

struct FloorOptions {
  int iterations = 5000;      // timed round trips (a tenth more, plus 100, first as a warm-up)
  double budget_ms = 200;     // the requester stops timing after this, whatever the count
  double reply_wait_ms = 50;  // no reply within this (1 s for the first): a lost frame, the floor abandoned
  double replier_wait_s = 3;  // the replier stops after this if the requester's stop frame never comes
};

// Both ranks call it, after a barrier. The requester (the job's leader) returns the figures, or why it has none;
// the replier returns null. Throws nothing for a lost frame or a silent peer: the floor is then missing,
// and the run goes on (a dead peer is the transport's to report).
nlohmann::json measure_floor(Port& port, const std::uint8_t peer_mac[6], bool requester, const Clock& clock,
                             const FloorOptions& opt = {});

}  // namespace logpb::dpdk
