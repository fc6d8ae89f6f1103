#include "bench_runner.hpp"

#include <algorithm>

namespace logpb::app {

nlohmann::json distribution_json(const std::vector<double>& samples, bool raw) {
  const Summary s = summarize(samples);
  nlohmann::json j = {{"summary", s}};
  if (samples.empty()) return j;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  nlohmann::json pct = nlohmann::json::object();
  for (double q : {0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 0.9999}) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q * 100);
    pct[key] = v[i];
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
                           {"ci95_ns", p.point.ci95},
                           {"converged", p.point.converged},
                           {"discarded", p.point.discarded},
                           {"summary", p.point.summary}};
      if (raw) jp["samples_ns"] = p.point.samples;
      pts.push_back(std::move(jp));
    }
    curves.push_back({{"delta_ns", c.delta_ns}, {"delta_achieved_ns", c.delta_achieved_ns}, {"delta_mean_ns", c.delta_mean_ns}, {"points", pts}});
  }
  return curves;
}

std::vector<analysis::Curve> to_fit_curves(const methods::SignatureData& d) {
  std::vector<analysis::Curve> out;
  for (const auto& c : d.curves) {
    analysis::Curve f;
    f.delta_ns = c.delta_achieved_ns;
    for (const auto& p : c.points) {
      f.M.push_back(p.M);
      f.cost_ns.push_back(p.point.value);
      f.ci95_ns.push_back(p.point.ci95);
    }
    out.push_back(std::move(f));
  }
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
  return f.rtt;
}
}  // namespace

void summarize_runs(ResultsDoc& doc, const std::vector<analysis::SignatureFit>& fits) {
  nlohmann::json params = nlohmann::json::object();
  for (const std::string k : {"o_s", "o_r", "g", "L", "rtt"}) {
    std::vector<analysis::Param> v;
    for (const auto& f : fits) v.push_back(pick(f, k));
    params[k] = analysis::combine_runs(v);
  }
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

nlohmann::json pj(double v, double ci, const std::string& note = "") {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"value_ns", num(v)}, {"ci95_ns", std::isfinite(v) ? num(std::isfinite(ci) ? ci : 0) : nullptr}};
  if (!std::isfinite(v)) j["error"] = note.empty() ? "not measured" : note;
  else if (!note.empty()) j["note"] = note;
  return j;
}
nlohmann::json pj(const analysis::Param& p) { return p; }

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

nlohmann::json bell_json(ResultsDoc& doc, const std::vector<methods::BellSize>& v, bool flood) {
  nlohmann::json per = nlohmann::json::array(), raw = nlohmann::json::array();
  std::vector<double> sizes, gaps, cis;
  for (const auto& b : v) {
    nlohmann::json e = {{"bytes", b.bytes}};
    if (flood) {
      e["g"] = pj(b.gap.min, b.gap.ci95);
      e["g"]["median_ns"] = b.gap.median;
      e["rtt"] = pj(b.rtt.min, b.rtt.ci95);
      e["rtt"]["median_ns"] = b.rtt.median;
      sizes.push_back(b.bytes);
      gaps.push_back(b.gap.min);
      cis.push_back(b.gap.ci95);
    } else {
      e["o_s"] = pj(b.o_s.min, b.o_s.ci95);
      e["o_s"]["median_ns"] = b.o_s.median;
      e["o_r"] = pj(b.o_r.min, b.o_r.ci95);
      e["o_r"]["median_ns"] = b.o_r.median;
      e["rtt"] = pj(b.rtt.median, 0);
    }
    per.push_back(e);
    raw.push_back({{"bytes", b.bytes}, {"gap_runs_ns", b.gap.runs}, {"rtt_runs_ns", b.rtt.runs},
                   {"o_s_runs_ns", b.o_s.runs}, {"o_r_runs_ns", b.o_r.runs}});
  }
  doc.j["per_size"] = per;
  nlohmann::json params = nlohmann::json::object();
  if (flood && !v.empty()) {
    const auto f = analysis::fit_gap(sizes, gaps, cis);
    params["g"] = pj(f.g);
    params["G"] = pj(f.G);
    params["rtt"] = pj(v.front().rtt.min, v.front().rtt.ci95, "");
    params["rtt"]["note"] = "EEL: round trip of the " + std::to_string(v.front().bytes) + "-byte minimum message (min over runs)";
    params["crossover_bytes"] = pj(f.crossover);
    check(doc, "G > 0", f.G.valid, f.G.note);
  } else if (!v.empty()) {
    params["o_s"] = pj(v.front().o_s.min, v.front().o_s.ci95, "");
    params["o_r"] = pj(v.front().o_r.min, v.front().o_r.ci95, "");
    for (const auto& b : v) {
      const bool ok = b.o_s.min > 0 && b.o_r.min > 0;
      check(doc, "overheads positive at " + std::to_string(b.bytes) + " B", ok, "a non-positive overhead: timer problem");
    }
  }
  doc.j["parameters"] = params;
  return {{"method", flood ? "Bell et al. flood (section 4)" : "Bell et al. CPU overlap (section 4)"}, {"raw", raw}};
}

