// MPI datapath: the AM layer over MPI point-to-point, to show what a messaging layer adds to an NI
// (Bell et al. section 5, Figure 3 and Table 2: the same network through its native API and through MPI).
//
// Small AMs: one 64-byte message per frame on tag kTagAm. Receives: a ring of pre-posted MPI_Irecv
// (MPI_ANY_SOURCE, kTagAm). Every ring receive matches the same messages, and MPI matches a message to
// the earliest posted receive that fits, so the ring fills in the order it was posted: poll() tests only
// the head slot (MPI_Test), delivers it, re-posts it at the tail and moves on. MPI_Testsome over the whole
// ring would scan every request on each empty poll (mpi/poll_cost.cpp measures the two; see describe()).
// Sends: MPI_Isend from a bounded pool of slots, each with its own copy of the frame (the AM layer patches
// its frames in place). The pool is a FIFO: slots are retired in order as their sends complete, so a send
// operation is locally complete once every slot up to its last has been retired (LocalCompletion). A
// full pool is tested once (MPI_Testsome over it) before try_send says false.
//
// Bulk (BulkTransport), selectable with --mpi-bulk:
//  - send: two-sided. A store sends its data on kTagStore, then the AM frame; the receiver, on the frame,
//    receives the data (from that source, in order) into its segment at bulk_off before delivering it.
//    A get sends a request frame; the owner of the data answers it from poll() with a message on
//    kTagGet that the requester posted a receive for in its segment. This is what an MPI user writes.
//  - put: one-sided. MPI_Win_create over the segment, one passive-target epoch (MPI_Win_lock_all) for
//    the whole run; a store is MPI_Put + MPI_Win_flush (the data is complete at the target) and then the
//    AM frame; a get is MPI_Get + MPI_Win_flush, then the completion is delivered locally.
// The default is send: it is what an MPI program of two-sided messages pays, and it runs over every pml
// and btl alike, while one-sided performance depends on which osc component the library picks (osc rdma
// needs a btl with RDMA, such as vader with CMA; others fall back to emulating it with messages).
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

