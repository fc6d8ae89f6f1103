// What logpbench puts in an Ethernet frame: its own EtherType, a small transport header, then either one
// 64-byte AM frame or a chunk of bulk data. One AM per frame (docs/design.md §5, dpdk).
#pragma once

#include <cstdint>

namespace logpb::dpdk {

// IEEE 802 "local experimental" EtherType: never used by a real protocol on the wire.
inline constexpr std::uint16_t kEtherType = 0x88b5;

enum class WireType : std::uint8_t {
  am = 1,       // one AM frame follows
  chunk = 2,    // `len` bytes of bulk data for offset `off` of the receiver's segment
  get_req = 3,  // a GetRequest follows; the receiving transport answers with chunks and the AM frame
};

// Every frame names its sending and receiving rank: chunks and get requests carry no AM frame, and a
// port shared by several peers (one NIC behind a switch) sees them all interleaved. The sequence number
// counts the frames of one ordered pair (src -> dst), so K interleaved senders are K streams, not loss.
struct WireHdr {
  WireType type;
  std::uint8_t version;
  std::uint16_t len;      // payload bytes after this header
  std::uint16_t src;      // sending rank
  std::uint16_t dst;      // receiving rank: a frame flooded to another rank (a bridge that has not
                          // learnt a MAC yet, a promiscuous port) is counted and dropped
  std::uint32_t seq;      // per (src, dst) pair, every frame: a gap is a loss
  std::uint32_t session;  // frames of other sessions are counted and dropped
  std::uint32_t off;      // chunk: where the bytes go in the receiver's segment
};
static_assert(sizeof(WireHdr) == 20);

inline constexpr std::uint8_t kWireVersion = 2;  // 2: source and destination ranks

struct GetRequest {
  std::uint32_t remote_off, len, local_off, pad;  // remote_off is in the receiver of this request
};

}  // namespace logpb::dpdk