nlohmann::json kielmann_json(ResultsDoc& doc, const methods::KielmannResult& r) {
  nlohmann::json per = nlohmann::json::array();
  const methods::KielmannSize* zero = nullptr;
  const methods::KielmannSize* one = nullptr;
  for (const auto& k : r.sizes) {
    if (k.bytes == 0) zero = &k;
    if (k.bytes == 1) one = &k;
    nlohmann::json e = {{"bytes", k.bytes},
                        {"o_s", pj(k.o_s, k.o_s_ci)},
                        {"o_r", pj(k.o_r, k.o_r_ci)},
                        {"rtt", pj(k.rtt, k.rtt_ci)},
                        {"g", pj(k.g, std::hypot(k.rtt_ci, zero ? zero->rtt_ci : 0))},
                        {"samples", k.samples}};
    if (k.g_saturation == k.g_saturation) {
      e["g_saturation"] = pj(k.g_saturation, 0);
      e["g_fast_vs_saturation"] = k.g / k.g_saturation;
    }
    per.push_back(e);
  }
  doc.j["per_size"] = per;
  nlohmann::json p = nlohmann::json::object();
  if (zero && one) {
    const double L_plogp = (zero->rtt - 2 * r.g0) / 2;
    // Table 1: LogP's L = L + g(1) - o_s(1) - o_r(1); o = (o_s(1) + o_r(1)) / 2; g = g(1); G = g(m)/m.
    const double L = L_plogp + one->g - one->o_s - one->o_r;
    p["o_s"] = pj(one->o_s, one->o_s_ci, "");
    p["o_r"] = pj(one->o_r, one->o_r_ci, "");
    p["g"] = pj(one->g, 0, "");
    p["g0"] = pj(r.g0, 0, "");
    p["rtt"] = pj(zero->rtt, zero->rtt_ci, "");
    p["L_plogp"] = L_plogp >= 0 ? pj(L_plogp, zero->rtt_ci / 2) : pj(NAN, 0, "(RTT(0) - 2 g(0)) / 2 is negative");
    p["L"] = L >= 0 ? pj(L, zero->rtt_ci / 2) : pj(NAN, 0, "LogP's L by Table 1 is negative");
    const auto& big = r.sizes.back();
    p["G"] = pj(big.g / big.bytes, 0, "");
    p["G"]["note"] = "g(m)/m at the largest m (" + std::to_string(big.bytes) + " B), Table 1";
    check(doc, "L_plogp >= 0", L_plogp >= 0, "RTT(0) < 2 g(0): saturation and round trips disagree");
    for (const auto& k : r.sizes)
      if (k.o_r > k.g)
        check(doc, "o_r <= g at " + std::to_string(k.bytes) + " B", false,
              "o_r(m) > g(m): unexpected messages cost more to receive than expected ones (Kielmann et al. 3.1)");
  }
  doc.j["parameters"] = p;
  const double ratio = r.fast_seconds > 0 && r.saturation_seconds > 0 ? r.saturation_seconds / r.fast_seconds : NAN;
  return {{"method", "Kielmann et al. parameterized LogP (section 3)"},
          {"g0_messages", r.g0_n},
          {"fast_seconds", r.fast_seconds},
          {"saturation_seconds", r.saturation_seconds},
          {"saturation_vs_fast_time", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(nullptr)}};
}

