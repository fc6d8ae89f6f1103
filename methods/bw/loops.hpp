// One-way bandwidth and message rate, as perftest's ib_send_bw reports them: for each size n the sender
// streams `iterations` one-way messages of n bytes (n = 0: the 64-byte frame alone) as fast as the
// receiver's credits allow, the receiver counts them (its kQuiet handler), and one request sent after the
// last message is answered once every message before it has been handled (the NI keeps order).
//
// What is timed: from just before the first message is posted to the moment the sender sees the reply
// to that closing request, i.e. the receiver's confirmation that all `iterations` messages were handled.
// perftest times from the first post to the last local completion (the send CQE); ours also holds the
// closing request's round trip, which a stream long against one round trip makes negligible, and it never
// counts a message the receiver has not handled.
//
// The peak is perftest's in spirit: it takes the least time per message over any span of the stream from
// a post to a completion (perftest_parameters.c, print_report_bw). We have no per-message completions:
// the receiver's credit frames (am.hpp, log_credits: one per about credits/2 messages handled) mark when
// a count of messages had been handled, so the peak is the highest rate between two credit frames at
// least kPeakWindows credit windows apart, or the average when that is higher (the whole stream is a span
// too). Shorter spans measure something else: a receiver that was interrupted while the sender ran ahead
// drains up to one window of queued messages at once (seen over shm on a loaded VM: a one-window "peak" of
// 165 GB/s at 64 KiB); over eight windows that drain adds at most an eighth. Nothing but the posts is in
// the timed loop.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/errors.hpp"
#include "methods/messages.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

inline constexpr int kPeakWindows = 8;  // the shortest span of the peak, in credit windows (see above)

struct BwConfig {
  std::vector<std::uint32_t> sizes;
  int iterations = 5000;  // messages per size (perftest's -n; its bandwidth tests default to 5000)
  int warmup = 1000;      // messages streamed untimed before each size
};

struct BwSize {
  std::uint32_t bytes = 0;
  int iterations = 0;
  double seconds = NAN;           // first post .. the receiver's confirmation; NaN when a message was lost
  double peak_bytes_per_s = NAN;  // see the header
  double peak_messages_per_s = NAN;
  int credit_frames = 0;  // credit frames seen during the stream (the peak's resolution)
  bool lost = false;
  double bytes_per_s() const {
    return std::isfinite(seconds) && seconds > 0 ? bytes * double(iterations) / seconds : NAN;
  }
  double messages_per_s() const { return std::isfinite(seconds) && seconds > 0 ? iterations / seconds : NAN; }
};

namespace detail {

// The highest rate (messages per second) between two credit frames at least `window` messages apart.
template <class Log>
double peak_rate(const Log& log, const Clock& clock, std::uint64_t window) {
  double best = NAN;
  std::size_t j = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (j < i) j = i;
    while (j < log.size() && log[j].returned - log[i].returned < window) ++j;
    if (j >= log.size()) break;
    const double dt = clock.ns(static_cast<double>(log[j].tsc - log[i].tsc));
    const double r = static_cast<double>(log[j].returned - log[i].returned) / (dt * 1e-9);
    if (dt > 0 && !(r <= best)) best = r;
  }
  return best;
}

// One stream of `count` messages of n bytes and its closing confirmation; returns the cycles it took
// (0 when a message was lost).
template <class EP>
std::uint64_t stream(EP& ep, ClientState& st, std::uint32_t n, int count) {
  const std::uint64_t losses = ep.loss_events();
  const std::uint64_t t0 = tsc::now();
  {
    SendBatch<EP> batch(ep);
    for (int i = 0; i < count; ++i) send_oneway(ep, n, static_cast<std::uint64_t>(i));
  }
  const bool ok = final_reply(ep, st);
  const std::uint64_t t1 = tsc::now_end();
  return ok && ep.loss_events() == losses ? t1 - t0 : 0;
}

}  // namespace detail

template <class EP>
std::vector<BwSize> bw(EP& ep, ClientState& st, const Clock& clock, const BwConfig& cfg,
                       const std::function<void(const std::string&)>& progress,
                       const std::function<void(double)>& done) {
  // The share of the work each size is, for the progress display: its bytes plus a fixed cost per message.
  double total = 0, so_far = 0;
  for (auto n : cfg.sizes) total += (n + 4096.0) * cfg.iterations;
  std::vector<BwSize> out;
  for (std::uint32_t n : cfg.sizes) {
    throw_if_interrupted();
    progress("bw " + std::to_string(n) + " B");
    BwSize b;
    b.bytes = n;
    b.iterations = cfg.iterations;
    if (cfg.warmup > 0) detail::stream(ep, st, n, cfg.warmup);
    ep.log_credits(true);
    const std::uint64_t cycles = detail::stream(ep, st, n, cfg.iterations);
    ep.log_credits(false);
    if (cycles == 0) {
      b.lost = true;
    } else {
      b.seconds = clock.ns(static_cast<double>(cycles) - clock.timer_cost_cycles()) * 1e-9;
      const auto& log = ep.credit_log();
      b.credit_frames = static_cast<int>(log.size());
      const double peak = detail::peak_rate(log, clock, static_cast<std::uint64_t>(kPeakWindows * ep.credit_limit()));
      const double avg = b.messages_per_s();
      b.peak_messages_per_s = std::isfinite(peak) && peak > avg ? peak : avg;
      b.peak_bytes_per_s = b.peak_messages_per_s * n;
    }
    out.push_back(b);
    so_far += (n + 4096.0) * cfg.iterations;
    done(so_far / total);
  }
  return out;
}

}  // namespace logpb::methods
