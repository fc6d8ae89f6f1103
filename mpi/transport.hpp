// MPI datapath: the AM layer over MPI point-to-point, to show what a messaging layer adds to an NI
// (Bell et al. section 5, Figure 3 and Table 2: the same network through its native API and through MPI).
// docs/mpi.md says where a round trip's nanoseconds go against the bare loop, in both of the VM's states.
// It is built to cost what an MPI program of the same messages pays, so that raw-vs-MPI charges MPI with
// MPI's own cost only. What a round trip still carries over the same MPI calls without an AM layer
// (bench/mpi_bare_pingpong --shape transport) is the AM layer's own work on each side. The lab's timings of
// that work, and of scripts/mpi-vs-bare against the shaped loop, are in docs/results/lab-notes.md.
//
// An AM is one MPI message on tag kTagAm: its 64-byte frame, and a bulk payload of up to inline_bytes
// right behind it (a store's data, a reply's data). Larger payloads travel as a message of their own on
// kTagStore, sent before the frame and received straight into the segment once the frame names where.
// A small AM without payload goes compact by default (--mpi-frame, FrameMode): an 8-byte header and its
// argument words up to the last nonzero one, 8-40 bytes; the receiver tells the two forms by size (a full
// frame is 64 bytes or more) and fills in what MPI's envelope and the job say (source, destination,
// session) before the AM layer sees a full frame.
//
// Receives (--mpi-recv), as Kielmann et al.'s LogP/MPI (section 3) offers them:
//  - irecv: a ring of pre-posted MPI_Irecv (from_: the peer in a job of two ranks, else MPI_ANY_SOURCE;
//    --mpi-source), kTagAm, 64 + inline_bytes each). MPI matches a
//    message to the earliest posted receive that fits, so the ring fills in posting order: poll() tests
//    only the head slot (MPI_Test), delivers it, and re-posts it at the tail when next idle. MPI_Testsome over
//    the whole ring would scan every request on each empty poll (mpi/poll_cost.cpp measures the two).
//  - recv: nothing pre-posted. A poll that finds nothing stashed posts one MPI_Irecv (from_, kTagAm) and tests
//    it, and later polls test it until it completes: the receive is posted when the program first waits for
//    a message, as MPI_Recv posts it (MPI_Recv is MPI_Irecv + MPI_Wait). A message already there (the paper's
//    wait Delta) is matched by that post, as MPI_Recv matches it. After a poll has handed something up, it
//    looks for more with MPI_Improbe + MPI_Mrecv instead, which posts nothing, so no receive is posted before
//    the program waits again; a blocking send's wait (below) does the same. Polling by MPI_Improbe alone cost
//    more a round trip than posting as MPI_Recv does (docs/results/lab-notes.md).
// Sends (--mpi-send) of the message that carries the frame:
//  - isend: MPI_Isend from a bounded pool of slots, each with its own copy of the message (the AM layer
//    patches its frames in place). The pool is a FIFO: slots retire in order as their sends complete, so
//    an operation is locally complete once every slot up to its last has retired (LocalCompletion). A
//    full pool is tested once (MPI_Testsome over it) before try_send says false.
//  - send / ssend: MPI_Send / MPI_Ssend, complete when the call returns. Under --mpi-recv recv, where no
//    receive is posted ahead, two ranks each inside a blocking send to the other would wait forever; there
//    the call is MPI_Isend / MPI_Issend and its wait takes in (stashes) the peers' messages meanwhile, as
//    an MPI program must to be safe, except for a plain send of at most kSurelyEager bytes, which is
//    MPI_Send itself.
//  - auto (the default): MPI_Send for a message of at most kSurelyEager bytes, which cannot block, and
//    MPI_Isend from the pool beyond. A small AM's round trip then pays what an MPI ping-pong pays; an
//    MPI_Isend costs a pool slot and its reaping (scripts/mpi-vs-bare, one session: 1.28-1.33 of the bare loop's RTT
//    with isend, 1.18 with auto).
//  A payload beyond inline_bytes goes by MPI_Isend in every mode: its receive is posted only once its
//  frame is seen, so a blocking send of it could wait for a peer that is itself blocked.
//
// Bulk (BulkTransport), selectable with --mpi-bulk:
//  - send: two-sided, as above. A get sends a request frame; the owner of the data answers it from
//    poll() with a message on kTagGet that the requester posted a receive for in its segment.
//  - put: one-sided. MPI_Win_create over the segment, one passive-target epoch (MPI_Win_lock_all) for
//    the whole run; a store is MPI_Put + MPI_Win_flush (the data is complete at the target) and then the
//    AM frame; a get is MPI_Get + MPI_Win_flush, then the completion is delivered locally.
// The default is send: it is what an MPI program of two-sided messages pays, and it runs over every pml
// and btl alike, while one-sided performance depends on which osc component the library picks.
//
// Errors: the communicator and the window return errors (MPI_ERRORS_RETURN); a failed call throws
// PeerError with MPI_Error_string's text and the call's name (mpi/errors.hpp).
#pragma once

