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
analysis::Param rtt_param(const Summary& s);
// Fills doc.j["parameters"] and ["checks"] from the per-run fits.
void summarize_runs(ResultsDoc& doc, const std::vector<analysis::SignatureFit>& fits);
void summarize_pingpong_runs(ResultsDoc& doc, const std::vector<analysis::Param>& rtts);

// The AM layer's own counts (frames refused by reason, losses) go into meta.am.counters.
template <class EP>
void record_counters(const EP& ep, ResultsDoc& doc) {
  nlohmann::json c = ep.counters();
  c["loss_events"] = ep.loss_events();
  c["lost_requests"] = ep.lost_requests();
  doc.j["meta"]["am"]["counters"] = c;
}

template <class EP>
void run_client_bench(EP& ep, const Clock& clock, const Options& o, ResultsDoc& doc, Progress& progress) {
  struct Record {  // on every way out, including errors
    const EP& ep;
    ResultsDoc& doc;
    ~Record() { record_counters(ep, doc); }
  } record{ep, doc};
  methods::ClientState st;
  methods::install_client(ep, st);
  doc.j["runs"] = nlohmann::json::array();

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
      const auto res = methods::pingpong(ep, st, clock, {o.iterations, o.warmup});
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
    hooks.deltas_after_first = [&](const methods::SignatureCurve& c0) {
      methods::SignatureData tmp;
      tmp.curves.push_back(c0);
      const auto g = analysis::steady_state_cost(to_fit_curves(tmp).front()).cost;
      if (!g.valid) throw std::runtime_error("no steady state on the Delta = 0 curve to base the Delta grid on: " + g.note);
      return analysis::auto_deltas(g.value, cfg.auto_delta_factors);
    };
    const auto data = methods::signature(ep, st, clock, cfg, hooks);
    fits.push_back(analysis::fit_signature(to_fit_curves(data), rtt_param(data.rtt.summary)));
    doc.j["runs"].back()["fit"] = fits.back();
    summarize_runs(doc, fits);
    doc.save();
  }
}

}  // namespace logpb::app
