// --bench agree (what `logpbench agree` runs): agreement between methods where there is no ground truth.
// On one connected pair it runs four link-level methods one after another, each with a small budget:
//   1. signature (Culler et al. 3), cut short as quick's;
//   2. kielmann (Kielmann et al. 3): up to 8 B, eps 0.05, no saturation comparison per size;
//   3. overlap (Bell et al. 4.3) at 8 B;
//   4. availability (Doerfler & Brightwell 2) at 8 B;
//   5. poll (methods/poll): the receive's mechanism, what parts o_r from o_r_stream, measured (its own
//      checks stay in its record: they judge the poll model, not the table);
// then sets the parameters they share (o_s, o_r, g, RTT, L) side by side: "agree within 10%", or the
// difference in definition that parts them (methods/agree/analysis.hpp). --runs, --messages and --bell-runs
// raise the budgets; what was used is in agree.budgets with each phase's wall time in agree.seconds.
// A job-level method only because it runs five methods on one link (app/job.hpp measure_link).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "methods/agree/analysis.hpp"
#include "methods/availability/options.hpp"
#include "methods/bell/options.hpp"
#include "methods/descriptor.hpp"
#include "methods/kielmann/options.hpp"
#include "methods/poll/poll.hpp"
#include "methods/protocol.hpp"
#include "methods/quick/quick.hpp"
#include "methods/settings.hpp"
#include "methods/signature/options.hpp"
#include "methods/table.hpp"

namespace logpb::methods::method {

struct agree {
  static constexpr const char* name = "agree";
  static constexpr const char* summary =
      "logpbench agree: signature, kielmann, overlap and availability on one link, their shared parameters compared";
  static constexpr const char* plot = "";
  static constexpr Needs needs{.bulk = true, .local_completion = true};
  static constexpr bool burst_cap = true;  // its signature phase's
  static constexpr Scope scope = Scope::job;
  static constexpr bool own_table = true;  // the one LogP table (print) replaces the usual parameters table
  static constexpr const auto& phases = methods::kAgreeMethods;
  // The options its overlap and availability phases take from the user.
  static inline const std::vector<MethodOption> options = {opt::kQueueDepth, opt::kMessages, opt::kBellRuns,
                                                           opt::kBaseThreshold, opt::kStopThreshold};

  static void check_size(int n) {
    if (n != 2) throw UsageError("agree measures one pair: run 2 ranks, not " + std::to_string(n));
  }
  static Role role(int r, int) { return {r == 0, r == 0 ? 1 : 0, 0}; }
  // The phase budgets set these for each method, so they are refused; --runs, --messages and --bell-runs raise
  // the budgets, which otherwise keep the four methods within about a minute on shm.
  static void budgets(const Given& given, Settings& o) {
    for (const char* k : {"all", "sizes", "size", "iters", "warmup", "eps", "no-saturation-compare", "max-burst",
                          "bursts", "deltas", "delta-factors", "max-samples", "max-point-seconds"})
      if (given(k))
        throw UsageError(std::string("--") + k +
                         ": logpbench agree sets it for each method (recorded in the results' "
                         "agree.budgets); --runs, --messages and --bell-runs raise its budgets, or run the methods "
                         "themselves for your own");
    if (!given("runs")) o.runs = 1;
    if (!given("messages")) o.set(opt::kMessages, 2000);
    if (!given("bell-runs")) o.set(opt::kBellRuns, 3);
  }

