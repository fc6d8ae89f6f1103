// The poll model's timed loops (methods/poll/poll.hpp): every timed span holds one poll call, or a
// block of empty ones, and nothing else; the frames a poll handed up are its own return value.
//
// 1. Empty polls: spans of back-to-back polls on an endpoint that nothing is addressed to.
// 2. Polls that find k frames: the peer sends k one-way small AMs (kFloodMe); we wait, without polling,
//    (4 + k) x RTT, by then they have surely arrived (its sends are each shorter than a round trip); then
//    one poll is timed and what it handed up counted, and the rest drained outside the span. Counts are
//    interleaved, so a change of the machine's speed during the run touches every count alike. Once per
//    round, Kielmann's own path too: a request sent without a poll before it, its reply left waiting,
//    one poll timed (the one-way ask above polls once before it is sent, am::Endpoint::oneway).
// 3. Streams: the peer floods us as Bell et al.'s overlap test has it flood (section 4.3: kFloodMe, each
//    receive completed by the AM layer's own waiting loop), once with no computation between receives
//    (a flood) and once with enough to keep a queue standing (past the overlap test's knee). The polls
//    are counted in the waiting loop's predicate, which runs once after each poll: an increment and a
//    subtraction per poll, no clock read, nothing in any other method's path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "methods/messages.hpp"
#include "methods/poll/analysis.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

struct PollConfig {
  int reps = 200;           // timed polls per frame count
  int empty_blocks = 400;   // spans of empty polls
  int empty_block = 32;     // polls per span
  int stream = 10000;       // messages per stream
  double wait_rtts = 4;     // the wait before a timed poll: (wait_rtts + k) x RTT
  double backlog_factor = 2;  // the second stream's computation per message, in flood periods
};

// One stream's polls: per_count[n] polls handed up n frames (the last bin: that many or more).
struct PollStreamRun {
  double c_ns = 0;  // computation between receives (0: a flood)
  int messages = 0;
  std::vector<std::uint64_t> per_count;
  double ns_per_message = NAN;  // the stream's wall time (from the ask to the last arrival) per message
  // Per block of kStreamBlock consecutive messages: the mean time per message, and of it the computation
  // (the rest is the receive: Bell et al. 4.3's o_r once the queue stands). Medians over blocks leave out
  // the blocks a VM's interruptions hit, as the overlap test's do.
  std::vector<double> block_period_ns, block_compute_ns;
  bool ok = false;
};

struct PollRun {
  double resolution_ns = 0;  // the clock's step (Clock::resolution_ns)
  int batch = 1;
  std::string batch_source;
  std::vector<int> counts;  // frame counts asked for
  double rtt_ns = NAN;      // median of the echo round trips the wait is derived from
  double wait_ns_k1 = NAN;  // the wait before a 1-frame poll
  int empty_block = 0;
  std::vector<double> empty_ns;           // per poll, of each span of empty polls
  std::uint64_t empty_spans_found = 0;    // spans in which a poll found something: not kept
  std::vector<methods::poll_fit::Sample> samples;
  std::vector<double> reply_ns;  // one poll that handed up one waiting reply, asked by a request (Kielmann's path)
  std::uint64_t credit_excluded = 0;  // timed polls that also took in or sent a credit frame: not kept
  std::uint64_t short_polls = 0;      // timed polls that handed up fewer than min(k, batch) frames
  std::uint64_t missed_polls = 0;     // polls after the wait that found nothing: waited again, not kept
  PollStreamRun flood, backlog;
};

inline constexpr int kStreamBlock = 64;
inline constexpr int kPollAttempts = 20;  // waits before a timed poll finds nothing for good (then: lost)  // longer than any batch an NI hands up per poll (DPDK's 32)

namespace detail {

// An echo round trip (poll before send off, as a ping-pong program sends).
template <class EP>
double echo_ns(EP& ep, ClientState& st, const Clock& clock) {
  const std::uint64_t want = st.acks + 1;
  const std::uint64_t t0 = tsc::now();
  ep.request(kEcho);
  const bool ok = ep.wait_until([&] { return st.acks == want; });
  const std::uint64_t t1 = tsc::now_end();
  return ok ? clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) : NAN;
}

[[noreturn]] inline void lost(const char* what) {
  throw PeerError(std::string("--bench poll: ") + what +
                  " never arrived: the poll model needs a transport that loses no message (not --ud, no fault "
                  "injection); check the link");
}

// Polls until `quiet` polls in a row found nothing (what is in flight is taken in, outside any span).
template <class EP>
void settle(EP& ep, int quiet) {
  for (int idle = 0; idle < quiet;) idle = ep.poll() > 0 ? 0 : idle + 1;
}