nlohmann::json doerfler_json(ResultsDoc& doc, const std::vector<methods::DoerflerSize>& v, const Options& o) {
  nlohmann::json per = nlohmann::json::array(), curves = nlohmann::json::array();
  auto side = [](const methods::DoerflerSide& s) {
    nlohmann::json j = {{"overhead", pj(s.overhead, 0, s.completed ? "" : "the iteration time never reached the stop threshold")},
                        {"availability", std::isfinite(s.availability) ? nlohmann::json(s.availability) : nlohmann::json(nullptr)},
                        {"base_t_ns", s.base_t}, {"iter_t_ns", s.iter_t}, {"work_t_ns", s.work_t}};
    return j;
  };
  for (const auto& d : v) {
    per.push_back({{"bytes", d.bytes}, {"send", side(d.send)}, {"recv", side(d.recv)}, {"o_s", pj(d.send.overhead, 0)},
                   {"o_r", pj(d.recv.overhead, 0)}});
    nlohmann::json cs = nlohmann::json::array(), cr = nlohmann::json::array();
    for (const auto& p : d.send.curve) cs.push_back({p.work_ns, p.iter_ns});
    for (const auto& p : d.recv.curve) cr.push_back({p.work_ns, p.iter_ns});
    curves.push_back({{"bytes", d.bytes}, {"send_work_iter_ns", cs}, {"recv_work_iter_ns", cr}});
    for (const auto* s : {&d.send, &d.recv}) {
      const bool ok = s->completed && s->availability >= 0 && s->availability <= 1;
      check(doc, std::string("availability in [0,1] (") + (s == &d.send ? "send" : "recv") + " " + std::to_string(d.bytes) + " B)",
            ok, s->completed ? "overhead exceeds the transfer time or is negative: the loop's assumptions fail here"
                             : "the stop threshold was never reached");
    }
  }
  doc.j["per_size"] = per;
  if (!v.empty())
    doc.j["parameters"] = {{"o_s", pj(v.front().send.overhead, 0, "")}, {"o_r", pj(v.front().recv.overhead, 0, "")}};
  doc.j["parameters"]["o_s"]["note"] = "Doerfler & Brightwell send overhead at " + std::to_string(v.empty() ? 0 : v.front().bytes) + " B (includes completing the send)";
  doc.j["parameters"]["o_r"]["note"] = "Doerfler & Brightwell receive overhead at the smallest size";
  return {{"method", "Doerfler & Brightwell post-work-wait (section 2)"},
          {"base_threshold", o.base_threshold},
          {"stop_threshold", o.stop_threshold},
          {"curves", curves}};
}

nlohmann::json bulk_json(ResultsDoc& doc, const std::vector<methods::BulkSize>& v, bool raw) {
  nlohmann::json per = nlohmann::json::array();
  methods::SignatureData sig;
  std::vector<double> sizes, T;
  for (const auto& b : v) {
    methods::SignatureData one;
    one.curves.push_back(b.curve);
    const auto c = to_fit_curves(one).front();
    const auto os = analysis::send_only_cost(c).o_s;
    const auto g = analysis::steady_state_cost(c).cost;
    nlohmann::json e = {{"bytes", b.bytes},
                        {"rtt", pj(b.round_trip.median, b.round_trip.ci95_median)},
                        {"bandwidth_bytes_per_ns", b.bytes / b.round_trip.median},
                        {"get_rtt", pj(b.get_round_trip.median, b.get_round_trip.ci95_median)},
                        {"o_s", os},
                        {"g", g}};
    per.push_back(e);
    sig.curves.push_back(b.curve);
    sizes.push_back(b.bytes);
    T.push_back(b.round_trip.median);
  }
  doc.j["per_size"] = per;
  const auto naive = analysis::fit_naive_bulk(sizes, T);
  doc.j["parameters"] = {{"T0", naive.T0}, {"R_inf_bytes_per_ns", naive.R_inf}};
  if (!v.empty()) {
    doc.j["parameters"]["o_s"] = per.front()["o_s"];
    doc.j["parameters"]["rtt"] = per.front()["rtt"];
  }
  check(doc, "naive bulk model T_0 >= 0", naive.T0.valid, naive.warning);
  nlohmann::json curves = signature_curves_json(sig, raw);
  for (std::size_t i = 0; i < v.size(); ++i) curves[i]["bytes"] = v[i].bytes;
  return {{"method", "Culler et al. bulk transfer (section 4)"}, {"signature_per_size", curves}};
}

}  // namespace logpb::app
