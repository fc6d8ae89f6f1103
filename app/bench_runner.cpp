#include "bench_runner.hpp"

#include <algorithm>
#include <map>

namespace logpb::app {

nlohmann::json distribution_json(const std::vector<double>& samples, bool raw) {
  const Summary s = summarize(samples);
  nlohmann::json j = {{"summary", s}};
  if (samples.empty()) return j;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  nlohmann::json pct = nlohmann::json::object();
  for (double q : {0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999}) {
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q * 100);
    pct[key] = quantile_of_sorted(v, q);
  }
  j["percentiles_ns"] = pct;
  // 64 equal bins from the minimum to the 99.9th percentile; what lies above is counted apart.
  const double lo = v.front(), hi = std::max(s.p999, lo + 1e-9);
  std::vector<std::uint64_t> bins(64, 0);
  std::uint64_t above = 0;
  for (double x : v) {
    if (x > hi) {
      ++above;
      continue;
    }
    auto b = static_cast<std::size_t>((x - lo) / (hi - lo) * 64);
    ++bins[std::min<std::size_t>(b, 63)];
  }
  j["histogram"] = {{"lo_ns", lo}, {"hi_ns", hi}, {"counts", bins}, {"above_hi", above}};
  if (raw) j["samples_ns"] = samples;
  return j;
}

nlohmann::json signature_curves_json(const methods::SignatureData& d, bool raw) {
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& c : d.curves) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : c.points) {
      nlohmann::json jp = {{"M", p.M},
                           {"cost_ns", p.point.value},
                           {"net_of_delta_ns", p.net.n ? nlohmann::json(p.net.median) : nlohmann::json(nullptr)},
                           {"ci95_ns", p.point.ci95},
                           {"converged", p.point.converged},
                           {"discarded", p.point.discarded},
                           {"summary", p.point.summary}};
      if (raw) jp["samples_ns"] = p.point.samples;
      pts.push_back(std::move(jp));
    }
    curves.push_back({{"delta_ns", c.delta_ns},
                      {"delta_achieved_ns", c.delta_achieved_ns},
                      {"delta_source", "spent inside the timed bursts (median per message)"},
                      {"delta_calibrated_ns", c.delta_calibrated_ns},
                      {"steady_reached", c.steady_reached},
                      {"extended_M_points", c.extended},
                      {"points", pts}});
  }
  return curves;
}

analysis::Curve to_fit_curve(const methods::SignatureCurve& c) {
  // With Delta > 0 the fit reads each point as its bursts' own cost net of their own Delta, plus the
  // curve's median Delta (so the fit's g' - Delta is the net cost, as spent in the same bursts).
  analysis::Curve f;
  f.delta_ns = c.delta_achieved_ns;
  for (const auto& p : c.points) {
    f.M.push_back(p.M);
    const bool net = c.delta_ns > 0 && p.net.n > 0 && std::isfinite(p.net.median);
    f.cost_ns.push_back(net ? p.net.median + c.delta_achieved_ns : p.point.value);
    f.ci95_ns.push_back(net && std::isfinite(p.net.ci95_median) ? p.net.ci95_median : p.point.ci95);
    f.converged.push_back(p.point.converged);
  }
  return f;
}

std::vector<analysis::Curve> to_fit_curves(const methods::SignatureData& d) {
  std::vector<analysis::Curve> out;
  for (const auto& c : d.curves) out.push_back(to_fit_curve(c));
  return out;
}

analysis::Param rtt_param(const Summary& s) {
  if (s.n == 0 || !(s.median > 0)) return analysis::Param::invalid("no round trip measured", s.median);
  analysis::Param p;
  p.value = p.raw = s.median;
  p.ci95 = std::isfinite(s.ci95_median) ? s.ci95_median : 0;
  p.valid = true;
  p.note = "median round trip";
  return p;
}

namespace {
analysis::Param pick(const analysis::SignatureFit& f, const std::string& k) {
  if (k == "o_s") return f.o_s;
  if (k == "o_r") return f.o_r;
  if (k == "g") return f.g;
  if (k == "L") return f.L;
  if (k == "g_ni") return f.g_ni;
  if (k == "idle") return f.idle;
  return f.rtt;
}
}  // namespace