  // Each phase's settings over the user's: --runs, --messages, --bell-runs, --queue-depth and the
  // availability thresholds stay the user's (budgets() gives agree smaller defaults for the first
  // three); what the budgets set, the options refuse.
  static void signature_budget(Settings& o) {
    quick::signature_budget(o);  // its single run is quick's; phase_options keeps the user's --runs
  }
  static void kielmann_budget(Settings& o) {
    o.sizes = {8};  // the largest size bounds the adaptive range: 0 .. 8 B, o_s(1) and o_r(1) among them
    // The paper's eps is the user's precision; 0.01 may not saturate in a minute on a busy core.
    o.set(opt::kEps, 0.05);
    o.set(opt::kSaturationCompare, false);
  }
  static void bell_budget(Settings& o) {
    o.sizes = {8};  // Bell et al.'s minimum message (4.1), for overlap and availability alike
  }
  static void poll_budget(Settings&) {}  // its repetitions and the user's --messages (2000 under agree)
  // Each phase's budget, in the order of `phases`.
  static constexpr void (*budgets_of[])(Settings&) = {signature_budget, kielmann_budget, bell_budget, bell_budget,
                                                                 poll_budget};
  static_assert(std::size(budgets_of) == std::size(phases));
  // O: Settings, or the job's whole command line, of which the phase changes only the Settings.
  template <class O>
  static O phase_options(std::size_t phase, const O& user) {
    O o = user;
    budgets_of[phase](o);
    o.runs = user.runs;
    return o;
  }
  static nlohmann::json budgets_json(const Settings& user) {
    nlohmann::json b = nlohmann::json::object();
    const Settings s = phase_options(0, user), k = phase_options(1, user), ov = phase_options(2, user),
                   av = phase_options(3, user), pl = phase_options(4, user);
    b["signature"] = {{"max_burst", s.get(opt::kMaxBurst)},      {"delta_factors", s.get(opt::kDeltaFactors)},
                      {"rtt_iterations", s.iterations},          {"max_samples_per_point", s.rule.max_samples},
                      {"max_point_seconds", s.rule.max_seconds}, {"runs", s.runs}};
    b["kielmann"] = {{"max_bytes", k.sizes.back()},
                     {"eps", k.get(opt::kEps)},
                     {"compare_saturation", k.get(opt::kSaturationCompare)},
                     {"runs", k.runs}};
    b["overlap"] = {{"sizes", ov.sizes},
                    {"messages", ov.get(opt::kMessages)},
                    {"bell_runs", ov.get(opt::kBellRuns)},
                    {"queue_depth", ov.get(opt::kQueueDepth)},
                    {"runs", ov.runs}};
    b["availability"] = {{"sizes", av.sizes},
                         {"base_threshold", av.get(opt::kBaseThreshold)},
                         {"stop_threshold", av.get(opt::kStopThreshold)},
                         {"runs", av.runs}};
    b["poll"] = {{"reps", pl.get(opt::kPollReps)}, {"messages", pl.get(opt::kMessages)}, {"runs", pl.runs}};
    b["tolerance"] = methods::kAgreeTolerance;
    return b;
  }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role& role) {
    if (!role.requester) {
      for (std::size_t p = 0; p < std::size(phases); ++p) methods::serve(ep);  // each phase ends with a quit
      return;
    }
    const auto user = job.o;
    nlohmann::json a = {{"budgets", budgets_json(user)}, {"seconds", nlohmann::json::object()}};
    nlohmann::json records = nlohmann::json::object();
    const auto t_all = std::chrono::steady_clock::now();
    // The shares of the progress bar follow the phases' usual lengths here (the signature's Delta curves
    // and overlap's computation sweep take longest).
    const double share[] = {0.0, 0.5, 0.6, 0.85, 0.95, 1.0};
    static_assert(std::size(share) == std::size(phases) + 1);
    for (std::size_t p = 0; p < std::size(phases); ++p) {
      const std::string bench = phases[p];
      job.o = phase_options(p, user);
      job.progress.span(share[p], share[p + 1]);
      const auto t0 = std::chrono::steady_clock::now();
      records[bench] = job.measure_link(ep, role.peer, bench);  // ends with a one-way quit (Job::measure_link)
      a["seconds"][bench] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      a["records"] = records;
      job.doc.j["agree"] = a;
      job.doc.save();  // a checkpoint after each method
    }
    job.o = user;
    job.progress.span(0, 1);
    a["seconds"]["total"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
    a["transport_local_completion"] = ep.transport().describe().value("local_completion", nlohmann::json(nullptr));
    const double timer_cost_ns = job.doc.j.value(nlohmann::json::json_pointer("/meta/tsc/timer_cost_ns"), 0.0);
    // std::nan, not NAN: NAN is a float, and value() would read the step as one (10.01915104 ns against a
    // figure of 10.019151037 ns, one clock step, then no longer within it).
    const double step_ns = job.doc.j.value(nlohmann::json::json_pointer("/meta/tsc/resolution_ns"), std::nan(""));
    const nlohmann::json verdicts =
        methods::agreement(records, ep.transport().describe(), timer_cost_ns, methods::kAgreeTolerance, step_ns);
    a.update(verdicts);
    a["records"] = records;
    auto& d = job.doc.j;
    d["agree"] = a;
    d["parameters"] = methods::agreed_parameters(records, verdicts, step_ns);
    nlohmann::json checks = nlohmann::json::array();
    for (const char* bench : phases)
      for (auto c : records[bench].value("checks", nlohmann::json::array())) {
        // The poll phase measures a mechanism; its checks judge the poll model (e.g. its relation, which the
        // shm ring's cache misses break), not the table's figures, and stay in agree.records.poll.
        if (std::string(bench) == "poll") break;
        c["method"] = bench;
        c["name"] = std::string(bench) + ": " + c.value("name", std::string());
        checks.push_back(c);
      }
    // Each cross-check that judged is a check of its own: a relation broken beyond the tolerance and both
    // intervals fails, with its cause.
    for (const char* k : methods::kSharedParameters) {
      const std::string v = verdicts[k].value("verdict", std::string());
      if (v != "agree" && v != "fail") continue;
      const auto& x = verdicts[k]["cross_check"];
      checks.push_back({{"method", "agree"},
                        {"name", std::string("agree: ") + k + " " + verdicts[k]["defined_by"].value("method", "") +
                                     (x.value("relation", "") == "same" ? " = " : " <= ") + x.value("method", "")},
                        {"ok", v == "agree"},
                        {"detail", verdicts[k].value("explanation", std::string())}});
    }
    d["checks"] = checks;
    // What the methods note about the link (local completion inside the send call): beside the checks, as
    // properties of the link rather than doubts about a figure.
    nlohmann::json notes = nlohmann::json::array();
    for (const char* bench : phases)
      for (auto n : records[bench].value("notes", nlohmann::json::array())) {
        n["method"] = bench;
        n["name"] = std::string(bench) + ": " + n.value("name", std::string());
        notes.push_back(n);
      }
    d["notes"] = notes;
    job.doc.save();
  }

  // The one LogP table: per quantity, its value from the method that defines it, the cross-check's figure
  // and the verdict on the relation between them.
  static Table agree_table(const nlohmann::json& doc) {
    Table t{"agree",
            {"quantity", "value (us)", "95% CI (us)", "defined by", "cross-check", "cross (us)", "verdict", "note"},
            {},
            4,
            {},
            {}};
    const auto& ps = doc.value("agree", nlohmann::json::object());
    auto us = [](const nlohmann::json& x) {
      return x.is_number() ? nlohmann::json(x.get<double>() / 1e3) : nlohmann::json(nullptr);
    };
    auto shown = [&](const nlohmann::json& m) -> nlohmann::json {
      if (m.contains("value_ns") && m["value_ns"].is_number()) return us(m["value_ns"]);
      if (m.contains("upper_bound_ns") && m["upper_bound_ns"].is_number()) {
        char b[64];
        std::snprintf(b, sizeof b, "<= %.4f", m["upper_bound_ns"].get<double>() / 1e3);
        return b;
      }
      return nullptr;
    };
    for (const char* k : methods::kSharedParameters) {
      if (!ps.contains(k)) continue;
      const auto& p = ps[k];
      const auto& def = p.value("defined_by", nlohmann::json::object());
      const auto& cross = p.value("cross_check", nlohmann::json::object());
      const auto& ms = p.value("methods", nlohmann::json::object());
      const std::string dm = def.value("method", std::string()), cm = cross.value("method", std::string());
      const nlohmann::json d = ms.value(dm, nlohmann::json::object()), c = ms.value(cm, nlohmann::json::object());
      const std::string rel = cross.value("relation", std::string()) == "at_least" ? ">= " : "";
      // The value is the table's figure (doc.parameters): the defining method's, or where it gave none, the
      // cross-check of the same thing, named in the note. The note also gives a missing value's reason and the
      // AM layer's own share of an overhead (meta.harness).
      const nlohmann::json chosen =
          doc.value("parameters", nlohmann::json::object()).value(k, nlohmann::json::object());
      const nlohmann::json& v = chosen.contains("source") ? chosen : d;
      std::string note = v.value("value_ns", nlohmann::json()).is_number() ? "" : v.value("error", std::string());
      const std::string source = chosen.value("source", std::string());
      if (!source.empty() && source.rfind(dm + " ", 0) != 0) {
        note = "from " + source + (d.contains("error") ? "; " + dm + ": " + d.value("error", std::string()) : "") +
               (note.empty() ? "" : "; " + note);
      }
      if (const std::string share = harness_share(doc, k); !share.empty())
        note = share + (note.empty() ? "" : "; " + note);
      t.rows.push_back({k, shown(v), v.contains("value_ns") && v["value_ns"].is_number() ? us(v["ci95_ns"]) : nullptr,
                        dm + " " + def.value("key", std::string()),
                        rel + cm + " " + cross.value("key", std::string()), shown(c),
                        p.value("verdict", std::string()), note});
    }
    return t;
  }

  static std::vector<Table> tables(const nlohmann::json& doc) { return {agree_table(doc)}; }
  static void print(std::FILE* out, const nlohmann::json& doc) {
    const auto& a = doc.value("agree", nlohmann::json::object());
    std::fprintf(out, "  one LogP table: each quantity from the method that defines it, held against a second:\n");
    print_text(out, agree_table(doc));
    for (const char* k : methods::kSharedParameters)
      if (a.contains(k) && a[k].value("verdict", std::string()) != "agree")
        std::fprintf(out, "  %s: %s: %s\n", k, a[k].value("verdict", std::string()).c_str(),
                     a[k].value("explanation", std::string()).c_str());
    // What parts the receive figures (Kielmann, availability, the stream), as the poll phase measured it.
    if (a.contains("o_r") && a["o_r"].contains("mechanism"))
      std::fprintf(out, "  the receive (o_r, o_r_stream), %s\n", a["o_r"].value("mechanism", std::string()).c_str());
    const auto& s = a.value("seconds", nlohmann::json::object());
    std::fprintf(out,
                 "  agree: measured in %.1f s (signature %.1f s, kielmann %.1f s, overlap %.1f s, "
                 "availability %.1f s, poll %.1f s); budgets in agree.budgets\n",
                 s.value("total", 0.0), s.value("signature", 0.0), s.value("kielmann", 0.0), s.value("overlap", 0.0),
                 s.value("availability", 0.0), s.value("poll", 0.0));
  }
};

}  // namespace logpb::methods::method
