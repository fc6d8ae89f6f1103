// Messages of a given size, as the methods of Bell, Kielmann and Doerfler use them: size 0 is a small
// AM (the 64-byte frame alone), size n > 0 a bulk store of n bytes whose handler replies at once. Data
// the peer sends back (kSendBack) lands in the upper half of our segment; stores go to the lower half
// of the peer's, in rotating slots so back-to-back messages do not overwrite one another in flight.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "common/transport.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

// Sets whether the AM layer polls once before each request (am::Endpoint::poll_before_send) for a scope,
// and restores the endpoint's previous setting after it.
template <class EP>
struct PollBeforeSend {
  EP& ep;
  bool was;
  PollBeforeSend(EP& e, bool on) : ep(e), was(e.polls_before_send()) { ep.poll_before_send(on); }
  ~PollBeforeSend() { ep.poll_before_send(was); }
  PollBeforeSend(const PollBeforeSend&) = delete;
  PollBeforeSend& operator=(const PollBeforeSend&) = delete;
};

template <class EP>
std::uint32_t max_message(EP& ep) {
  return static_cast<std::uint32_t>(ep.transport().segment().size() / 2);
}

// Where the slot-th message of n bytes lands in the lower half of the peer's segment: rotating slots, so
// back-to-back messages do not overwrite one another in flight.
template <class EP>
std::uint32_t slot_offset(EP& ep, std::uint32_t n, std::uint64_t slot) {
  const std::uint32_t slots = std::max<std::uint32_t>(1, max_message(ep) / n);
  return static_cast<std::uint32_t>((slot % slots) * n);
}

// Issue one message of n bytes (slot picks where it lands). Returns without waiting for the reply.
template <class EP>
void send_message(EP& ep, std::uint32_t n, std::uint64_t slot = 0) {
  if (n == 0) return ep.request(kEcho);
  if constexpr (BulkTransport<std::remove_reference_t<decltype(ep.transport())>>) {
    ep.store(kSink, ep.transport().segment().data(), n, slot_offset(ep, n, slot));
  } else {
    throw UsageError("this transport has no bulk transfers: only size 0 is possible");
  }
}

// The methods that wait for one send's local completion (Bell et al.'s flood and overlap, Doerfler &
// Brightwell's send side) need the transport to report it, for that send: an NI that reports only every
// k-th send whatever the caller tracks would hold such a wait until k - 1 more sends nobody makes.
template <class EP>
void require_local_completion(const EP& ep) {
  if constexpr (!EP::has_local_completion) {
    throw UsageError(
        "this transport cannot report local completion of a send, which Bell et al.'s flood and "
        "Doerfler & Brightwell's loop wait for");
  } else if (const std::uint64_t k = ep.completion_stride(); k > 1) {
    throw UsageError(
        "this NI reports local completion only every " + std::to_string(k) +
        "th send, even for a send the caller waits for (a PMD's tx_rs_thresh; emulated: rs=" + std::to_string(k) +
        "), so a wait for one send's completion cannot end: Bell et al.'s flood "
        "and overlap and Doerfler & Brightwell's send side are not measurable on it (signal=k, which "
        "reports a tracked send, is)");
  }
}

// While alive, the sends of a stream of one-way messages may be batched by the transport (TxBatch: DPDK
// with --tx-burst > 1); at its end whatever is queued goes out. Nothing else is ever batched: a batched
// send is not paid in the call that makes it, so no method that times a send call runs under one.
template <class EP>
class SendBatch {
 public:
  explicit SendBatch(EP& ep) : ep_(ep) {
    if constexpr (TxBatch<Net>) ep_.transport().batch_sends(true);
  }
  // Draining may throw (a peer gone); while an exception already unwinds the stream, batching only stops
  // (what is queued goes out or is freed with the transport), so the first error is the one reported.
  ~SendBatch() noexcept(false) {
    if constexpr (TxBatch<Net>) ep_.transport().batch_sends(false, std::uncaught_exceptions() == unwinding_);
  }
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

 private:
  using Net = std::remove_reference_t<decltype(std::declval<EP&>().transport())>;
  EP& ep_;
  int unwinding_ = std::uncaught_exceptions();
};

// One one-way message of n bytes (Bell et al.'s flood, Kielmann's saturation, Doerfler's posted send):
// no reply; credits keep it from overrunning the peer. With track, returns the operation number whose
// local completion wait_local() waits for.
template <class EP>
std::uint64_t send_oneway(EP& ep, std::uint32_t n, std::uint64_t slot = 0, bool track = false) {
  if (n == 0) return ep.oneway(kQuiet, 0, 0, 0, 0, track);
  if constexpr (BulkTransport<std::remove_reference_t<decltype(ep.transport())>>) {
    return ep.oneway_store(kQuiet, ep.transport().segment().data(), n, slot_offset(ep, n, slot), 0, 0, track);
  } else {
    throw UsageError("this transport has no bulk transfers: only size 0 is possible");
  }
}