void summarize_runs(ResultsDoc& doc, const std::vector<analysis::SignatureFit>& fits) {
  nlohmann::json params = nlohmann::json::object();
  for (const std::string k : {"o_s", "o_r", "g", "L", "rtt", "g_ni", "idle"}) {
    std::vector<analysis::Param> v;
    for (const auto& f : fits) v.push_back(pick(f, k));
    params[k] = analysis::combine_runs(v);
  }
  // The bottleneck the runs named; runs that disagree are named too.
  std::map<std::string, int> votes;
  for (const auto& f : fits) ++votes[f.bottleneck.empty() ? "unknown" : f.bottleneck];
  std::string named;
  for (const auto& [b, n] : votes) named += (named.empty() ? "" : ", ") + b + " (" + std::to_string(n) + " of " + std::to_string(fits.size()) + " runs)";
  params["g"]["bottleneck"] = votes.size() == 1 ? votes.begin()->first : named;
  params["g"]["method_sense"] = "Culler et al.: the steady-state cost per message at Delta = 0, the slowest stage including the processor";
  doc.j["parameters"] = params;
  nlohmann::json checks = nlohmann::json::array();
  for (std::size_t r = 0; r < fits.size(); ++r)
    for (const auto& c : fits[r].checks) {
      nlohmann::json jc = c;
      jc["run"] = r;
      checks.push_back(jc);
    }
  doc.j["checks"] = checks;
}

void summarize_pingpong_runs(ResultsDoc& doc, const std::vector<analysis::Param>& rtts) {
  doc.j["parameters"] = {{"rtt", analysis::combine_runs(rtts)}};
  doc.j["checks"] = nlohmann::json::array();
}

}  // namespace logpb::app

#include "analysis/loggp.hpp"