#include <mpi.h>
#include <sched.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"
#include "common/transport.hpp"
#include "mpi/errors.hpp"
#include "mpi/options.hpp"

namespace logpb::mpi {

struct Counters {
  std::uint64_t tx = 0, tx_pool_full = 0, rx = 0, delivered = 0, bulk_stores = 0, bulk_gets = 0;
  std::uint64_t inline_stores = 0, stashed = 0, compact_received = 0;
  std::uint64_t gets_served = 0, bad_bulk = 0, short_messages = 0;
  std::uint64_t tracked = 0;
  // Compact sends by argument words (0-4: 8-40 bytes); their count and bytes are derived from it (describe()).
  std::array<std::uint64_t, 5> compact_sent_by_args{};
};

// The frames' tags: AMs (with inline payload), the data of a larger store, the data answering a get.
inline constexpr int kTagAm = 0x4c50;
inline constexpr int kTagStore = kTagAm + 1;
inline constexpr int kTagGet = kTagAm + 2;
// Under --mpi-send auto, and send with --mpi-recv recv, a message up to this size is sent with MPI_Send itself: every
// MPI library sends so small a message eagerly (complete once copied out, whether or not a receive is posted), so two
// ranks each inside one cannot wait for each other. Open MPI's MPI_Isend + MPI_Test instead runs a progress cycle
// before the request reads complete (o_s(0) 250-350 ns against MPI_Send's 30 ns, vader, slow VM).
inline constexpr int kSurelyEager = 256;
// A frame whose seq (owned by the transport) is this is a get request to serve, never delivered.
inline constexpr std::uint32_t kGetRequest = 0xffffffffu;

// A small AM without payload as --mpi-frame compact sends it (see the top).
struct Compact {
  std::uint8_t kind_nargs;  // am::Kind in the low nibble, the argument words that follow in the high one
  std::uint8_t handler;
  std::uint16_t flags;
  std::uint32_t token;
  std::uint64_t args[4];  // the first nargs sent
};
inline constexpr int compact_bytes(int nargs) { return 8 + 8 * nargs; }
static_assert(offsetof(Compact, args) == 8 && compact_bytes(4) < static_cast<int>(sizeof(am::Frame)),
              "a compact AM is shorter than a frame, so the size tells the two apart");

class Transport {
 public:
  // comm: this job's communicator (MPI_COMM_WORLD's duplicate, errors returned); win: the window over
  // `segment` in put mode (else MPI_WIN_NULL), already in its lock_all epoch.
  Transport(MPI_Comm comm, MPI_Win win, std::byte* segment, const TransportOptions& opt,
            std::function<bool()> peer_alive);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport();