namespace logpb::mpi {

enum class BulkMode { send, put };
BulkMode parse_bulk_mode(const std::string& s);  // UsageError for anything but send|put
const char* to_string(BulkMode m);

struct TransportOptions {
  int rx_ring = 256;   // pre-posted receives of 64-byte frames
  int tx_pool = 64;    // Isends in flight (a power of two)
  int burst = 16;      // frames delivered per poll at most
  BulkMode bulk = BulkMode::send;
  std::uint32_t segment_bytes = 1 << 20;
  bool yield_when_idle = false;  // more ranks than cores: give the core away after an empty poll
};

struct Counters {
  std::uint64_t tx = 0, tx_pool_full = 0, rx = 0, delivered = 0, bulk_stores = 0, bulk_gets = 0;
  std::uint64_t gets_served = 0, bad_bulk = 0, short_messages = 0;
  std::uint64_t tracked = 0;
};

// The frames' tags: small AMs, the data of a two-sided store, the data answering a get.
inline constexpr int kTagAm = 0x4c50;
inline constexpr int kTagStore = kTagAm + 1;
inline constexpr int kTagGet = kTagAm + 2;
// A frame whose seq (owned by the transport) is this is a get request to serve, never delivered.
inline constexpr std::uint32_t kGetRequest = 0xffffffffu;

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
    Slot& s = tx_[tx_tail_ & tx_mask_];
    std::memcpy(&s.frame, &f, sizeof f);
    s.frame.seq = tx_seq_++;
    isend(s, &s.frame, sizeof(am::Frame), f.dst, kTagAm, true);
    ++counters_.tx;
    return true;
  }

  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);
  std::size_t max_bulk() const { return segment_bytes_; }

  // Up to `burst` frames from the head of the receive ring. Only the head is tested: the ring fills in
  // posting order (see the file comment).
  template <class Sink>
  int poll(Sink&& sink) {
    int n = 0;
    if (local_n_) [[unlikely]]
      n += deliver_local(sink);
    while (n < burst_) {
      Rx& r = rx_[rx_head_];
      int flag = 0;
      MPI_Status st;
      check(MPI_Test(&rx_reqs_[rx_head_], &flag, &st), "MPI_Test (receive ring)");
      if (!flag) break;
      ++counters_.rx;
      const bool deliver = accept(r, st);
      if (deliver) sink(static_cast<const void*>(&r.frame), sizeof(am::Frame));
      check(MPI_Irecv(&r.frame, sizeof(am::Frame), MPI_BYTE, MPI_ANY_SOURCE, kTagAm, comm_, &rx_reqs_[rx_head_]), "MPI_Irecv (re-post)");
      rx_head_ = rx_head_ + 1 == rx_n_ ? 0 : rx_head_ + 1;
      if (deliver) ++n;
    }
    counters_.delivered += static_cast<std::uint64_t>(n);
    return n;
  }

  // Local completion (common/transport.hpp, LocalCompletion): as MPI defines it, an MPI_Isend is complete
  // when MPI_Test says so (its buffer may be reused; nothing is said of arrival). Operations are the
  // successful try_send/try_store/try_get calls, numbered from 1. tx_completed() reaps the pool (in order)
  // and returns the last operation whose every send is retired.
  std::uint64_t tx_posted() const { return ops_; }
  void track_next() { ++counters_.tracked; }
  std::uint64_t tx_completed() {
    reap_all();
    return tx_head_ == tx_tail_ ? ops_ : tx_[tx_head_ & tx_mask_].op - 1;
  }

  // IdleWait: yields only when the job has more ranks than cores.
  bool idle_wait() { return yield_if_oversubscribed(yield_when_idle_); }

  bool peer_alive() const { return peer_alive_(); }
  std::span<std::byte> segment() { return {segment_, segment_bytes_}; }
  nlohmann::json describe() const;
  const Counters& counters() const { return counters_; }

 private:
  struct alignas(64) Slot {
    am::Frame frame;       // the copy an Isend of a frame sends from
    std::uint64_t op = 0;  // the operation this send belongs to (its request is tx_reqs_[same index])
  };
  struct Rx {
    am::Frame frame;
  };
  struct LocalFrame {  // a get's completion, delivered by poll()
    am::Frame frame;
    MPI_Request req = MPI_REQUEST_NULL;  // send mode: the data's receive (null once complete, or put mode)
    bool bad = false;
  };

  std::uint64_t tx_free() const { return tx_n_ - (tx_tail_ - tx_head_); }
  bool tx_full() const { return tx_tail_ - tx_head_ == tx_n_; }
  // Posts one Isend from the tail slot as part of operation ops_ + 1; the frame of an operation is its
  // last send (ends_op), so ops_ counts operations. A send that belongs to no operation of ours (the data
  // answering a peer's get) is counted with the last one: tx_completed() then waits for it too, which
  // only ever says less than is true.
  void isend(Slot& s, const void* buf, int bytes, int dst, int tag, bool ends_op) {
    s.op = ends_op ? ops_ + 1 : (ops_ ? ops_ : 1);
    check(MPI_Isend(buf, bytes, MPI_BYTE, dst, tag, comm_, &tx_reqs_[tx_tail_ & tx_mask_]), "MPI_Isend");
    ++tx_tail_;
    if (ends_op) ++ops_;
  }
  // One MPI_Testsome over the whole pool, then retires completed slots from the head in order. True when
  // a slot is free.
  bool reap_all();
  bool accept(Rx& r, const MPI_Status& st);  // false: consumed here (a get request) or dropped
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
  std::byte* segment_;
  std::uint32_t segment_bytes_;
  std::function<bool()> peer_alive_;
  int burst_;
  bool yield_when_idle_;
  int rank_ = 0, size_ = 0;

  std::vector<Rx> rx_;
  std::vector<MPI_Request> rx_reqs_;  // one array: MPI_Testsome's shape, for mpi/poll_cost.cpp's comparison
  int rx_n_ = 0, rx_head_ = 0;

  std::vector<Slot> tx_;
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
