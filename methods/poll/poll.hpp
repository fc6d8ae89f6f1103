// --bench poll: the poll model that parts the receive costs the methods publish (issue 36, "Measure what
// explains the gaps"). Times the empty poll, then single polls that find 1, 2, 4, ... frames waiting up to
// the transport's receive batch, and fits time = a + b x frames; counts the frames a stream's polls hand
// up; and from these predicts both o_r figures:
//   Kielmann et al. section 3 time one receive of a message that has waited: one poll, one frame, a + b;
//   Bell et al. section 4.3 read o_r per message off a saturated stream, where each poll hands up f
//   frames and a message pays a / f + b.
// So o_r(Kielmann) - o_r(Bell) = a (1 - 1/f): equal only at f = 1, and Kielmann's the larger by the poll's
// fixed part not shared out (methods/poll/analysis.hpp). The loops are in methods/poll/loops.hpp.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/figures.hpp"
#include "methods/bell/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/method_option.hpp"
#include "methods/poll/analysis.hpp"
#include "methods/poll/loops.hpp"
#include "methods/settings.hpp"

namespace logpb::methods::opt {
inline const Typed<int> kPollReps =
    option::integer("poll-reps", "poll: timed polls per frame count (k = 1, 2, 4, ... up to the receive batch)", 200,
                    20, 1e6);
}  // namespace logpb::methods::opt

namespace logpb::methods::method {

struct poll {
  static constexpr const char* name = "poll";
  static constexpr const char* summary =
      "the poll model: empty poll, a + b x frames per poll, frames per poll in a stream; predicts both o_r";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::link;
  static inline const std::vector<MethodOption> options = {opt::kPollReps, opt::kMessages};
  using Run = methods::PollRun;

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::PollConfig cfg;
    cfg.reps = o.get(opt::kPollReps);
    cfg.stream = o.get(opt::kMessages);
    if (cfg.stream < 16 * methods::kStreamBlock)
      throw UsageError("--bench poll: --messages " + std::to_string(cfg.stream) + " leaves fewer than 15 blocks of " +
                       std::to_string(methods::kStreamBlock) + " messages in a stream; give at least " +
                       std::to_string(16 * methods::kStreamBlock));
    return methods::poll_model(link, st, clock, cfg, io.progress);
  }

  static nlohmann::json stream_json(const methods::PollStreamRun& s) {
    return {{"c_ns", s.c_ns},
            {"messages", s.messages},
            {"polls_by_frames", s.per_count},
            {"ns_per_message", s.ns_per_message},
            {"block_messages", methods::kStreamBlock},
            {"block_period_ns", s.block_period_ns},
            {"block_compute_ns", s.block_compute_ns}};
  }
  static nlohmann::json record(const Run& r, const Settings&) {
    nlohmann::json asked = nlohmann::json::array(), frames = nlohmann::json::array(), ns = nlohmann::json::array();
    for (const auto& s : r.samples) {
      asked.push_back(s.asked);
      frames.push_back(s.frames);
      ns.push_back(s.ns);
    }
    return {{"poll",
             {{"receive_batch", r.batch},
              {"receive_batch_source", r.batch_source},
              {"frame_counts", r.counts},
              {"rtt_ns", r.rtt_ns},
              {"wait_before_1_frame_ns", r.wait_ns_k1},
              {"resolution_ns", r.resolution_ns},
              {"empty_block", r.empty_block},
              {"empty_ns", r.empty_ns},
              {"empty_spans_that_found_frames", r.empty_spans_found},
              {"timed", {{"asked", asked}, {"frames", frames}, {"ns", ns}}},
              {"credit_excluded", r.credit_excluded},
              {"short_polls", r.short_polls},
              {"missed_polls", r.missed_polls},
              {"reply_ns", r.reply_ns},
              {"flood", stream_json(r.flood)},
              {"backlog", stream_json(r.backlog)}}}};
  }