  bool try_send(const am::Frame& f) {
    if (tx_full() && !reap_all()) return false;
    send_frame(f, static_cast<int>(sizeof(am::Frame)));
    ++counters_.tx;
    return true;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  // Up to `burst` frames: from the head of the receive ring (irecv; only the head is tested, the ring
  // fills in posting order), or as the stash takes them in after those a blocking send stashed (recv).
  template <class Sink>
  int poll(Sink&& sink) {
    int n = 0;
    if (local_n_) [[unlikely]]
      n += deliver_local(sink);
    if (recv_ == RecvMode::recv) return n + poll_probe(sink, n);
    while (n < burst_) {
      std::byte* buf = rx_buf(static_cast<std::size_t>(rx_head_));
      int flag = 0;
      MPI_Status st;
      check(MPI_Test(&rx_reqs_[static_cast<std::size_t>(rx_head_)], &flag, &st), "MPI_Test (receive ring)");
      if (!flag) {
        repost_pending();  // nothing came: this poll's caller is waiting anyway
        break;
      }
      ++counters_.rx;
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      const bool deliver = accept(buf, st.MPI_SOURCE, bytes);
      repost_pending();  // an earlier slot first, so the ring stays in posting order
      if (deliver) sink(static_cast<const void*>(buf), sizeof(am::Frame));
      repost_ = rx_head_;
      rx_head_ = rx_head_ + 1 == rx_n_ ? 0 : rx_head_ + 1;
      if (deliver) ++n;
    }
    counters_.delivered += static_cast<std::uint64_t>(n);
    return n;
  }

  // Local completion (common/transport.hpp, LocalCompletion): as MPI defines it, a send is complete when
  // its blocking call returns or MPI_Test says so (its buffer may be reused; nothing is said of arrival).
  // Operations are the successful try_send/try_store/try_get calls, numbered from 1. tx_completed() reaps
  // the pool (in order) and returns the last operation whose every send is retired.
  std::uint64_t tx_posted() const { return ops_; }
  void track_next() { ++counters_.tracked; }
  std::uint64_t tx_completed() {
    reap_all();
    return tx_head_ == tx_tail_ ? ops_ : tx_op_[tx_head_ & tx_mask_] - 1;
  }

  // IdleWait: yields only when the job has more ranks than cores.
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  std::string receive_from() const {
    return from_ == MPI_ANY_SOURCE ? "MPI_ANY_SOURCE" : "rank " + std::to_string(from_) + ", the only peer";
  }
  const Counters& counters() const { return counters_; }

 private:
  struct LocalFrame {  // a get's completion, delivered by poll()
    am::Frame frame;
    MPI_Request req = MPI_REQUEST_NULL;  // send mode: the data's receive (null once complete, or put mode)
    bool bad = false;
  };
  struct Stashed {  // a message received in recv mode (by poll() or a blocking send's wait), not yet handed up
    int source = 0, bytes = 0;
  };

  struct alignas(64) Line {
    std::byte b[64];
  };
  std::byte* rx_buf(std::size_t i) { return rx_store_[i * rx_lines_].b; }
  std::byte* tx_buf(std::uint64_t i) { return tx_store_[i * tx_lines_].b; }
  am::Frame& tx_frame(std::uint64_t i) { return *reinterpret_cast<am::Frame*>(tx_buf(i)); }
  std::uint64_t tx_free() const { return tx_n_ - (tx_tail_ - tx_head_); }
  bool tx_full() const { return tx_tail_ - tx_head_ == tx_n_; }
  // Sends `bytes` at buf from pool slot i as part of operation ops_ + 1, by `mode`; the frame of an
  // operation is its last send (ends_op), so ops_ counts operations. A send that belongs to no operation
  // of ours (the data answering a peer's get) is counted with the last one: tx_completed() then waits for
  // it too, which only ever says less than is true. A blocking send leaves the slot retired (and free, when
  // nothing older is in flight).
  void post(std::uint64_t i, const void* buf, int bytes, int dst, int tag, bool ends_op, SendMode mode) {
    tx_op_[i] = ends_op ? ops_ + 1 : (ops_ ? ops_ : 1);
    MPI_Request& r = tx_reqs_[i];
    if (mode == SendMode::auto_) mode = bytes <= kSurelyEager ? SendMode::send : SendMode::isend;
    if (mode == SendMode::isend) {
      check(MPI_Isend(buf, bytes, MPI_BYTE, dst, tag, comm_, &r), "MPI_Isend");
    } else if (recv_ == RecvMode::irecv) {
      if (mode == SendMode::send)
        check(MPI_Send(buf, bytes, MPI_BYTE, dst, tag, comm_), "MPI_Send");
      else
        check(MPI_Ssend(buf, bytes, MPI_BYTE, dst, tag, comm_), "MPI_Ssend");
      r = MPI_REQUEST_NULL;
    } else if (mode == SendMode::send && bytes <= kSurelyEager) {
      check(MPI_Send(buf, bytes, MPI_BYTE, dst, tag, comm_), "MPI_Send");
      r = MPI_REQUEST_NULL;
    } else {
      if (mode == SendMode::send)
        check(MPI_Isend(buf, bytes, MPI_BYTE, dst, tag, comm_, &r), "MPI_Isend");
      else
        check(MPI_Issend(buf, bytes, MPI_BYTE, dst, tag, comm_, &r), "MPI_Issend");
      wait_stashing(r, dst);
    }
    // Retired at once with nothing older in flight: the slot is free again, and the next message is written
    // into it while it is still in cache, as an MPI program reuses its send buffer once MPI_Send returns.
    // Moving on to the next slot would touch a line of another 4 KiB slot for every message.
    if (r != MPI_REQUEST_NULL || tx_head_ != tx_tail_) ++tx_tail_;
    if (ends_op) ++ops_;
  }
  // The AM message of an operation from the pool's next slot: a copy of f with the next seq (the AM layer
  // patches its frames in place), then the slot's first `bytes`, f's payload included when one was put
  // behind it, sent as the operation's last message.
  void send_frame(const am::Frame& f, int bytes) {
    const std::uint64_t i = tx_tail_ & tx_mask_;
    if (compact_ && bytes == static_cast<int>(sizeof(am::Frame)) && f.bulk_len == 0) {
      int nargs = 4;
      while (nargs > 0 && f.args[nargs - 1] == 0) --nargs;
      Compact& c = *reinterpret_cast<Compact*>(tx_buf(i));
      c.kind_nargs = static_cast<std::uint8_t>(static_cast<unsigned>(f.kind) | (static_cast<unsigned>(nargs) << 4));
      c.handler = f.handler;
      c.flags = f.flags;
      c.token = f.token;
      for (int k = 0; k < nargs; ++k) c.args[k] = f.args[k];
      ++counters_.compact_sent_by_args[static_cast<std::size_t>(nargs)];
      post(i, &c, compact_bytes(nargs), f.dst, kTagAm, true, send_);
      return;
    }
    am::Frame& out = tx_frame(i);
    std::memcpy(&out, &f, sizeof f);
    out.seq = tx_seq_++;
    post(i, &out, bytes, f.dst, kTagAm, true, send_);
  }
  // A compact AM of `bytes` from `source`, rewritten in place as the full frame the AM layer reads (the
  // receive buffer holds a frame at least); false when it is malformed.
  bool expand(std::byte* msg, int source, int bytes);
  // One MPI_Testsome over the whole pool, then retires completed slots from the head in order. True when
  // a slot is free.
  bool reap_all();
  void wait_stashing(MPI_Request& r, int dst);
  // The ring slot last handed up is posted again by the next poll that finds nothing (its caller waits
  // anyway) or before the next slot is handed up, whichever comes first: posting it at once would put an
  // MPI_Irecv inside every receive's time, which LogP/MPI's MPI_Irecv mode posts before its wait. One slot
  // of the ring at most waits so.
  void repost_pending() {
    if (repost_ < 0) return;
    const std::size_t i = static_cast<std::size_t>(repost_);
    repost_ = -1;
    check(MPI_Irecv(rx_buf(i), static_cast<int>(rx_stride_), MPI_BYTE, from_, kTagAm, comm_, &rx_reqs_[i]),
          "MPI_Irecv (re-post)");
  }
  // One message received into the stash's tail (recv mode); false when there is none (yet) or the stash is
  // full. The receive posted by an earlier call is tested first: while it is posted, MPI matches the next
  // message to it. Else, with may_post, one MPI_Irecv is posted into the tail and tested (MPI_Recv's way);
  // without, MPI_Improbe + MPI_Mrecv take a message that is there and post nothing.
  bool stash_one(bool may_post);
  // recv mode: the stashed messages first, then what stash_one takes in, each through the stash. A slot is
  // freed only after its frame's handler has run: the handler's reply may stash more meanwhile.
  template <class Sink>
  int poll_probe(Sink& sink, int already) {
    int n = 0;
    while (already + n < burst_) {
      if (stash_head_ == stash_tail_ && !stash_one(already + n == 0)) break;
      const std::size_t i = stash_head_ % static_cast<std::size_t>(rx_n_);
      std::byte* buf = rx_buf(i);
      ++counters_.rx;
      const bool deliver = accept(buf, stash_[i].source, stash_[i].bytes);
      if (deliver) sink(static_cast<const void*>(buf), sizeof(am::Frame));
      ++stash_head_;
      if (deliver) ++n;
    }
    counters_.delivered += static_cast<std::uint64_t>(already + n);
    return n;
  }
  // false: consumed here (a get request) or dropped. An inline payload is copied into the segment.
  bool accept(std::byte* msg, int source, int bytes);
  template <class Sink>
  int deliver_local(Sink& sink) {
    LocalFrame& l = local_[local_head_ & (kLocal - 1)];
    if (l.req != MPI_REQUEST_NULL && !local_data_arrived(l)) return 0;
    local_out_ = l.frame;
    ++local_head_;
    --local_n_;
    if (l.bad) return 0;  // the peer answered with other than the data asked for: dropped, counted
    sink(static_cast<const void*>(&local_out_), sizeof(am::Frame));
    return 1;
  }
  bool local_data_arrived(LocalFrame& l);
  void serve_get(const am::Frame& req, int src);
  void receive_store(const am::Frame& f, int src);

  MPI_Comm comm_;
  MPI_Win win_;
  BulkMode bulk_;
  SendMode send_;
  RecvMode recv_;
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  std::uint32_t inline_;
  bool compact_;
  std::uint32_t session_;
  std::function<bool()> peer_alive_;
  int burst_;
  bool yield_when_idle_;
  int rank_ = 0, size_ = 0;
  int from_ = MPI_ANY_SOURCE;  // whom the ring's receives and the probes name (SourceMode)

  // Receive buffers of rx_stride_ bytes (a frame and inline_ bytes, in whole cache lines): the ring
  // (irecv) or the stash (recv).
  std::size_t rx_stride_ = 0, rx_lines_ = 0;
  std::vector<Line> rx_store_;
  std::vector<MPI_Request> rx_reqs_;  // one array: MPI_Testsome's shape, for mpi/poll_cost.cpp's comparison
  int rx_n_ = 0, rx_head_ = 0;
  int repost_ = -1;  // the ring slot handed up last, not yet posted again (-1: none)
  std::vector<Stashed> stash_;
  std::size_t stash_head_ = 0, stash_tail_ = 0;
  MPI_Request wait_req_ = MPI_REQUEST_NULL;  // recv mode: the receive posted into the stash's tail, if any

  std::size_t tx_lines_ = 0;
  std::vector<Line> tx_store_;        // the pool's messages, tx_lines_ cache lines each
  std::vector<std::uint64_t> tx_op_;  // the operation each slot's send belongs to
  std::vector<MPI_Request> tx_reqs_;  // the slots' requests, one array for MPI_Testsome
  std::vector<int> tx_done_idx_;
  std::uint64_t tx_n_ = 0, tx_mask_ = 0, tx_head_ = 0, tx_tail_ = 0;
  std::uint32_t tx_seq_ = 0;
  std::uint64_t ops_ = 0;

  static constexpr std::uint64_t kLocal = 64;
  std::array<LocalFrame, kLocal> local_{};
  std::uint64_t local_head_ = 0, local_tail_ = 0, local_n_ = 0;
  alignas(64) am::Frame local_out_{};

  Counters counters_;
};

}  // namespace logpb::mpi