namespace logpb::app {
namespace {


void check(ResultsDoc& doc, const std::string& name, bool ok, const std::string& detail) {
  if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
  doc.j["checks"].push_back({{"name", name}, {"ok", ok}, {"detail", ok ? "" : detail}});
}

}  // namespace

std::vector<std::uint32_t> default_sizes(const std::string& bench, std::uint32_t max_bytes) {
  std::vector<std::uint32_t> v;
  if (bench == "bulk") v = {8, 64, 256, 1024, 4096};  // Culler et al. Figure 12 goes to 4 KiB
  else if (bench == "availability") v = {8, 64, 512, 4096, 32768};
  else v = {8, 32, 128, 512, 2048, 8192, 32768, 131072};  // Bell et al.: 8 B .. 128 KiB
  std::vector<std::uint32_t> out;
  for (auto n : v)
    if (n <= max_bytes) out.push_back(n);
  return out;
}

namespace {
analysis::Param param_of(double v, double ci, const std::string& note = "", const std::string& ci_method = "") {
  if (!std::isfinite(v)) return analysis::Param::invalid(note.empty() ? "not measured" : note);
  analysis::Param p;
  p.value = p.raw = v;
  p.ci95 = std::isfinite(ci) ? ci : 0;
  p.valid = true;
  p.note = note;
  p.ci_method = ci_method;
  return p;
}
// An overhead inferred by the overlap test: a positive value, or invalid with the reason (a non-positive
// one means the computation loop or the timer misbehaved, and is never shown as a figure).
analysis::Param overhead_param(const methods::OverlapSide& s) {
  if (!s.ok) return analysis::Param::invalid(s.note.empty() ? "overlap test not run at this size" : s.note);
  if (!(s.overhead > 0))
    return analysis::Param::invalid("the inferred overhead is not positive: the computation loop or the timer is wrong", s.overhead);
  return param_of(s.overhead, s.ci95, "", s.ci_method);
}
// One parameter over the runs (combine_runs), as JSON.
nlohmann::json over_runs(const std::vector<analysis::Param>& v) { return analysis::combine_runs(v); }
}  // namespace

nlohmann::json bell_json(ResultsDoc& doc, const std::vector<std::vector<methods::BellSize>>& runs, bool flood) {
  doc.j["checks"] = nlohmann::json::array();
  const auto& last = runs.back();
  nlohmann::json per = nlohmann::json::array();
  nlohmann::json params = nlohmann::json::object();
  for (std::size_t i = 0; i < last.size(); ++i) {
    const std::uint32_t n = last[i].bytes;
    nlohmann::json e = {{"bytes", n}};
    std::vector<analysis::Param> g, gni, rtt, os, orr;
    std::vector<std::string> stages;
    for (const auto& run : runs) {
      const auto& b = run[i];
      const auto o_s = overhead_param(b.send);
      const auto o_r = overhead_param(b.recv);
      os.push_back(o_s);
      orr.push_back(o_r);
      rtt.push_back(param_of(flood ? b.rtt.min : b.rtt.median, b.rtt.ci95, "", b.rtt.ci_method));
      if (flood) {
        g.push_back(param_of(b.gap.min, b.gap.ci95, "", b.gap.ci_method));
        if (b.overlap_run) {
          auto c = analysis::classify_flood(b.gap.min, b.gap.ci95, o_s, o_r);
          if (c.ni.valid) c.ni.ci_method = b.gap.ci_method;
          gni.push_back(c.ni);
          stages.push_back(c.stage.empty() ? "unknown" : c.stage);
        }
      }
    }
    if (flood) {
      e["g"] = over_runs(g);
      e["g"]["median_over_bell_runs_ns"] = last[i].gap.median;
      e["g"]["ci_method"] = last[i].gap.ci_method;
      e["g"]["estimator"] = "per run: the median time per message over segments of 64 past the first credits' worth "
                            "(interruptions left out); minimum over runs";
      e["g_total_over_n"] = over_runs({param_of(last[i].gap_total.min, last[i].gap_total.ci95, "",
                                                last[i].gap_total.ci_method)});
      e["rtt"] = over_runs(rtt);
      if (!gni.empty()) {
        e["g_ni"] = over_runs(gni);
        e["bottleneck"] = stages.back();
        e["o_s"] = over_runs(os);
        e["o_r"] = over_runs(orr);
        const auto& b = last[i];
        for (const auto* side : {&b.send, &b.recv}) {
          nlohmann::json c = nlohmann::json::array();
          for (const auto& p : side->curve) c.push_back({p.c_ns, p.t_ns, p.o_ns});
          e[side == &b.send ? "overlap_send_curve" : "overlap_recv_curve"] = c;
        }
      }
    } else {
      e["o_s"] = over_runs(os);
      e["o_r"] = over_runs(orr);
      e["rtt"] = over_runs(rtt);
      const auto& b = last[i];
      e["send_curve"] = nlohmann::json::array();
      for (const auto& p : b.send.curve) e["send_curve"].push_back({p.c_ns, p.t_ns, p.o_ns});
      e["recv_curve"] = nlohmann::json::array();
      for (const auto& p : b.recv.curve) e["recv_curve"].push_back({p.c_ns, p.t_ns, p.o_ns});
      e["t0_send_ns"] = b.send.t0_ns;
      e["t0_recv_ns"] = b.recv.t0_ns;
      e["hidden_c_send_ns"] = b.send.hidden_c_ns;
      e["hidden_c_recv_ns"] = b.recv.hidden_c_ns;
      for (const auto* side : {&b.send, &b.recv}) {
        const bool ok = side->ok && side->overhead > 0;
        check(doc, std::string("overhead inferred (") + (side == &b.send ? "send" : "recv") + " " + std::to_string(n) + " B)", ok,
              side->ok ? "a non-positive overhead: the computation loop or the timer is wrong" : side->note);
      }
    }
    per.push_back(e);
  }
  doc.j["per_size"] = per;
  if (flood && !last.empty()) {
    // g and G in Bell et al.'s sense (the flood's time per message and its per-byte slope), each run's
    // fit combined over runs; and which stage that was, from the overlap test at the end sizes.
    std::vector<analysis::Param> g, G, cross, gni, Gni;
    for (const auto& run : runs) {
      std::vector<double> sizes, gaps, cis;
      for (const auto& b : run) {
        sizes.push_back(b.bytes);
        gaps.push_back(b.gap.min);
        cis.push_back(b.gap.ci95);
      }
      auto f = analysis::fit_gap(sizes, gaps, cis);
      f.g.ci_method = run.front().gap.ci_method;
      g.push_back(f.g);
      G.push_back(f.G);
      cross.push_back(f.crossover);
      const auto& lo = run.front();
      const auto& hi = run.back();
      auto op = [](const methods::OverlapSide& s) { return overhead_param(s); };
      if (lo.overlap_run) {
        auto c = analysis::classify_flood(lo.gap.min, lo.gap.ci95, op(lo.send), op(lo.recv));
        if (c.ni.valid) c.ni.ci_method = lo.gap.ci_method;
        gni.push_back(c.ni);
      }
      if (hi.overlap_run && run.size() >= 2 && f.G.valid) {
        // G is the NI's only if the overheads at the largest size stay below the flood's time there.
        const auto c = analysis::classify_flood(hi.gap.min, hi.gap.ci95, op(hi.send), op(hi.recv));
        if (c.stage == analysis::kStageNI) {
          Gni.push_back(f.G);
        } else {
          Gni.push_back(analysis::Param::hidden("hidden: at " + std::to_string(hi.bytes) + " B the flood runs at the " +
                                                    (c.stage.empty() ? "an unknown stage" : c.stage) +
                                                    ", so the slope is a per-byte overhead; the NI's G is at most it",
                                                f.G.value, f.G.ci95));
        }
      }
    }
    params["g"] = over_runs(g);
    params["g"]["method_sense"] = "Bell et al.: time per message of a one-way flood at the smallest size: max(g_NI, o_s, o_r)";
    params["G"] = over_runs(G);
    params["crossover_bytes"] = over_runs(cross);
    if (!gni.empty()) {
      params["g_ni"] = over_runs(gni);
      const auto c = per.front().value("bottleneck", std::string());
      params["g"]["bottleneck"] = c;
    }
    if (!Gni.empty()) params["G_ni"] = over_runs(Gni);
    if (per.front().contains("o_s")) {
      params["o_s"] = per.front()["o_s"];
      params["o_r"] = per.front()["o_r"];
    }
    std::vector<analysis::Param> eel;
    for (const auto& run : runs) eel.push_back(param_of(run.front().rtt.min, run.front().rtt.ci95, "", run.front().rtt.ci_method));
    params["rtt"] = over_runs(eel);
    params["rtt"]["note"] = "EEL: round trip of the " + std::to_string(last.front().bytes) + "-byte minimum message (min over runs)";
    if (last.size() >= 2) check(doc, "G > 0", params["G"]["value_ns"].is_number(), "the flood's time does not grow with size");
  } else if (!last.empty()) {
    params["o_s"] = per.front()["o_s"];
    params["o_r"] = per.front()["o_r"];
    params["rtt"] = per.front()["rtt"];
  }
  doc.j["parameters"] = params;
  const auto& b0 = last.front();
  nlohmann::json raw = nlohmann::json::array();
  for (const auto& b : last)
    raw.push_back({{"bytes", b.bytes}, {"gap_runs_ns", b.gap.runs}, {"gap_total_over_n_runs_ns", b.gap_total.runs}, {"rtt_runs_ns", b.rtt.runs},
                   {"o_s_runs_ns", b.send.per_run_overhead}, {"o_r_runs_ns", b.recv.per_run_overhead}});
  (void)b0;
  return {{"method", flood ? "Bell et al. flood (section 4.2): one-way messages, local completion, one final reply"
                           : "Bell et al. CPU overlap (section 4.3): q = 1, overhead inferred from the hidden computation"},
          {"raw", raw}};
}

nlohmann::json kielmann_json(ResultsDoc& doc, const std::vector<methods::KielmannResult>& runs) {
  doc.j["checks"] = nlohmann::json::array();
  const auto& r = runs.back();
  // Per size, over runs; sizes are those of the last run (each run may extend differently: a size
  // missing from a run counts as not measured there).
  auto find = [](const methods::KielmannResult& k, std::uint32_t m) -> const methods::KielmannSize* {
    for (const auto& x : k.sizes)
      if (x.bytes == m) return &x;
    return nullptr;
  };
  struct Derived {
    analysis::Param g, G, L_plogp, L, o_s, o_r, rtt, g0;
  };
  auto derive = [&](const methods::KielmannResult& k, std::uint32_t m) {
    Derived d;
    const auto* zero = find(k, 0);
    const auto* one = find(k, 1);
    const auto* x = find(k, m);
    const bool g0ok = std::isfinite(k.g0);
    d.g0 = g0ok ? param_of(k.g0, k.g0_ci, "", "Student-t over 5 repeats of the converged saturation")
                : analysis::Param::invalid(k.notes.empty() ? "g(0) not measured" : k.notes.front());
    if (!x || !zero) return d;
    d.o_s = param_of(x->o_s, x->o_s_ci);
    d.o_r = param_of(x->o_r, x->o_r_ci);
    d.rtt = param_of(x->rtt, x->rtt_ci);
    if (g0ok) {
      const double ci = std::sqrt(x->rtt_ci * x->rtt_ci + zero->rtt_ci * zero->rtt_ci + k.g0_ci * k.g0_ci);
      d.g = param_of(x->g, ci, "", "RTT(m) - RTT(0) + g(0): intervals added in quadrature");
      if (m > 0) d.G = param_of(x->g / m, ci / m);
      const double Lp = (zero->rtt - 2 * k.g0) / 2;
      const double Lp_ci = std::sqrt(zero->rtt_ci * zero->rtt_ci + 4 * k.g0_ci * k.g0_ci) / 2;
      d.L_plogp = Lp >= 0 ? param_of(Lp, Lp_ci) : analysis::Param::invalid("(RTT(0) - 2 g(0)) / 2 is negative", Lp);
      if (one) {
        // Table 1: LogP's L = L + g(1) - o_s(1) - o_r(1).
        const double L = Lp + one->g - one->o_s - one->o_r;
        const double L_ci = std::sqrt(Lp_ci * Lp_ci + ci * ci + one->o_s_ci * one->o_s_ci + one->o_r_ci * one->o_r_ci);
        d.L = L >= 0 ? param_of(L, L_ci) : analysis::Param::invalid("LogP's L by Table 1 is negative", L);
      }
    } else {
      d.g = d.G = d.L_plogp = d.L = analysis::Param::invalid("needs g(0), whose saturation did not converge");
    }
    return d;
  };
  nlohmann::json per = nlohmann::json::array();
  for (const auto& k : r.sizes) {
    std::vector<analysis::Param> os, orr, rtt, g, gs;
    for (const auto& run : runs) {
      const Derived d = derive(run, k.bytes);
      os.push_back(d.o_s);
      orr.push_back(d.o_r);
      rtt.push_back(d.rtt);
      g.push_back(d.g);
      const auto* x = find(run, k.bytes);
      if (x && std::isfinite(x->g_saturation)) gs.push_back(param_of(x->g_saturation, x->g_saturation_ci));
    }
    nlohmann::json e = {{"bytes", k.bytes}, {"o_s", over_runs(os)}, {"o_r", over_runs(orr)}, {"rtt", over_runs(rtt)},
                        {"g", over_runs(g)}, {"samples", k.samples}};
    if (!gs.empty()) {
      e["g_saturation"] = over_runs(gs);
      if (std::isfinite(k.g) && std::isfinite(k.g_saturation)) e["g_fast_vs_saturation"] = k.g / k.g_saturation;
    }
    per.push_back(e);
  }
  doc.j["per_size"] = per;
  nlohmann::json p = nlohmann::json::object();
  if (find(r, 0) && find(r, 1)) {
    std::vector<analysis::Param> os, orr, g, g0, rtt, Lp, L, G, gni;
    std::vector<std::string> stages;
    const std::uint32_t big = r.sizes.back().bytes;
    for (const auto& run : runs) {
      const Derived d1 = derive(run, 1), d0 = derive(run, 0), dbig = derive(run, big);
      os.push_back(d1.o_s);
      orr.push_back(d1.o_r);
      g.push_back(d1.g);
      g0.push_back(d0.g0);
      rtt.push_back(d0.rtt);
      Lp.push_back(d0.L_plogp);
      L.push_back(d1.L);
      G.push_back(dbig.G);
      // g(0) by saturation is the sender's injection interval: max(g_NI, o_s(0), o_r(0)). Which one it
      // was, from the o_s(0) and o_r(0) this method measures itself.
      const auto c = analysis::classify_flood(d0.g0.valid ? d0.g0.value : NAN, d0.g0.ci95, d0.o_s, d0.o_r);
      gni.push_back(c.ni);
      stages.push_back(c.stage.empty() ? "unknown" : c.stage);
    }
    p["o_s"] = over_runs(os);
    p["o_r"] = over_runs(orr);
    p["g"] = over_runs(g);
    p["g"]["method_sense"] = "Kielmann et al. Table 1: LogP's g = g(1) = RTT(1) - RTT(0) + g(0)";
    p["g0"] = over_runs(g0);
    p["g0"]["method_sense"] = "g(0) by saturation: n one-way messages and one reply, the sender's injection interval";
    p["g0"]["bottleneck"] = stages.back();
    p["g0"]["estimator"] = "saturated once RTT_n / n changes by less than eps and RTT_1 < eps RTT_n (the paper's rule); "
                           "the figure is the median over 5 streams of that n of the receiver's credit-return rate";
    if (std::isfinite(r.g0_total_over_n)) p["g0"]["rtt_n_over_n_ns"] = r.g0_total_over_n;
    p["g_ni"] = over_runs(gni);
    p["rtt"] = over_runs(rtt);
    p["L_plogp"] = over_runs(Lp);
    p["L"] = over_runs(L);
    p["G"] = over_runs(G);
    p["G"]["note"] = "g(m)/m at the largest m (" + std::to_string(big) + " B), Table 1";
    check(doc, "L_plogp >= 0", p["L_plogp"]["value_ns"].is_number(), "RTT(0) < 2 g(0): saturation and round trips disagree");
    check(doc, "g(0) saturation converged", r.g0_converged, r.notes.empty() ? "" : r.notes.front());
    for (const auto& k : r.sizes)
      if (std::isfinite(k.o_r) && std::isfinite(k.g) && k.o_r > k.g + k.o_r_ci)
        check(doc, "o_r <= g at " + std::to_string(k.bytes) + " B", false,
              "o_r(m) > g(m): unexpected messages cost more to receive than expected ones (Kielmann et al. 3.1)");
  }
  doc.j["parameters"] = p;
  const double ratio = r.fast_seconds > 0 && r.saturation_seconds > 0 ? r.saturation_seconds / r.fast_seconds : NAN;
  return {{"method", "Kielmann et al. parameterized LogP (section 3)"},
          {"g0_messages", r.g0_n},
          {"g0_converged", r.g0_converged},
          {"notes", r.notes},
          {"fast_seconds", r.fast_seconds},
          {"saturation_seconds", r.saturation_seconds},
          {"saturation_vs_fast_time", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(nullptr)}};
}

nlohmann::json doerfler_json(ResultsDoc& doc, const std::vector<std::vector<methods::DoerflerSize>>& runs, const Options& o) {
  doc.j["checks"] = nlohmann::json::array();
  const auto& v = runs.back();
  nlohmann::json per = nlohmann::json::array(), curves = nlohmann::json::array();
  const std::string how = "order-statistic interval of the median of (iteration - work) per iteration at the stop point";
  for (std::size_t i = 0; i < v.size(); ++i) {
    nlohmann::json e = {{"bytes", v[i].bytes}};
    for (const bool send : {true, false}) {
      std::vector<analysis::Param> over, avail;
      for (const auto& run : runs) {
        const auto& s = send ? run[i].send : run[i].recv;
        over.push_back(!s.completed ? analysis::Param::invalid("the iteration time never reached the stop threshold")
                       : !(s.overhead > 0) ? analysis::Param::invalid("iteration minus work is not positive: the work loop "
                                                                      "or the timer is wrong", s.overhead)
                                           : param_of(s.overhead, s.overhead_ci, "", how));
        // availability is a fraction, carried in Param's value for combine_runs.
        avail.push_back(s.completed && s.availability >= 0 && s.availability <= 1
                            ? param_of(s.availability, s.availability_ci)
                            : analysis::Param::invalid(s.completed ? "overhead exceeds the transfer time or is negative"
                                                                   : "the stop threshold was never reached",
                                                       s.availability));
      }
      const auto& s = send ? v[i].send : v[i].recv;
      nlohmann::json side = {{"overhead", over_runs(over)}, {"base_t_ns", s.base_t}, {"iter_t_ns", s.iter_t}, {"work_t_ns", s.work_t}};
      const auto a = analysis::combine_runs(avail);
      side["availability"] = a.param.valid ? nlohmann::json(a.param.value) : nlohmann::json(nullptr);
      side["availability_ci95"] = a.param.valid ? nlohmann::json(a.param.ci95) : nlohmann::json(nullptr);
      if (!a.param.valid) side["availability_error"] = a.param.note;
      e[send ? "send" : "recv"] = side;
      e[send ? "o_s" : "o_r"] = side["overhead"];
      const bool ok = a.param.valid;
      check(doc, std::string("availability in [0,1] (") + (send ? "send" : "recv") + " " + std::to_string(v[i].bytes) + " B)", ok,
            a.param.note);
    }
    per.push_back(e);
    nlohmann::json cs = nlohmann::json::array(), cr = nlohmann::json::array();
    for (const auto& p : v[i].send.curve) cs.push_back({p.work_ns, p.iter_ns});
    for (const auto& p : v[i].recv.curve) cr.push_back({p.work_ns, p.iter_ns});
    curves.push_back({{"bytes", v[i].bytes}, {"send_work_iter_ns", cs}, {"recv_work_iter_ns", cr}});
  }
  doc.j["per_size"] = per;
  if (!v.empty()) {
    doc.j["parameters"] = {{"o_s", per.front()["o_s"]}, {"o_r", per.front()["o_r"]}};
    doc.j["parameters"]["o_s"]["note"] = "Doerfler & Brightwell send overhead at " + std::to_string(v.front().bytes) +
                                         " B: post, then wait for local completion (the NI is done with the buffer)";
    doc.j["parameters"]["o_r"]["note"] = "Doerfler & Brightwell receive overhead at the smallest size";
  }
  return {{"method", "Doerfler & Brightwell post-work-wait (section 2), waiting for local completion"},
          {"base_threshold", o.base_threshold},
          {"stop_threshold", o.stop_threshold},
          {"curves", curves}};
}

nlohmann::json bulk_json(ResultsDoc& doc, const std::vector<std::vector<methods::BulkSize>>& runs, bool raw) {
  doc.j["checks"] = nlohmann::json::array();
  const auto& v = runs.back();
  nlohmann::json per = nlohmann::json::array();
  std::vector<analysis::Param> T0, Rinf;
  for (const auto& run : runs) {
    std::vector<double> sizes, T;
    for (const auto& b : run) {
      sizes.push_back(b.bytes);
      T.push_back(b.round_trip.median);
    }
    const auto naive = analysis::fit_naive_bulk(sizes, T);
    T0.push_back(naive.T0);
    Rinf.push_back(naive.R_inf);
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::vector<analysis::Param> rtt, get, os, g;
    for (const auto& run : runs) {
      const auto& b = run[i];
      const auto c = to_fit_curve(b.curve);
      os.push_back(analysis::send_only_cost(c).o_s);
      g.push_back(analysis::steady_state_cost(c).cost);
      rtt.push_back(param_of(b.round_trip.median, b.round_trip.ci95_median));
      get.push_back(param_of(b.get_round_trip.median, b.get_round_trip.ci95_median));
    }
    const auto r = analysis::combine_runs(rtt);
    per.push_back({{"bytes", v[i].bytes},
                   {"rtt", r},
                   {"bandwidth_bytes_per_ns", r.param.valid ? nlohmann::json(v[i].bytes / r.param.value) : nlohmann::json(nullptr)},
                   {"get_rtt", over_runs(get)},
                   {"o_s", over_runs(os)},
                   {"g", over_runs(g)}});
  }
  doc.j["per_size"] = per;
  doc.j["parameters"] = {{"T0", over_runs(T0)}, {"R_inf_bytes_per_ns", over_runs(Rinf)}};
  if (!v.empty()) {
    doc.j["parameters"]["o_s"] = per.front()["o_s"];
    doc.j["parameters"]["rtt"] = per.front()["rtt"];
  }
  check(doc, "naive bulk model T_0 >= 0", doc.j["parameters"]["T0"]["value_ns"].is_number(),
        "T_0 of the naive fit is negative: T(n) is not linear in n and T_0 means nothing (Culler et al. section 4)");
  methods::SignatureData sig;
  for (const auto& b : v) sig.curves.push_back(b.curve);
  nlohmann::json curves = signature_curves_json(sig, raw);
  for (std::size_t i = 0; i < v.size(); ++i) curves[i]["bytes"] = v[i].bytes;
  return {{"method", "Culler et al. bulk transfer (section 4)"}, {"signature_per_size", curves}};
}

}  // namespace logpb::app
