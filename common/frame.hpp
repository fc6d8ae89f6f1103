// The wire format of one Active Message, shared by every transport.
//
// A small AM is exactly one 64-byte cache line: a header naming the handler and four 64-bit argument
// words, as in GAM (Culler et al. section 2.2). Bulk store/get carry `bulk_len` bytes that land at
// `bulk_off` in the receiver's registered segment; how the bytes travel is the transport's business
// (a copy into shared memory, RDMA WRITE WITH IMM, MTU-sized Ethernet frames).
#pragma once

#include <cstddef>
#include <cstdint>

namespace logpb::am {

inline constexpr std::uint16_t kMagic = 0x4c50;  // "LP"
inline constexpr std::uint8_t kVersion = 2;      // 2: source and destination ranks (N-rank jobs)
inline constexpr std::uint16_t kMaxHandlers = 32;
inline constexpr int kMaxRanks = 65535;  // ranks are 16-bit on the wire

enum class Kind : std::uint8_t {
  request = 1,  // counts against the requester's outstanding window; its handler replies
  reply = 2,    // returns one window slot to the requester
  oneway = 3,   // a request whose handler sends no reply: costs one credit of the sender (see am.hpp)
  credit = 4,   // flow control, never dispatched: args[0] credits returned to the sender of one-way requests
};

struct alignas(64) Frame {
  std::uint32_t seq;  // per-direction sequence number, owned by the transport (slot validity, loss)
  std::uint16_t magic;
  std::uint8_t version;
  Kind kind;
  std::uint32_t session;  // every rank of a run agrees on it; frames of any other session are dropped
  std::uint16_t src;      // the sending rank: handlers see who called (a reply goes back to it)
  std::uint16_t dst;      // the rank it is for: a transport shared by several peers routes on it, and the
                          // receiver refuses a frame that is not its own
  std::uint8_t handler;
  std::uint8_t reserved;   // zero
  std::uint16_t flags;     // the requester's loss epoch, copied into the reply (see am.hpp)
  std::uint32_t bulk_len;  // bytes that arrived with this AM in the receiver's segment (0: none)
  std::uint32_t bulk_off;  // where they are in the receiver's segment
  std::uint32_t token;     // requester's tag, copied into the reply
  std::uint64_t args[4];
};
static_assert(sizeof(Frame) == 64, "a small AM is one cache line");
static_assert(offsetof(Frame, seq) == 0, "the shm transport publishes a frame by storing seq last");
static_assert(offsetof(Frame, args) == 32, "the arguments are the second half of the line");

// Why a received frame was refused. Counted per reason, never dispatched.
enum class Reject : int {
  short_frame,
  bad_magic,
  bad_version,
  foreign_session,
  bad_kind,
  bad_handler,
  bad_bulk,
  unexpected_reply,
  stale_reply,
  bad_credit,
  bad_rank,
  count_
};
inline const char* to_string(Reject r) {
  switch (r) {
    case Reject::short_frame:
      return "short_frame";
    case Reject::bad_magic:
      return "bad_magic";
    case Reject::bad_version:
      return "bad_version";
    case Reject::foreign_session:
      return "foreign_session";
    case Reject::bad_kind:
      return "bad_kind";
    case Reject::bad_handler:
      return "bad_handler";
    case Reject::bad_bulk:
      return "bad_bulk";
    case Reject::unexpected_reply:
      return "unexpected_reply";
    case Reject::stale_reply:
      return "stale_reply";
    case Reject::bad_credit:
      return "bad_credit";
    case Reject::bad_rank:
      return "bad_rank";  // a source outside the job, or a frame for another rank
    default:
      return "?";
  }
}

}  // namespace logpb::am
