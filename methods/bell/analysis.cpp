#include "methods/bell/analysis.hpp"

#include <cmath>
#include <string>

#include "analysis/loggp.hpp"
#include "analysis/results_json.hpp"
#include "common/disturbance.hpp"

namespace logpb::methods {

using namespace analysis;

namespace {
FloodLimits limits_of(const methods::BellSize& b) {
  FloodLimits l;
  l.queue_limited = b.queue.limited;
  l.queue_adapted = b.queue.adapted;
  l.queue_depth = b.queue.used;
  l.completion_ns = b.queue.completion_ns;
  l.credits = b.queue.credits;
  l.rtt_ns = b.rtt.min;
  l.pace_ns = b.gap_pace.min;
  return l;
}
nlohmann::json queue_json(const methods::FloodQueue& q) {
  nlohmann::json probe = nlohmann::json::array();
  for (const auto& [depth, t] : q.probe)
    probe.push_back({{"q", depth}, {"ns_per_message", std::isfinite(t) ? nlohmann::json(t) : nlohmann::json(nullptr)}});
  return {{"requested", q.requested},
          {"used", q.used},
          {"adapted", q.adapted},
          {"deepest_tried", q.deepest},
          {"still_limiting", q.limited},
          {"probe", probe},
          {"messages_per_run", q.messages},
          {"credits", q.credits},
          {"completion_ns", std::isfinite(q.completion_ns) ? nlohmann::json(q.completion_ns) : nlohmann::json(nullptr)},
          {"rule",
           "q doubled from the requested depth while the time per message fell by more than 3% (best of two "
           "floods of up to 2000 messages each); messages per run raised until the start and the final reply "
           "cost under 1% (N >= 100 RTT / time per message, at most 4x --messages)"}};
}
// What the overlap test's figures are (Bell et al. 4.3), beside their values. The receive side's computation
// sits between receives of a saturated stream: the peer floods, so while the receiver computes, frames pile
// up, and one poll may hand up several. o_r_stream is the lowest non-compute time past the knee, where a
// queue stands and batches are largest (what a flood's receiver pays), published with the frames per poll
// measured there (issue 36 item 1); o_r_knee is the paper's own reading, at the knee, with its batch.
nlohmann::json stream_notes(nlohmann::json p, bool send, std::uint32_t bytes, double frames_per_poll) {
  if (!p.is_object()) return p;
  p["definition"] =
      send ? "Bell et al. 4.3's send overhead at " + std::to_string(bytes) +
                 " B: a send posted, computation, then the wait for its local completion, less the computation"
           : "Bell et al. 4.3's receive overhead at " + std::to_string(bytes) +
                 " B, per message of a saturated one-way stream, at its lowest past the knee: a poll's fixed cost is "
                 "shared among the frames it hands up (frames_per_poll, measured there), so this is at most o_r, "
                 "one receive of a message alone";
  if (!send) p["frames_per_poll"] = finite_or_null(frames_per_poll);
  return p;
}
// Where each side's figures were read: the knee (its first risen point's c and batch, Bell et al.'s reading
// there) and the batch of the lowest point.
nlohmann::json knee_json(const methods::OverlapSide& s) {
  return {{"c_ns", finite_or_null(s.knee_c_ns)},
          {"frames_per_poll", finite_or_null(s.knee_frames_per_poll)},
          {"overhead_ns", finite_or_null(s.knee_ns)},
          {"ci95_ns", finite_or_null(s.knee_ci95)},
          {"runs_ns", s.per_run_knee},
          {"lowest_ns", finite_or_null(s.overhead)},
          {"lowest_frames_per_poll", finite_or_null(s.frames_per_poll)},
          {"rule",
           "the knee's first points: every later point lies over 5% above T(0); the grid's step (T(0)/10) "
           "that holds the knee is halved three times, and the risen points within half a step of the first "
           "are read (median)"}};
}
// Bell et al. 4.3's receive reading at the knee over the runs, with the batch measured there (the last run's).
nlohmann::json knee_param(const std::vector<std::vector<methods::BellSize>>& runs) {
  std::vector<Param> v;
  for (const auto& run : runs) {
    const auto& s = run.front().recv;
    v.push_back(std::isfinite(s.knee_ns) && s.knee_ns > 0
                    ? param_of(s.knee_ns, s.knee_ci95, "", "percentile bootstrap of the median of the per-run readings")
                    : Param::invalid(s.ok ? "no knee: no point from which every later one rose over 5% above T(0)"
                                          : (s.note.empty() ? "overlap test not run at this size" : s.note)));
  }
  const auto& last = runs.back().front();
  nlohmann::json j = over_runs(v);
  j["definition"] = "Bell et al. 4.3's receive overhead at " + std::to_string(last.bytes) +
                    " B as the paper reads it, at the knee (the first points past the largest hidden computation), "
                    "at the frames per poll measured there: a stream's per message where its queue has had least "
                    "time to stand; a poll that just misses a frame is part of it";
  j["frames_per_poll"] = finite_or_null(last.recv.knee_frames_per_poll);
  return j;
}
}  // namespace

Param overhead_param(const methods::OverlapSide& s) {
  if (!s.ok) return Param::invalid(s.note.empty() ? "overlap test not run at this size" : s.note);
  if (!(s.overhead > 0))
    return Param::invalid("the inferred overhead is not positive: the computation loop or the timer is wrong",
                          s.overhead);
  return param_of(s.overhead, s.ci95, "", s.ci_method);
}

nlohmann::json bell_record(const std::vector<methods::BellSize>& run, bool flood) {
  nlohmann::json raw = nlohmann::json::array();
  for (const auto& b : run)
    raw.push_back({{"bytes", b.bytes},
                   {"gap_runs_ns", b.gap.runs},
                   {"gap_total_over_n_runs_ns", b.gap.runs},
                   {"gap_steady_runs_ns", b.gap_steady.runs},
                   {"gap_pace_runs_ns", b.gap_pace.runs},
                   {"rtt_runs_ns", b.rtt.runs},
                   {"o_s_runs_ns", b.send.per_run_overhead},
                   {"o_r_runs_ns", b.recv.per_run_overhead},
                   {"cpu_per_message", b.cpu.per_message()}});
  return {
      {"method", flood ? "Bell et al. flood (section 4.2): one-way messages, local completion, one final reply"
                       : "Bell et al. CPU overlap (section 4.3): q = 1, overhead inferred from the hidden computation"},
      {"raw", raw}};
}

namespace {
using Runs = std::vector<std::vector<methods::BellSize>>;

// One size's figures from every run: the overheads and round trips, and for a flood its gap and, where the
// overlap test ran, the NI's gap and the stage that limits it.
struct SizeOverRuns {
  std::vector<Param> g, gni, rtt, os, orr;
  std::vector<std::string> stages;
};
SizeOverRuns size_over_runs(const Runs& runs, std::size_t i, bool flood) {
  SizeOverRuns s;
  for (const auto& run : runs) {
    const auto& b = run[i];
    const auto o_s = overhead_param(b.send);
    const auto o_r = overhead_param(b.recv);
    s.os.push_back(o_s);
    s.orr.push_back(o_r);
    s.rtt.push_back(param_of(flood ? b.rtt.min : b.rtt.median, b.rtt.ci95, "", b.rtt.ci_method));
    if (!flood) continue;
    s.g.push_back(param_of(b.gap.min, b.gap.ci95, "", b.gap.ci_method));
    if (b.overlap_run) {
      auto c = classify_flood(b.gap.min, b.gap.ci95, o_s, o_r, limits_of(b));
      if (c.ni.valid) c.ni.ci_method = b.gap.ci_method;
      s.gni.push_back(c.ni);
      s.stages.push_back(c.stage.empty() ? "unknown" : c.stage);
    }
  }
  return s;
}

// A flood's row for one size (Bell et al. 4.2): its gap three ways, the queue, the round trip, and where
// the overlap test ran, the NI's gap, the limiting stage and the overlap curves. b: the last run's.
nlohmann::json flood_size(const SizeOverRuns& s, const methods::BellSize& b) {
  nlohmann::json e = {{"bytes", b.bytes}};
  e["g"] = over_runs(s.g);
  e["g"]["median_over_bell_runs_ns"] = b.gap.median;
  e["g"]["ci_method"] = b.gap.ci_method;
  e["g"]["estimator"] =
      "Bell et al. 4.2: per run, the total time from the first send to the final reply over N "
      "messages (N large enough that the start and the final reply cost under 1%); minimum over runs";
  e["g_total_over_n"] = over_runs({param_of(b.gap.min, b.gap.ci95, "", b.gap.ci_method)});
  e["g_steady"] = over_runs({param_of(b.gap_steady.min, b.gap_steady.ci95, "", b.gap_steady.ci_method)});
  e["g_steady"]["estimator"] =
      "per run: the median over the receiver's credit frames of (time between two) / (credits "
      "they returned): the bottleneck's steady pace, start-up and interruptions left out; "
      "minimum over runs";
  e["g_pace"] = over_runs({param_of(b.gap_pace.min, b.gap_pace.ci95, "", b.gap_pace.ci_method)});
  e["g_pace"]["estimator"] =
      "per run: the total time over the credits of the receiver's credit intervals, those longer per message "
      "than 1.5 x their median (an interruption of either host) left out: the stream's mean rate, an NI's "
      "jitter included; what the overheads are held to when the stage is named; minimum over runs";
  e["queue"] = queue_json(b.queue);
  e["segments"] = b.segments.to_json();
  e["segments"]["messages_per_clean_run"] = b.run_messages;
  e["segments"]["rule"] =
      "each flood run is a segment: one during which another task held the requester's or the replier's core "
      "for over 0.2% of it (and 2 us) is measured again, half as long (down to 150 RTT / g messages), up to 3 "
      "runs per run wanted (12 at least); the figures are the clean runs'; with fewer than half the runs clean they "
      "have no value";
  e["rtt"] = over_runs(s.rtt);
  if (s.gni.empty()) return e;
  e["g_ni"] = over_runs(s.gni);
  e["bottleneck"] = s.stages.back();
  e["o_s_completion"] = over_runs(s.os);
  e["o_r_stream"] = over_runs(s.orr);
  for (const auto* side : {&b.send, &b.recv}) {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& p : side->curve) c.push_back({p.c_ns, p.t_ns, p.o_ns, finite_or_null(p.frames_per_poll)});
    e[side == &b.send ? "overlap_send_curve" : "overlap_recv_curve"] = c;
    e[side == &b.send ? "overlap_send_knee" : "overlap_recv_knee"] = knee_json(*side);
  }
  e["overlap_segments"] = SegmentBook::merged({&b.send.segments, &b.recv.segments});
  return e;
}

// The CPU overlap test's row for one size (Bell et al. 4.3): the inferred overheads, the curves and their
// knees; a check per side that an overhead was inferred. b: the last run's.
nlohmann::json overlap_size(const SizeOverRuns& s, const methods::BellSize& b, nlohmann::json& checks) {
  nlohmann::json e = {{"bytes", b.bytes}};
  e["o_s_completion"] = over_runs(s.os);
  e["o_r_stream"] = over_runs(s.orr);
  e["rtt"] = over_runs(s.rtt);
  e["send_curve"] = nlohmann::json::array();
  for (const auto& p : b.send.curve) e["send_curve"].push_back({p.c_ns, p.t_ns, p.o_ns});
  e["recv_curve"] = nlohmann::json::array();
  for (const auto& p : b.recv.curve)
    e["recv_curve"].push_back({p.c_ns, p.t_ns, p.o_ns, finite_or_null(p.frames_per_poll)});
  e["messages_per_run"] = {
      {"send", b.send.messages},
      {"recv", b.recv.messages},
      {"rule", "--messages, or fewer (at least 400) so one run of one point takes at most about 10 ms"}};
  e["t0_send_ns"] = b.send.t0_ns;
  e["t0_recv_ns"] = b.recv.t0_ns;
  e["hidden_c_send_ns"] = b.send.hidden_c_ns;
  e["hidden_c_recv_ns"] = b.recv.hidden_c_ns;
  e["send_knee"] = knee_json(b.send);
  e["recv_knee"] = knee_json(b.recv);
  e["segments"] = SegmentBook::merged({&b.send.segments, &b.recv.segments});
  for (const auto* side : {&b.send, &b.recv}) {
    const bool ok = side->ok && side->overhead > 0;
    add_check(checks,
              std::string("overhead inferred (") + (side == &b.send ? "send" : "recv") + " " + std::to_string(b.bytes) +
                  " B)",
              ok, side->ok ? "a non-positive overhead: the computation loop or the timer is wrong" : side->note);
  }
  return e;
}

// g and G in Bell et al.'s sense (the flood's time per message and its per-byte slope), each run's fit
// combined over runs; and which stage that was, from the overlap test at the end sizes.
void flood_fits(const Runs& runs, const nlohmann::json& per, nlohmann::json& params) {
  std::vector<Param> g, G, cross, gni, Gni;
  for (const auto& run : runs) {
    std::vector<double> sizes, gaps, cis;
    for (const auto& b : run) {
      sizes.push_back(b.bytes);
      gaps.push_back(b.gap.min);
      cis.push_back(b.gap.ci95);
    }
    auto f = fit_gap(sizes, gaps, cis);
    f.g.ci_method = run.front().gap.ci_method;
    g.push_back(f.g);
    G.push_back(f.G);
    cross.push_back(f.crossover);
    const auto& lo = run.front();
    const auto& hi = run.back();
    if (lo.overlap_run) {
      auto c = classify_flood(lo.gap.min, lo.gap.ci95, overhead_param(lo.send), overhead_param(lo.recv), limits_of(lo));
      if (c.ni.valid) c.ni.ci_method = lo.gap.ci_method;
      gni.push_back(c.ni);
    }
    if (hi.overlap_run && run.size() >= 2 && f.G.valid) {
      // G is the NI's only if the overheads at the largest size stay below the flood's time there.
      const auto c =
          classify_flood(hi.gap.min, hi.gap.ci95, overhead_param(hi.send), overhead_param(hi.recv), limits_of(hi));
      if (c.stage == kStageNI) {
        Gni.push_back(f.G);
      } else {
        Gni.push_back(Param::hidden("hidden: at " + std::to_string(hi.bytes) + " B the flood runs at the " +
                                        (c.stage.empty() ? "an unknown stage" : c.stage) +
                                        ", so the slope is a per-byte overhead; the NI's G is at most it",
                                    f.G.value, f.G.ci95));
      }
    }
  }
  params["g"] = over_runs(g);
  params["g"]["method_sense"] =
      "Bell et al.: time per message of a one-way flood at the smallest size: max(g_NI, o_s, o_r)";
  params["G"] = over_runs(G);
  params["crossover_bytes"] = over_runs(cross);
  if (!gni.empty()) {
    params["g_ni"] = over_runs(gni);
    params["g"]["bottleneck"] = per.front().value("bottleneck", std::string());
  }
  if (!Gni.empty()) params["G_ni"] = over_runs(Gni);
}

// Issue 36 item 5: the host's kernel time per message of the flood at the smallest size, over every
// core of this host (system, irq and softirq, as /proc/stat samples them at the tick), beside the o's the
// timed calls see. Below its resolution (a tick per core per run, over the messages) it is a bound.
Param kernel_per_message(const methods::BellSize& smallest) {
  const auto& cpu = smallest.cpu;
  const double k = cpu.host_kernel_ns(), res = cpu.host_kernel_resolution_ns();
  const std::string what = "kernel time (system + irq + softirq) per message of the " + std::to_string(smallest.bytes) +
                           "-byte flood, over every core of this host as /proc/stat accounts it (both ranks' "
                           "cores when they share the host); the split is in the record's cpu_per_message";
  if (!std::isfinite(k)) return Param::invalid("not measured (no /proc/stat, or no flood completed)");
  if (k < res) return Param::hidden("below the kernel's accounting resolution over this stream: " + what, res);
  return param_of(k, res, what, "one USER_HZ tick per core per run, over the messages");
}

// The smallest message's round trip, its half (Bell et al. 4.1's EEL) and the steady pace of its flood,
// each over runs.
void smallest_message(const Runs& runs, nlohmann::json& params) {
  const std::uint32_t bytes = runs.back().front().bytes;
  std::vector<Param> eel, half, steady;
  for (const auto& run : runs) {
    const auto& b = run.front();
    eel.push_back(param_of(b.rtt.min, b.rtt.ci95, "", b.rtt.ci_method));
    half.push_back(param_of(b.rtt.min / 2, b.rtt.ci95 / 2, "", b.rtt.ci_method));
    steady.push_back(param_of(b.gap_steady.min, b.gap_steady.ci95, "", b.gap_steady.ci_method));
  }
  params["rtt"] = over_runs(eel);
  params["rtt"]["note"] = "round trip of the " + std::to_string(bytes) + "-byte minimum message (min over runs)";
  // Bell et al. 4.1 define EEL as half the round trip of the minimum message.
  params["eel"] = over_runs(half);
  params["eel"]["note"] =
      "Bell et al. 4.1: end-to-end latency, RTT / 2 of the " + std::to_string(bytes) + "-byte minimum message";
  params["g_steady"] = over_runs(steady);
  params["g_steady"]["note"] =
      "the steady pace of the receiver's credit returns at the smallest size (a second figure "
      "beside Bell et al.'s total / N)";
}

// A size whose clean flood runs were too few within the budget (common/disturbance.hpp) gives no figure:
// the smallest size's refuse every figure read there, any size's refuse the fits over sizes.
void refuse_disturbed(const Runs& runs, nlohmann::json& params) {
  std::string smallest, any;
  for (const auto& run : runs)
    for (std::size_t i = 0; i < run.size(); ++i) {
      if (run[i].segments.enough()) continue;
      const std::string why = std::to_string(run[i].bytes) + " B: " + run[i].segments.refusal();
      if (i == 0 && smallest.empty()) smallest = why;
      if (any.empty()) any = why;
    }
  for (const char* k : {"g", "g_ni", "g_steady", "rtt", "eel", "o_s_completion", "o_r_stream", "kernel_per_message"})
    if (!smallest.empty() && params.contains(k)) refuse_figure(params[k], smallest);
  for (const char* k : {"G", "G_ni", "crossover_bytes"})
    if (!any.empty() && params.contains(k)) refuse_figure(params[k], any);
}

nlohmann::json flood_parameters(const Runs& runs, const nlohmann::json& per, nlohmann::json& checks) {
  const auto& last = runs.back();
  nlohmann::json params = nlohmann::json::object();
  flood_fits(runs, per, params);
  if (per.front().contains("o_s_completion")) {
    params["o_s_completion"] = stream_notes(per.front()["o_s_completion"], true, last.front().bytes, NAN);
    params["o_r_stream"] =
        stream_notes(per.front()["o_r_stream"], false, last.front().bytes, last.front().recv.frames_per_poll);
  }
  params["kernel_per_message"] = kernel_per_message(last.front());
  smallest_message(runs, params);
  refuse_disturbed(runs, params);
  if (last.size() >= 2)
    add_check(checks, "G > 0", params["G"]["value_ns"].is_number(), "the flood's time does not grow with size");
  return params;
}

nlohmann::json overlap_parameters(const Runs& runs, const nlohmann::json& per) {
  const auto& last = runs.back();
  nlohmann::json params = nlohmann::json::object();
  params["o_s_completion"] = stream_notes(per.front()["o_s_completion"], true, last.front().bytes, NAN);
  params["o_r_knee"] = knee_param(runs);
  params["o_r_stream"] =
      stream_notes(per.front()["o_r_stream"], false, last.front().bytes, last.front().recv.frames_per_poll);
  params["rtt"] = per.front()["rtt"];
  return params;
}
}  // namespace

nlohmann::json bell_summary(const Runs& runs, bool flood) {
  nlohmann::json checks = nlohmann::json::array();
  const auto& last = runs.back();
  nlohmann::json per = nlohmann::json::array();
  for (std::size_t i = 0; i < last.size(); ++i) {
    const SizeOverRuns s = size_over_runs(runs, i, flood);
    per.push_back(flood ? flood_size(s, last[i]) : overlap_size(s, last[i], checks));
  }
  nlohmann::json params = nlohmann::json::object();
  if (!last.empty()) params = flood ? flood_parameters(runs, per, checks) : overlap_parameters(runs, per);
  return {{"parameters", params}, {"per_size", per}, {"checks", checks}};
}

}  // namespace logpb::methods