// One stream from the peer, each receive completed by the AM layer's waiting loop as overlap_recv_once
// does (methods/bell/loops.hpp), with c_cycles of computation before each.
template <class EP>
PollStreamRun stream(EP& ep, ClientState& st, const Clock& clock, int messages, std::uint64_t c_cycles, int batch) {
  PollStreamRun s;
  s.c_ns = clock.ns(c_cycles);
  s.messages = messages;
  s.per_count.assign(static_cast<std::size_t>(std::max(batch, 1) + 2), 0);
  const std::size_t top = s.per_count.size() - 1;
  const BusyDelay delay(clock);
  const std::uint64_t losses = ep.loss_events();
  const std::uint64_t base = st.arrivals;
  std::uint64_t last = base;
  bool after_poll = false;
  std::uint64_t target = 0;
  // Evaluated once before the wait's first poll and once after each poll: what a poll handed up is the
  // arrivals since the last evaluation.
  auto pred = [&] {
    const std::uint64_t a = st.arrivals;
    if (after_poll) ++s.per_count[std::min<std::size_t>(a - last, top)];
    after_poll = true;
    last = a;
    return a >= target;
  };
  const std::uint64_t t0 = tsc::now();
  ep.oneway(kFloodMe, static_cast<std::uint64_t>(messages), 0, 0);
  last = st.arrivals;
  bool ok = true;
  std::uint64_t block_start = t0, computing = 0;
  for (int i = 1; i <= messages && ok; ++i) {
    computing += delay.run_measured(c_cycles);
    target = base + static_cast<std::uint64_t>(i);
    after_poll = false;
    ok = ep.wait_until(pred);
    if (i % kStreamBlock == 0) {
      const std::uint64_t now = tsc::now();
      if (i > kStreamBlock) {  // the first block holds the ask and the first message's latency
        s.block_period_ns.push_back(clock.ns(now - block_start) / kStreamBlock);
        s.block_compute_ns.push_back(clock.ns(computing) / kStreamBlock);
      }
      block_start = now;
      computing = 0;
    }
  }
  const std::uint64_t t1 = tsc::now_end();
  if (!ok || ep.loss_events() != losses) lost("a stream's messages");
  s.ns_per_message = clock.ns(static_cast<double>(t1 - t0)) / messages;
  s.ok = true;
  return s;
}

// The round trip the waits are measured in: the median of 200 echoes, after 200 untimed.
template <class EP>
double round_trip_ns(EP& ep, ClientState& st, const Clock& clock) {
  for (int i = 0; i < 200; ++i)
    if (!std::isfinite(echo_ns(ep, st, clock))) lost("an echo reply");
  std::vector<double> rtts;
  for (int i = 0; i < 200; ++i) rtts.push_back(echo_ns(ep, st, clock));
  for (double x : rtts)
    if (!std::isfinite(x)) lost("an echo reply");
  return median_of(rtts);
}

// 1. Empty polls. Nothing is addressed to us now; what may still come (a credit frame) is taken in first.
template <class EP>
void empty_polls(EP& ep, const Clock& clock, const PollConfig& cfg, const BusyDelay& delay, PollRun& r) {
  delay.run(clock.cycles(4 * r.rtt_ns));
  settle(ep, 64);
  r.empty_block = cfg.empty_block;
  for (int b = 0; b < cfg.empty_blocks; ++b) {
    int found = 0;
    const std::uint64_t t0 = tsc::now();
    for (int i = 0; i < cfg.empty_block; ++i) found += ep.poll();
    const std::uint64_t t1 = tsc::now_end();
    if (found) {
      ++r.empty_spans_found;
      settle(ep, 64);
      continue;
    }
    r.empty_ns.push_back(clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) / cfg.empty_block);
  }
}

