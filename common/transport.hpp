// What the AM layer needs from a network interface. A concept, not a base class: the endpoint is a
// template over its transport, so nothing on a timed path goes through a virtual call.
#pragma once

#include <sched.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"

namespace logpb {

// The shape of the callback a transport's poll() hands each received frame to (bytes, length).
struct RxSink {
  void operator()(const void*, std::size_t) const {}
};

// Peers: a transport connects this rank to the other ranks of a job. Every frame names its destination
// (f.dst) and source (f.src) rank; a transport routes each send on f.dst (a pair transport has one
// peer and may ignore it), and poll() serves every peer. A rank's frames to one peer arrive in order.
template <class T>
concept Transport = requires(T& t, const T& ct, const am::Frame& f, RxSink sink) {
  // Queue one small AM for rank f.dst. False when the NI cannot take it now (ring/queue full): the caller
  // polls and retries. The transport fills f.seq.
  { t.try_send(f) } -> std::same_as<bool>;
  // Deliver at most a few received frames to sink; returns how many were delivered or dropped.
  { t.poll(sink) } -> std::same_as<int>;
  // Cheap enough to call every millisecond from a stalled wait loop; false once any peer is gone.
  { t.peer_alive() } -> std::same_as<bool>;
  // This side's registered segment: where the peer's bulk stores land.
  { t.segment() } -> std::same_as<std::span<std::byte>>;
  // Everything about the NI that changes a figure (device, queue sizes, emulation), for meta.
  { ct.describe() } -> std::same_as<nlohmann::json>;
};

// Local completion (Bell et al. section 4.2, Doerfler & Brightwell section 2): the NI has taken a send's
// data and its buffer may be reused; it says nothing of the message having arrived. Send operations (a
// small AM, a store, however many NI work requests it takes) are numbered from 1 in the order posted.
// track_next() asks that the next operation's completion be noticed (verbs signals its last work
// request, DPDK holds a reference on its last mbuf); tx_completed() polls the NI and returns a number
// up to which every operation is complete. A transport that cannot tell says so in describe().
// A transport may also answer completion_stride(): k > 1 when it reports completion only every k-th send,
// a tracked one too (a PMD's tx_rs_thresh with no way to ask for the rest), so a wait for one send's
// completion can end only once k - 1 more were sent. Without it, a tracked send is always reported.
template <class T>
concept LocalCompletion = requires(T& t) {
  { t.tx_posted() } -> std::same_as<std::uint64_t>;
  { t.track_next() } -> std::same_as<void>;
  { t.tx_completed() } -> std::same_as<std::uint64_t>;
};

// An NI that can sleep until something arrives (verbs --event: a completion channel). The AM layer calls
// idle_wait() after a poll found nothing, only inside its waiting loops (never from request()'s single
// poll), so a sleeping endpoint costs one wakeup per message, not a timer tick. It must return within
// a few milliseconds even if nothing comes, so the watchdog keeps running. It returns whether it gave
// the core away (slept or yielded): a transport that yields only when its job has more ranks than cores
// answers false otherwise, and the endpoint's waiting loop stays a pure busy poll.
template <class T>
concept IdleWait = requires(T& t) {
  { t.idle_wait() } -> std::same_as<bool>;
};

// idle_wait() of a busy-polled NI: when the job has more ranks than cores, give the core away
// (sched_yield) so every rank progresses; otherwise keep it (a pure busy poll) and say so.
inline bool yield_if_oversubscribed(bool oversubscribed) noexcept {
  if (!oversubscribed) return false;
  sched_yield();
  return true;
}

// An NI polled by spinning on memory another core writes (shm): relax() is the spin-wait hint the AM
// layer's waiting loops give after an empty poll (x86 PAUSE). Without it, the load that finally sees the
// other core's store is preceded by many speculative ones, and the core pays a memory-order machine clear
// on the way out of the loop: on the AMD EPYC VM here a bare cache-line ping-pong took 30-60 ns longer per
// round trip without PAUSE. Never on a path that is not a wait (request()'s single poll has none).
template <class T>
concept SpinRelax = requires(T& t) {
  { t.relax() } -> std::same_as<void>;
};

// An NI that can hand a stream's sends over in bursts (DPDK --tx-burst): while batch_sends(true), a
// send may wait in the transport until a burst is full; flush_sends() hands over what waits (true when
// nothing is left). Only the streams of one-way messages turn it on (methods/messages.hpp, SendBatch),
// since a batched send is not paid in the call that makes it. The AM layer flushes before it waits and
// after a credit frame, so nothing waits on a batch while its sender polls.
template <class T>
concept TxBatch = requires(T& t, bool on) {
  { t.batch_sends(on, on) } -> std::same_as<void>;  // (on, drain): off with drain hands over what waits
  { t.flush_sends() } -> std::same_as<bool>;
};

// How many one-way requests (am.hpp) the receiving side's queues hold beside the request window and the
// replies: the most credits the AM layer may hand out over this NI.
template <class T>
concept CreditLimited = requires(const T& t, int window) {
  { t.max_credits(window) } -> std::convertible_to<int>;
};

}  // namespace logpb

namespace logpb {

// Bulk transfers (Culler et al. section 4): store puts `len` bytes from `src` into rank f.dst's segment at
// `remote_off` and then delivers `f` there (with f.bulk_len/bulk_off set by the caller), so the peer's
// handler finds the data in place. get copies `len` bytes of rank f.src's segment at `remote_off` into
// this side's segment at `local_off` and then delivers `f` (a reply frame from f.src to us) locally
// through poll().
// Both return false when the NI cannot take the operation now; the caller polls and retries.
template <class T>
concept BulkTransport = Transport<T> && requires(T& t, const am::Frame& f, const void* src, std::uint32_t n) {
  { t.try_store(f, src, n, n) } -> std::same_as<bool>;
  { t.try_get(f, n, n, n) } -> std::same_as<bool>;
  { t.max_bulk() } -> std::convertible_to<std::size_t>;
};

}  // namespace logpb