  // One run's figures.
  struct Figures {
    methods::poll_fit::Fit fit;
    analysis::Param empty, single, flood_pred, backlog_pred, backlog_measured, empty_per_message;
    analysis::Param backlog_per_frame;
    analysis::Param one_reply;  // Kielmann's path: one waiting reply to a request that did not poll first  // what a frame of the standing stream cost: measured less a / f
    methods::poll_fit::Stream flood, backlog;
  };
  static Figures figures(const Run& r) {
    namespace P = methods::poll_fit;
    Figures f;
    f.fit = P::fit_poll(r.samples, r.resolution_ns);
    f.empty = P::empty_poll(r.empty_ns, r.empty_block, r.resolution_ns);
    f.single = P::single_prediction(f.fit);
    {
      const Summary sm = summarize(r.reply_ns);
      if (sm.n >= 8) {
        f.one_reply.value = sm.median;
        f.one_reply.ci95 = std::max(sm.ci95_median, r.resolution_ns);
        f.one_reply.valid = true;
      } else {
        f.one_reply = analysis::Param::invalid("fewer than 8 timed polls of one reply");
      }
    }
    f.flood = P::stream_of(r.flood.per_count);
    f.backlog = P::stream_of(r.backlog.per_count);
    // Where a and b cannot be parted (one frame per poll), every poll is the one-frame poll: a / 1 + b.
    auto predict = [&](const P::Stream& s) {
      if (f.fit.fixed.valid && f.fit.per_frame.valid) return P::stream_prediction(f.fit.fixed, f.fit.per_frame, s.mean);
      if (s.mean == 1.0 && f.fit.one_frame.valid) {
        analysis::Param p = f.fit.one_frame;
        p.note = "every poll handed up one frame: the one-frame poll";
        return p;
      }
      return analysis::Param::invalid("a and b are not parted: " + f.fit.fixed.note);
    };
    f.flood_pred = predict(f.flood);
    f.backlog_pred = predict(f.backlog);
    f.backlog_measured =
        P::stream_receive(r.backlog.block_period_ns, r.backlog.block_compute_ns, methods::kStreamBlock, r.resolution_ns);
    // The per-frame cost the standing stream paid, where a is known: o_r measured there less a / f. Set
    // against b (frames that waited, timed one poll at a time) it shows whether a streamed frame costs
    // what a waiting one does: on the shm ring a waiting frame's line is still in the sender's cache and
    // its receive pays the transfer, while a stream's lines come in ahead (the prefetcher).
    if (f.backlog_measured.valid && f.fit.fixed.valid && f.backlog.mean >= 1) {
      f.backlog_per_frame.value = f.backlog_measured.value - f.fit.fixed.value / f.backlog.mean;
      f.backlog_per_frame.ci95 = std::hypot(f.backlog_measured.ci95, f.fit.fixed.ci95 / f.backlog.mean);
      f.backlog_per_frame.valid = f.backlog_per_frame.value > 0;
      if (!f.backlog_per_frame.valid)
        f.backlog_per_frame = analysis::Param::invalid("the standing stream cost less than a / f per message",
                                                       f.backlog_per_frame.value);
    } else {
      f.backlog_per_frame = analysis::Param::invalid(
          f.fit.fixed.valid ? "no standing-stream figure" : "a is not parted from b: " + f.fit.fixed.note);
    }
    // What the flood's empty polls cost per message it received: e x empty polls / frames.
    if (f.empty.valid && f.flood.frames > 0) {
      const double per = static_cast<double>(f.flood.empty) / static_cast<double>(f.flood.frames);
      f.empty_per_message.value = f.empty.value * per;
      f.empty_per_message.ci95 = f.empty.ci95 * per;
      f.empty_per_message.valid = true;
    } else {
      f.empty_per_message = analysis::Param::invalid("no empty-poll cost or no frames in the flood");
    }
    return f;
  }

  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    std::vector<Figures> fs;
    for (const auto& r : runs) fs.push_back(figures(r));
    nlohmann::json checks = nlohmann::json::array();
    checks.push_back(linear_check(fs));
    checks.push_back(asked_frames_check(runs));
    checks.push_back(relation_check(
        fs, "a + b matches the one-frame poll", [](const Figures& f) -> const analysis::Param& { return f.single; },
        [](const Figures& f) -> const analysis::Param& { return f.fit.one_frame; },
        "the line at one frame against the polls that handed up one (10% or the intervals)"));
    checks.push_back(relation_check(
        fs, "Bell's o_r in a standing stream is a / f + b",
        [](const Figures& f) -> const analysis::Param& { return f.backlog_pred; },
        [](const Figures& f) -> const analysis::Param& { return f.backlog_measured; },
        "predicted against the standing stream's receive time per message (10% or the intervals)"));
    return {{"parameters", parameters(fs)}, {"checks", checks}, {"poll", poll_section(runs, fs)}};
  }

  // Each figure combined over the runs, with what it is.
  static nlohmann::json parameters(const std::vector<Figures>& fs) {
    auto over = [&](auto pick, const char* note) {
      std::vector<analysis::Param> v;
      for (const auto& f : fs) v.push_back(pick(f));
      nlohmann::json j = analysis::combine_runs(v);
      if (!j["value_ns"].is_null()) j["note"] = note;
      return j;
    };
    return {
        {"poll_empty", over([](const Figures& f) { return f.empty; },
                            "one poll that finds nothing (spans of back-to-back empty polls, per poll)")},
        {"poll_fixed", over([](const Figures& f) { return f.fit.fixed; },
                            "a: the fixed cost of a poll that finds something (the line time = a + b x frames)")},
        {"poll_per_frame", over([](const Figures& f) { return f.fit.per_frame; },
                                "b: the cost of each frame a poll hands up (validation, dispatch, handler, re-post)")},
        {"poll_one_frame", over([](const Figures& f) { return f.fit.one_frame; },
                                "one poll that handed up one waiting frame, measured (the line's a + b, unfitted)")},
        {"poll_one_reply", over([](const Figures& f) { return f.one_reply; },
                                "one poll that handed up one waiting reply to a request sent without a poll "
                                "before it: Kielmann et al. 3's o_r path exactly (poll_one_frame's ask polls first)")},
        {"o_r_predicted", over([](const Figures& f) { return f.single; },
                               "a + b: Kielmann et al. 3's o_r, one receive of a message already there")},
        {"o_r_stream_predicted",
         over([](const Figures& f) { return f.flood_pred; },
              "a / f + b at the flood's f: Bell et al. 4.3's o_r per message where the receiver keeps up")},
        {"o_r_backlog_predicted",
         over([](const Figures& f) { return f.backlog_pred; },
              "a / f + b at the f of a stream that keeps a queue standing: Bell et al. 4.3's o_r past the knee")},
        {"o_r_backlog_measured",
         over([](const Figures& f) { return f.backlog_measured; },
              "the standing stream's time per message less its computation (the overlap test's o_r, measured here)")},
        {"poll_per_frame_stream",
         over([](const Figures& f) { return f.backlog_per_frame; },
              "what each frame of the standing stream cost: o_r_backlog_measured - a / f (against b, frames that "
              "waited)")},
        {"poll_empty_per_message_flood",
         over([](const Figures& f) { return f.empty_per_message; },
              "the flood's empty polls per message received, at poll_empty each: time the receiver spent "
              "finding nothing (waiting, where it outruns the sender; no part of o_r past the knee)")}};
  }

  // Frames per poll are counts, not times: beside the parameters, so no table prints them as microseconds.
  template <class Pick>
  static nlohmann::json frames_per_poll(const std::vector<Figures>& fs, Pick pick) {
    std::vector<double> mean, median, share;
    std::uint64_t polls = 0, empty = 0, total = 0;
    for (const auto& f : fs) {
      const methods::poll_fit::Stream& s = pick(f);
      mean.push_back(s.mean);
      median.push_back(s.median);
      share.push_back(s.empty_share_of_polls);
      polls += s.polls;
      empty += s.empty;
      total += s.frames;
    }
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    const Estimate m = mean_ci95(mean);
    return nlohmann::json{{"mean", num(m.value)},
                          {"ci95", num(m.ci95)},
                          {"median", num(median_of(median))},
                          {"runs", mean},
                          {"empty_share_of_polls", num(mean_ci95(share).value)},
                          {"polls", polls},
                          {"empty_polls", empty},
                          {"frames", total}};
  }

  // The "poll" section: frames per poll in both streams, the receive batch, the relation, the first run's points.
  static nlohmann::json poll_section(const std::vector<Run>& runs, const std::vector<Figures>& fs) {
    nlohmann::json section = {
        {"frames_per_poll_stream",
         frames_per_poll(fs, [](const Figures& f) -> const methods::poll_fit::Stream& { return f.flood; })},
        {"frames_per_poll_backlog",
         frames_per_poll(fs, [](const Figures& f) -> const methods::poll_fit::Stream& { return f.backlog; })},
        {"receive_batch", runs.front().batch},
        {"receive_batch_source", runs.front().batch_source},
        {"relation",
         "o_r(Kielmann) = a + b; o_r(Bell, stream) = a / f + b (+ poll_empty x empty polls / frames where the "
         "receiver outruns the sender); so o_r(Kielmann) - o_r(Bell) = a (1 - 1/f) >= 0"}};
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : fs.front().fit.points)
      points.push_back({{"frames", p.frames}, {"n", p.n}, {"median_ns", p.median_ns}, {"ci95_ns", p.ci95_ns},
                        {"residual_ns", p.residual_ns}});
    section["first_run_points"] = points;
    return section;
  }

  static nlohmann::json linear_check(const std::vector<Figures>& fs) {
    bool ok = true;
    std::string d;
    for (std::size_t k = 0; k < fs.size(); ++k)
      if (!fs[k].fit.linear) {
        ok = false;
        d += "run " + std::to_string(k) + ": " + fs[k].fit.linear_detail + ". ";
      }
    return {{"name", "a poll's time is a + b x the frames it hands up"},
            {"ok", ok},
            {"detail", ok ? fs.front().fit.linear_detail : d}};
  }

  static nlohmann::json asked_frames_check(const std::vector<Run>& runs) {
    std::uint64_t shorts = 0, n = 0, missed = 0;
    for (const auto& r : runs) {
      shorts += r.short_polls;
      missed += r.missed_polls;
      n += r.samples.size();
    }
    const bool ok = n > 0 && shorts * 20 <= n;
    return {{"name", "the timed polls handed up the frames asked for"},
            {"ok", ok},
            {"detail", std::to_string(shorts) + " of " + std::to_string(n) +
                           " timed polls handed up fewer than min(k, batch) (at most 5% allowed): "
                           "else the wait is too short or the NI hands up less than its batch; " +
                           std::to_string(missed) +
                           " polls after the wait found nothing (a peer not yet scheduled) and were "
                           "waited again"}};
  }

  // Two figures of each run that the poll model says are one (10% or their intervals).
  template <class PickA, class PickB>
  static nlohmann::json relation_check(const std::vector<Figures>& fs, const char* name, PickA pick_a, PickB pick_b,
                                       const char* what) {
    bool ok = true, judged = false;
    std::string d;
    for (std::size_t k = 0; k < fs.size(); ++k) {
      const analysis::Param& a = pick_a(fs[k]);
      const analysis::Param& b = pick_b(fs[k]);
      if (!a.valid || !b.valid) continue;
      judged = true;
      const auto g = analysis::agree(a.estimate(), b.estimate(),
                                     {analysis::Intervals::quadrature, 0.10, std::max(a.value, b.value)});
      char buf[160];
      std::snprintf(buf, sizeof buf, "run %zu: %.1f vs %.1f ns (allowed %.1f); ", k, a.value, b.value, g.allowed);
      d += buf;
      ok = ok && g.agree;
    }
    return {{"name", name}, {"ok", ok}, {"detail", judged ? d + what : std::string("not judged: ") + what}};
  }

  static void print(std::FILE* out, const nlohmann::json& doc) {
    if (!doc.contains("poll") || !doc["poll"].is_object()) return;
    const auto& s = doc["poll"];
    auto line = [&](const char* what, const char* key) {
      if (!s.contains(key) || !s[key].is_object()) return;
      const auto& f = s[key];
      auto get = [&](const char* k) { return f.contains(k) && f[k].is_number() ? f[k].get<double>() : NAN; };
      std::fprintf(out, "  frames per poll, %s: mean %.2f, median %.0f, %.1f%% of polls empty\n", what, get("mean"),
                   get("median"), 100 * get("empty_share_of_polls"));
    };
    std::fprintf(out, "  receive batch %d (%s)\n", s.value("receive_batch", 0),
                 s.value("receive_batch_source", std::string()).c_str());
    line("flood", "frames_per_poll_stream");
    line("standing queue", "frames_per_poll_backlog");
    std::fprintf(out, "  %s\n", s.value("relation", std::string()).c_str());
  }
};

}  // namespace logpb::methods::method