// 2. One poll that finds k frames waiting: one sample into r.samples (none when a credit frame crossed it).
template <class EP>
void poll_k_frames(EP& ep, ClientState& st, const Clock& clock, const PollConfig& cfg, const BusyDelay& delay, int k,
                   std::uint64_t losses, PollRun& r) {
  const std::uint64_t base = st.arrivals;
  const am::Counters before = ep.counters();
  ep.oneway(kFloodMe, static_cast<std::uint64_t>(k), 0, 0);
  // A poll that finds nothing after the wait met a peer that had not sent yet (descheduled: on a
  // shared machine a process may wait milliseconds for a core): it is no sample; wait again.
  std::uint64_t t0 = 0, t1 = 0;
  int n = 0;
  for (int attempt = 0; attempt < kPollAttempts && n == 0; ++attempt) {
    if (attempt) ++r.missed_polls;
    delay.run(clock.cycles((cfg.wait_rtts + k) * r.rtt_ns));
    t0 = tsc::now();
    n = ep.poll();
    t1 = tsc::now_end();
  }
  if (!ep.wait_until([&] { return st.arrivals >= base + static_cast<std::uint64_t>(k); }) || ep.loss_events() != losses)
    lost("the one-way messages asked for");
  const am::Counters& after = ep.counters();
  // A credit frame taken in (the peer returning ours) or sent from inside the poll (the peer asked
  // for its own back) is no frame of the k, or puts a send into the span.
  if (after.credit_frames != before.credit_frames || after.credit_frames_sent != before.credit_frames_sent) {
    ++r.credit_excluded;
    return;
  }
  if (n == 0) return;  // nothing after kPollAttempts waits: the drain above took them in
  if (n < std::min(k, r.batch)) ++r.short_polls;
  r.samples.push_back({k, n, clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles())});
}

// Kielmann's own path: a request (no poll before it), its reply waits, one poll times its receive. A
// one-way ask polls once before it is sent (am::Endpoint::oneway), so the k-frame polls follow a poll of
// the slot the first frame lands in; this one does not. One sample into r.reply_ns.
template <class EP>
void poll_one_reply(EP& ep, ClientState& st, const Clock& clock, const PollConfig& cfg, const BusyDelay& delay,
                    std::uint64_t losses, PollRun& r) {
  const std::uint64_t want = st.acks + 1;
  const am::Counters before = ep.counters();
  ask_for(ep, 0);
  std::uint64_t t0 = 0, t1 = 0;
  int n = 0;
  for (int attempt = 0; attempt < kPollAttempts && n == 0; ++attempt) {
    delay.run(clock.cycles((cfg.wait_rtts + 1) * r.rtt_ns));
    t0 = tsc::now();
    n = ep.poll();
    t1 = tsc::now_end();
  }
  if (!ep.wait_until([&] { return st.acks == want; }) || ep.loss_events() != losses) lost("a reply");
  const am::Counters& after = ep.counters();
  if (n == 1 && after.credit_frames == before.credit_frames && after.credit_frames_sent == before.credit_frames_sent)
    r.reply_ns.push_back(clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()));
}

}  // namespace detail

template <class EP>
PollRun poll_model(EP& ep, ClientState& st, const Clock& clock, const PollConfig& cfg,
                   const std::function<void(const std::string&)>& progress) {
  PollRun r;
  r.resolution_ns = clock.resolution_ns();
  r.batch = methods::poll_fit::receive_batch(ep.transport().describe(), r.batch_source);
  // The peer's k one-way messages spend its credits toward us: ask no more than it may have in flight.
  r.counts = methods::poll_fit::frame_counts(r.batch, std::max(1, ep.credit_limit() - 2));
  const PollBeforeSend<EP> no_poll(ep, false);
  const BusyDelay delay(clock);

  progress("poll: round trips");
  r.rtt_ns = detail::round_trip_ns(ep, st, clock);
  throw_if_interrupted();

  progress("poll: empty polls");
  detail::empty_polls(ep, clock, cfg, delay, r);
  throw_if_interrupted();

  // 2. One poll that finds k frames waiting, the counts in turn; Kielmann's reply path once per round.
  progress("poll: polls that find 1.." + std::to_string(r.counts.back()) + " frames");
  r.wait_ns_k1 = (cfg.wait_rtts + 1) * r.rtt_ns;
  r.samples.reserve(static_cast<std::size_t>(cfg.reps) * r.counts.size());
  const std::uint64_t losses = ep.loss_events();
  for (int rep = 0; rep < cfg.reps; ++rep) {
    for (std::size_t j = 0; j < r.counts.size(); ++j)
      detail::poll_k_frames(ep, st, clock, cfg, delay, r.counts[(j + static_cast<std::size_t>(rep)) % r.counts.size()],
                            losses, r);
    detail::poll_one_reply(ep, st, clock, cfg, delay, losses, r);
    throw_if_interrupted();
  }

  // 3. The streams: a flood, then one whose receiver computes backlog_factor flood periods per message.
  progress("poll: a flood of " + std::to_string(cfg.stream) + " messages");
  detail::settle(ep, 64);
  r.flood = detail::stream(ep, st, clock, cfg.stream, 0, r.batch);
  throw_if_interrupted();
  progress("poll: a stream that keeps a queue standing");
  detail::settle(ep, 64);
  r.backlog = detail::stream(ep, st, clock, cfg.stream, clock.cycles(cfg.backlog_factor * r.flood.ns_per_message),
                             r.batch);
  return r;
}

}  // namespace logpb::methods