// A stream of one-way requests as the credit frames the receiver sent back show it (see
// Endpoint::log_credits): per interval between consecutive credit frames, its time (ns) and the credits it
// returned, from the `first`-th interval on.
struct CreditInterval {
  double ns = 0, credits = 0;
};
template <class EP>
std::vector<CreditInterval> credit_intervals(const EP& ep, const Clock& clock, std::size_t first = 0) {
  const auto& log = ep.credit_log();
  std::vector<CreditInterval> v;
  for (std::size_t i = first + 1; i < log.size(); ++i)
    if (const std::uint64_t dn = log[i].returned - log[i - 1].returned; dn > 0)
      v.push_back({clock.ns(log[i].tsc - log[i - 1].tsc), static_cast<double>(dn)});
  return v;
}

// The steady rate of the stream: the median over the intervals of time / credits. This is the rate at which
// the bottleneck stage passed messages: the sender's o_s, the NI's g or the receiver's o_r, whichever is
// slowest; a start-up burst of the sender (the first credits' worth) and the interruptions of either host
// stay out of the median. NaN with fewer than three intervals.
template <class EP>
double credit_rate_ns(const EP& ep, const Clock& clock) {
  std::vector<double> per;
  for (const auto& c : credit_intervals(ep, clock)) per.push_back(c.ns / c.credits);
  return per.size() >= 3 ? median_of(per) : std::nan("");
}

// The same stream's mean rate with the interruptions of either host left out: the total time over the total
// credits of the intervals whose time per message is at most kInterruptedShare x the median's. An
// interruption (a tick or a VM exit, 35-50 us on this VM) lengthens the interval it falls in several times
// over; an NI's own jitter spreads the sum of C/2 messages far less, and stays in, so this is the NI's mean
// rate where the median would read a jittery NI's rate low (the cloud emulation, g 2400 with an exponential
// share: median 2210 against a total / N of 2418). The first interval, the sender's start-up, is left out.
inline constexpr double kInterruptedShare = 1.5;
template <class EP>
double credit_pace_ns(const EP& ep, const Clock& clock) {
  const std::vector<CreditInterval> v = credit_intervals(ep, clock, 1);
  if (v.size() < 3) return std::nan("");
  std::vector<double> per;
  for (const auto& c : v) per.push_back(c.ns / c.credits);
  const double cut = kInterruptedShare * median_of(per);
  double ns = 0, n = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (per[i] <= cut) {
      ns += v[i].ns;
      n += v[i].credits;
    }
  return n > 0 ? ns / n : std::nan("");
}

// The final reply of a flood or a saturation (Bell 4.2, Kielmann 3): one request whose reply, on an NI
// that keeps order, proves every message sent before it has arrived and been handled.
template <class EP>
bool final_reply(EP& ep, ClientState& st) {
  const std::uint64_t want = st.acks + 1;
  ep.request(kEcho);
  return ep.wait_until([&] { return st.acks == want; });
}

// Ask the peer for n bytes (0: an empty reply).
template <class EP>
void ask_for(EP& ep, std::uint32_t n) {
  ep.request(kSendBack, n, max_message(ep));
}

struct Timed {
  double send_ns = NAN;   // CPU time inside the send call
  double total_ns = NAN;  // until the reply handler ran
};

// One round trip: n bytes out, 0 back. NaN when a message was lost.
template <class EP>
Timed round_trip(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n) {
  const std::uint64_t want = st.acks + 1;
  const std::uint64_t t0 = tsc::now();
  send_message(ep, n);
  const std::uint64_t t1 = tsc::now_end();
  const bool ok = ep.wait_until([&] { return st.acks == want; });
  const std::uint64_t t2 = tsc::now_end();
  Timed r;
  if (!ok) return r;
  r.send_ns = clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles());
  r.total_ns = clock.ns(static_cast<double>(t2 - t0) - clock.timer_cost_cycles());
  return r;
}

// The receive overhead of an n-byte message that is already there (Kielmann et al. section 3): ask for
// it, compute for wait_ns (> its round trip) without polling, then time only the receive.
template <class EP>
double receive_overhead(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, std::uint64_t wait_cycles) {
  const BusyDelay delay(clock);
  const std::uint64_t want = st.acks + 1;
  ask_for(ep, n);
  delay.run(wait_cycles);
  const std::uint64_t t0 = tsc::now();
  const bool ok = ep.wait_until([&] { return st.acks == want; });
  const std::uint64_t t1 = tsc::now_end();
  return ok ? clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) : NAN;
}

}  // namespace logpb::methods
