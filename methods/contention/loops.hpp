// The timed loops of the contention methods: Culler et al. section 3.5 (K-to-1, 1-to-K) and the all-to-all
// remap of Moritz & Frank (LoGPC) section 5.1. Each requester issues a stream of requests as fast as its
// window allows and stamps the moment each request() returns; its gap is the steady-state time per
// message (the signature's Delta = 0 steady state, section 3.1), read from the middle of the stream.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/am.hpp"
#include "common/clock.hpp"
#include "common/stats.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

enum ContentionHandler : std::uint16_t {
  kStream = 20,     // request (a0: 1 once the sender's timed part is over): reply kStreamAck
  kStreamAck = 21,  // reply (a0: 1 once every sender of the round has finished its timed part)
  kRemap = 22,      // all-to-all: request (synchronous) or one-way (asynchronous), counted; a request is answered
  kRemapAck = 23,
  kStreamQuit = 24,  // request without reply: the sender is done with this round
};

// What one rank's handlers keep: the server side (who has finished) and the client side (acks, the flag).
struct ContentionState {
  int senders = 0;         // requesters in this round (server)
  std::vector<char> done;  // per source rank: its timed part is over
  int done_count = 0, quits = 0;
  std::uint64_t acks = 0, all_done = 0;  // client
  std::uint64_t remaps_in = 0;           // all-to-all: messages received
  void begin_round(int n_senders) {      // before each round's barrier
    senders = n_senders;
    done_count = quits = 0;
    std::fill(done.begin(), done.end(), 0);
    remaps_in = 0;
  }
};

template <class EP>
void install_contention(EP& ep, ContentionState& st) {
  ep.user = &st;
  ep.on(kStream, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<ContentionState*>(e.user);
    if (f.args[0] && !s->done[f.src]) {
      s->done[f.src] = 1;
      ++s->done_count;
    }
    e.reply(f, kStreamAck, s->done_count >= s->senders ? 1 : 0);
  });
  ep.on(kStreamAck, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<ContentionState*>(e.user);
    ++s->acks;
    if (f.args[0]) s->all_done = 1;
  });
  ep.on(kStreamQuit, [](EP& e, const am::Frame&) { ++static_cast<ContentionState*>(e.user)->quits; });
  ep.on(kRemap, [](EP& e, const am::Frame& f) {
    ++static_cast<ContentionState*>(e.user)->remaps_in;
    if (f.kind == am::Kind::request) e.reply(f, kRemapAck);
  });
  ep.on(kRemapAck, [](EP& e, const am::Frame&) { ++static_cast<ContentionState*>(e.user)->acks; });
}

// One requester's stream: stamps (TSC) of the moments its requests returned.
struct Stream {
  std::vector<std::uint64_t> t;
  int skip = 0;  // leading messages left out: the window filling, before the steady state
};

// The steady-state gap of a stream, ns per message: the mean over the timed part (the throughput, which
// is what g is), with a 95% interval from batch means (consecutive messages are correlated; batches of
// many are nearly not).
struct Gap {
  double value_ns = NAN, ci95_ns = NAN;
  int messages = 0, batches = 0;
};
inline Gap stream_gap(const Stream& s, const Clock& clock) {
  Gap g;
  const int n = static_cast<int>(s.t.size());
  const int first = std::min(s.skip, n - 1), m = n - 1 - first;
  if (m < 2) return g;
  g.messages = m;
  g.value_ns = clock.ns(s.t[static_cast<std::size_t>(n - 1)] - s.t[static_cast<std::size_t>(first)]) / m;
  const int b = std::min(10, m / 2);
  std::vector<double> means;
  for (int k = 0; k < b; ++k) {
    const int lo = first + k * m / b, hi = first + (k + 1) * m / b;
    means.push_back(clock.ns(s.t[static_cast<std::size_t>(hi)] - s.t[static_cast<std::size_t>(lo)]) / (hi - lo));
  }
  const Summary sum = summarize(means);
  g.batches = b;
  g.ci95_ns = ci95_of_mean(sum.stdev, b);
  return g;
}

// Requests to targets(i) as fast as the window allows: `timed` of them stamped, then more (unstamped,
// flagged) until the replier says every sender of the round is through, so the last sender's timed part
// still meets all the others' load. With `wait_all_done` false (one sender: 1-to-K) it stops at `timed`.
template <class EP, class Target>
Stream request_stream(EP& ep, ContentionState& st, int timed, int skip, bool wait_all_done, Target&& target) {
  Stream s;
  s.skip = skip;
  s.t.reserve(static_cast<std::size_t>(timed));
  st.all_done = 0;
  for (int i = 0; i < timed; ++i) {
    ep.request(target(i), kStream, 0);
    s.t.push_back(tsc::now());
  }
  for (int i = timed; wait_all_done && !st.all_done; ++i) ep.request(target(i), kStream, 1);
  ep.wait_all();
  return s;
}

// The all-to-all remap (LoGPC 5.1): rank p's i-th message goes to (p + 1 + i mod (P-1)) mod P, so every
// rank sends to and receives from each other rank alike. Synchronous: a request, and its reply awaited
// before the next (the thread blocks; requests that arrive meanwhile are served). Asynchronous: one-way
// messages, never waiting for a reply. Returns the stamps after each iteration.
template <class EP>
Stream remap(EP& ep, ContentionState& st, int iterations, int skip, bool synchronous) {
  const int P = ep.size(), p = ep.rank();
  Stream s;
  s.skip = skip;
  s.t.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    const int dst = (p + 1 + i % (P - 1)) % P;
    if (synchronous) {
      ep.request(dst, kRemap);
      ep.wait_all(dst);
    } else {
      ep.oneway(dst, kRemap);
    }
    s.t.push_back(tsc::now());
  }
  ep.wait_all();
  // Every rank receives `iterations` messages in all: serve until they are in, so no rank leaves a
  // sender waiting on it.
  ep.wait_until([&] { return st.remaps_in >= static_cast<std::uint64_t>(iterations); });
  return s;
}

}  // namespace logpb::methods
