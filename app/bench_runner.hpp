// Runs the chosen method on a connected client endpoint, any transport: one definition of each method
// serves every transport. Fills the results document and checkpoints it after every curve.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/signature_fit.hpp"
#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/methods/pingpong.hpp"
#include "common/methods/protocol.hpp"
#include "common/methods/signature.hpp"
#include "common/methods/verify.hpp"
#include "common/methods/bell.hpp"
#include "common/methods/bulk.hpp"
#include "common/methods/doerfler.hpp"
#include "common/methods/kielmann.hpp"
#include "common/results.hpp"

namespace logpb::app {

struct ResultsDoc {
  nlohmann::json j = nlohmann::json::object();
  std::string path;
  void save() const {
    if (!path.empty()) write_json_atomic(path, j);
  }
};

nlohmann::json distribution_json(const std::vector<double>& samples, bool raw);
nlohmann::json signature_curves_json(const methods::SignatureData& d, bool raw);
std::vector<analysis::Curve> to_fit_curves(const methods::SignatureData& d);
analysis::Curve to_fit_curve(const methods::SignatureCurve& c);
analysis::Param rtt_param(const Summary& s);
// Fills doc.j["parameters"] and ["checks"] from the per-run fits.
void summarize_runs(ResultsDoc& doc, const std::vector<analysis::SignatureFit>& fits);
void summarize_pingpong_runs(ResultsDoc& doc, const std::vector<analysis::Param>& rtts);

// Each takes every run so far (--runs): the run's own record is returned, and doc's parameters, per-size
// table and checks are rebuilt from all runs (each parameter over runs by combine_runs).
nlohmann::json bell_json(ResultsDoc& doc, const std::vector<std::vector<methods::BellSize>>& runs, bool flood);
nlohmann::json kielmann_json(ResultsDoc& doc, const std::vector<methods::KielmannResult>& runs);
nlohmann::json doerfler_json(ResultsDoc& doc, const std::vector<std::vector<methods::DoerflerSize>>& runs, const Options& o);
nlohmann::json bulk_json(ResultsDoc& doc, const std::vector<std::vector<methods::BulkSize>>& runs, bool raw);
std::vector<std::uint32_t> default_sizes(const std::string& bench, std::uint32_t max_bytes);

// Bulk, Bell (flood, overlap), Kielmann and Doerfler: the methods that run over message sizes.
template <class EP>
void run_size_method(EP& ep, methods::ClientState& st, const Clock& clock, const Options& o, ResultsDoc& doc,
                     Progress& progress) {
  if constexpr (!BulkTransport<std::remove_reference_t<decltype(ep.transport())>>) {
    throw UsageError("--bench " + o.bench + " needs bulk transfers, which this transport lacks");
  } else {
    auto say = [&](const std::string& s) { progress(s); };
    std::vector<std::uint32_t> sizes = o.sizes.empty() ? default_sizes(o.bench, methods::max_message(ep)) : o.sizes;
    for (auto n : sizes)
      if (n > methods::max_message(ep))
        throw UsageError("size " + std::to_string(n) + " exceeds half the segment (" + std::to_string(methods::max_message(ep)) + ")");
    // One repetition loop serves every method: --runs repeats the whole method, and every parameter is
    // then reported over the runs with their spread.
    std::vector<std::vector<methods::BellSize>> bell_runs;
    std::vector<methods::KielmannResult> kielmann_runs;
    std::vector<std::vector<methods::DoerflerSize>> doerfler_runs;
    std::vector<std::vector<methods::BulkSize>> bulk_runs;
    for (int r = 0; r < o.runs; ++r) {
      const std::string run_label = o.runs > 1 ? "run " + std::to_string(r + 1) + "/" + std::to_string(o.runs) + ": " : "";
      auto say_run = [&](const std::string& s) { progress(run_label + s); };
      nlohmann::json run;
      if (o.bench == "flood" || o.bench == "overlap") {
        methods::BellConfig cfg{sizes, o.queue_depth, o.messages, o.bell_runs, true};
        bell_runs.push_back(o.bench == "flood" ? methods::bell_flood(ep, st, clock, cfg, say_run)
                                               : methods::bell_overlap(ep, st, clock, cfg, say_run));
        run = bell_json(doc, bell_runs, o.bench == "flood");
      } else if (o.bench == "kielmann") {
        methods::KielmannConfig cfg;
        cfg.eps = o.eps;
        cfg.compare_saturation = o.compare_saturation;
        if (!o.sizes.empty()) cfg.max_bytes = o.sizes.back();  // the largest size given bounds the range
        kielmann_runs.push_back(methods::kielmann(ep, st, clock, cfg, say_run));
        run = kielmann_json(doc, kielmann_runs);
      } else if (o.bench == "availability") {
        methods::DoerflerConfig cfg;
        cfg.sizes = sizes;
        cfg.base_threshold = o.base_threshold;
        cfg.stop_threshold = o.stop_threshold;
        doerfler_runs.push_back(methods::doerfler(ep, st, clock, cfg, say_run));
        run = doerfler_json(doc, doerfler_runs, o);
      } else {  // bulk
        methods::SignatureConfig cfg;
        cfg.bursts = o.bursts.empty() ? methods::default_bursts(std::min(o.max_burst, 64)) : o.bursts;
        cfg.rule = o.rule;
        cfg.rtt = {std::min(o.iterations, 2000), 0};
        cfg.max_burst_ns = o.max_burst_time_ns;
        cfg.window = ep.window();
        cfg.max_extend = 0;  // bulk curves are read for o_s(n) and T(n); the steady state is not required
        methods::Hooks hooks;
        hooks.progress = say_run;
        bulk_runs.push_back(methods::bulk(ep, st, clock, sizes, cfg, o.deltas_ns, hooks));
        run = bulk_json(doc, bulk_runs, o.raw);
      }
      doc.j["runs"].push_back(run);
      doc.save();
    }
  }
}

// The AM layer's own counts (frames refused by reason, losses) go into meta.am.counters.
template <class EP>
void record_counters(const EP& ep, ResultsDoc& doc) {
  nlohmann::json c = ep.counters();
  c["loss_events"] = ep.loss_events();
  c["lost_requests"] = ep.lost_requests();
  doc.j["meta"]["am"]["counters"] = c;
}

template <class L>
void run_methods(L ep, methods::ClientState& st, const Clock& clock, const Options& o, ResultsDoc& doc, Progress& progress);

template <class EP>
void run_client_bench(EP& ep, int peer, const Clock& clock, const Options& o, ResultsDoc& doc, Progress& progress) {
  struct Record {  // on every way out, including errors
    const EP& ep;
    ResultsDoc& doc;
    ~Record() { record_counters(ep, doc); }
  } record{ep, doc};
  methods::ClientState st;
  methods::install_client(ep, st);
  doc.j["runs"] = nlohmann::json::array();
  run_methods(am::Link<EP>(ep, peer), st, clock, o, doc, progress);
}

// The chosen method on one link (requester -> replier).
template <class L>
void run_methods(L ep, methods::ClientState& st, const Clock& clock, const Options& o, ResultsDoc& doc, Progress& progress) {

  if (o.bench == "bulk" || o.bench == "flood" || o.bench == "overlap" || o.bench == "kielmann" || o.bench == "availability") {
    run_size_method(ep, st, clock, o, doc, progress);
    return;
  }
  if (o.bench == "verify") {
    if constexpr (BulkTransport<std::remove_reference_t<decltype(ep.transport())>>) {
      progress("verifying bulk store and get");
      const auto cases = methods::verify_bulk(ep, st, o.segment_bytes, 12345);
      nlohmann::json v = nlohmann::json::array();
      bool all = true;
      for (const auto& c : cases) {
        v.push_back({{"bytes", c.bytes}, {"store_ok", c.store_ok}, {"get_ok", c.get_ok}});
        all = all && c.store_ok && c.get_ok;
      }
      doc.j["runs"].push_back({{"verify", v}});
      doc.j["parameters"] = nlohmann::json::object();
      doc.j["checks"] = {{{"name", "bulk store and get are byte-exact"}, {"ok", all},
                          {"detail", all ? "every size" : "a size failed: see runs[0].verify"}}};
      doc.save();
      if (!all) throw std::runtime_error("bulk verification failed: see runs[0].verify in the results");
    } else {
      throw UsageError("this transport has no bulk store/get to verify");
    }
    return;
  }
  if (o.bench == "pingpong") {
    std::vector<analysis::Param> rtts;
    for (int r = 0; r < o.runs; ++r) {
      progress("run " + std::to_string(r + 1) + "/" + std::to_string(o.runs) + ": round trip");
      const auto res = methods::pingpong(ep, st, clock, {o.iterations, o.warmup, o.size});
      rtts.push_back(rtt_param(res.summary));
      doc.j["runs"].push_back({{"rtt", distribution_json(res.rtt_ns, o.raw)}, {"lost", res.lost}});
      summarize_pingpong_runs(doc, rtts);
      doc.save();
    }
    return;
  }

  methods::SignatureConfig cfg;
  cfg.bursts = o.bursts.empty() ? methods::default_bursts(o.max_burst) : o.bursts;
  cfg.deltas_ns = o.deltas_ns;
  cfg.auto_delta_factors = o.delta_factors;
  cfg.rule = o.rule;
  cfg.rtt = {o.iterations, o.warmup};
  cfg.max_burst_ns = o.max_burst_time_ns;
  cfg.window = ep.window();
  if (!cfg.deltas_ns.empty() && cfg.deltas_ns.front() != 0) cfg.deltas_ns.insert(cfg.deltas_ns.begin(), 0.0);

  std::vector<analysis::SignatureFit> fits;
  for (int r = 0; r < o.runs; ++r) {
    const std::string run_label = "run " + std::to_string(r + 1) + "/" + std::to_string(o.runs) + ": ";
    doc.j["runs"].push_back(nlohmann::json::object());
    methods::Hooks hooks;
    hooks.progress = [&](const std::string& s) { progress(run_label + s); };
    hooks.checkpoint = [&](const methods::SignatureData& d) {
      doc.j["runs"].back() = {{"rtt", distribution_json(d.rtt.rtt_ns, o.raw)},
                              {"rtt_lost", d.rtt.lost},
                              {"signature", signature_curves_json(d, o.raw)}};
      doc.save();
    };
    hooks.steady_reached = [](const methods::SignatureCurve& c) { return analysis::steady_state_cost(to_fit_curve(c)).reached; };
    hooks.deltas_after_first = [&](const methods::SignatureCurve& c0) {
      methods::SignatureData tmp;
      tmp.curves.push_back(c0);
      const auto g = analysis::steady_state_cost(to_fit_curves(tmp).front()).cost;
      if (!g.valid) throw std::runtime_error("no steady state on the Delta = 0 curve to base the Delta grid on: " + g.note);
      return analysis::auto_deltas(g.value, cfg.auto_delta_factors);
    };
    const auto data = methods::signature(ep, st, clock, cfg, hooks);
    fits.push_back(analysis::fit_signature(to_fit_curves(data), rtt_param(data.rtt.summary), 1.2, ep.window()));
    doc.j["runs"].back()["fit"] = fits.back();
    summarize_runs(doc, fits);
    doc.save();
  }
}

}  // namespace logpb::app
