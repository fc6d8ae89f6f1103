// The methods of Bell, Bonachea, Cote, Duell, Hargrove, Husbands, Iancu, Welcome, Yelick (section 4):
//  - EEL ping-pong: round trip of the minimum message (8 bytes here: a bulk store of 8 bytes);
//  - flood: messages of n bytes issued with queue depth q (issue q, wait until q/2 have been
//    acknowledged, refill q/2; the final reply proves delivery): the time per message is g(n); over
//    sizes it gives g (small messages) and G (per byte, large messages);
//  - CPU overlap: the part of a send (and of a receive) that computation cannot hide: o_s(n), o_r(n).
// Each figure is the minimum over `runs` runs of `messages` messages, as the paper reports it, with the
// median beside it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../stats.hpp"
#include "messages.hpp"
#include "pingpong.hpp"

namespace logpb::methods {

struct BellConfig {
  std::vector<std::uint32_t> sizes;  // bytes; 8 B .. 128 KiB by default
  int queue_depth = 8;
  int messages = 10000;  // per run
  int runs = 10;
};

struct RunsFigure {
  double min = NAN, median = NAN, ci95 = NAN;  // ci95: Student-t half-width over the runs' values
  std::vector<double> runs;
};
inline RunsFigure runs_figure(std::vector<double> v) {
  RunsFigure f;
  f.runs = v;
  std::vector<double> ok;
  for (double x : v)
    if (x == x) ok.push_back(x);
  if (ok.empty()) return f;
  const Summary s = summarize(ok);
  f.min = s.min;
  f.median = s.median;
  f.ci95 = s.ci95_mean;
  return f;
}

// One flood of `messages` n-byte messages at queue depth q; ns per message, NaN if one was lost.
template <class EP>
double flood_once(EP& ep, ClientState& st, const Clock& clock, std::uint32_t n, int q, int messages) {
  const int saved = ep.window();
  ep.set_window(std::max(saved, q));
  const std::uint64_t base = st.acks, losses = ep.loss_events();
  const int half = std::max(1, q / 2);
  const std::uint64_t t0 = tsc::now();
  int issued = 0;
  for (; issued < std::min(q, messages); ++issued) send_message(ep, n, static_cast<std::uint64_t>(issued));
  bool ok = true;
  while (issued < messages && ok) {
    const std::uint64_t need = static_cast<std::uint64_t>(issued - (q - half));
    ok = ep.wait_until([&] { return st.acks - base >= need; });
    for (int k = 0; k < half && issued < messages; ++k, ++issued) send_message(ep, n, static_cast<std::uint64_t>(issued));
  }
  ok = ok && ep.wait_until([&] { return st.acks - base == static_cast<std::uint64_t>(messages); });
  const std::uint64_t t1 = tsc::now_end();
  if (!ok) ep.wait_all();
  ep.set_window(saved);
  if (!ok || ep.loss_events() != losses) return NAN;
  return clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()) / messages;
}

struct BellSize {
  std::uint32_t bytes = 0;
  RunsFigure gap;          // flood: time per message
  RunsFigure rtt;          // ping-pong (EEL for the smallest size)
  RunsFigure o_s, o_r;     // CPU overlap test
};

template <class EP>
std::vector<BellSize> bell_flood(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg,
                                 const std::function<void(const std::string&)>& progress) {
  std::vector<BellSize> out;
  for (std::uint32_t n : cfg.sizes) {
    progress("flood " + std::to_string(n) + " B");
    BellSize b;
    b.bytes = n;
    std::vector<double> g, r;
    flood_once(ep, st, clock, n, cfg.queue_depth, std::min(cfg.messages, 200));  // warm up
    for (int k = 0; k < cfg.runs; ++k) {
      throw_if_interrupted();
      g.push_back(flood_once(ep, st, clock, n, cfg.queue_depth, cfg.messages));
      std::vector<double> rt;
      for (int i = 0; i < std::max(10, cfg.messages / 100); ++i) rt.push_back(round_trip(ep, st, clock, n).total_ns);
      r.push_back(summarize(rt).median);
    }
    b.gap = runs_figure(g);
    b.rtt = runs_figure(r);
    out.push_back(b);
  }
  return out;
}

// CPU overlap: per message, the time inside the send call, with enough computation after it that the
// transfer and its acknowledgement complete off the clock; and the time to receive an n-byte message
// that has already arrived while the CPU computed.
template <class EP>
std::vector<BellSize> bell_overlap(EP& ep, ClientState& st, const Clock& clock, const BellConfig& cfg,
                                   const std::function<void(const std::string&)>& progress) {
  const BusyDelay delay(clock);
  std::vector<BellSize> out;
  const int per_run = std::max(20, cfg.messages / 100);
  for (std::uint32_t n : cfg.sizes) {
    progress("overlap " + std::to_string(n) + " B");
    BellSize b;
    b.bytes = n;
    std::vector<double> rt;
    for (int i = 0; i < 50; ++i) rt.push_back(round_trip(ep, st, clock, n).total_ns);
    const double rtt = summarize(rt).median;
    const std::uint64_t hide = clock.cycles(2 * rtt + 1000);  // computation longer than the transfer
    std::vector<double> os_runs, or_runs;
    for (int k = 0; k < cfg.runs; ++k) {
      throw_if_interrupted();
      std::vector<double> os, orr;
      for (int i = 0; i < per_run; ++i) {
        const std::uint64_t want = st.acks + 1;
        const std::uint64_t t0 = tsc::now();
        send_message(ep, n);
        const std::uint64_t t1 = tsc::now_end();
        delay.run(hide);
        if (ep.wait_until([&] { return st.acks == want; }))
          os.push_back(clock.ns(static_cast<double>(t1 - t0) - clock.timer_cost_cycles()));
        const double r = receive_overhead(ep, st, clock, n, hide);
        if (r == r) orr.push_back(r);
      }
      os_runs.push_back(summarize(os).median);
      or_runs.push_back(summarize(orr).median);
    }
    b.o_s = runs_figure(os_runs);
    b.o_r = runs_figure(or_runs);
    b.rtt = runs_figure({rtt});
    out.push_back(b);
  }
  return out;
}

}  // namespace logpb::methods
