#include "methods/kielmann/analysis.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "common/disturbance.hpp"
#include "analysis/loggp.hpp"
#include "analysis/results_json.hpp"

namespace logpb::methods {

using namespace analysis;

namespace {

const methods::KielmannSize* find(const methods::KielmannResult& k, std::uint32_t m) {
  for (const auto& x : k.sizes)
    if (x.bytes == m) return &x;
  return nullptr;
}

PLogPPoint point(const methods::KielmannSize& k) { return {k.rtt, k.rtt_ci, k.o_s, k.o_s_ci, k.o_r, k.o_r_ci}; }

// One run's figures at size m: as measured (o_s, o_r, RTT), and converted by Table 1.
struct Derived {
  Param g, G, L_plogp, L, o_s, o_r, rtt, g0;
  bool g_contradicts = false;  // g(m) < 0 beyond its interval (plogp_to_loggp)
};
Derived derive(const methods::KielmannResult& k, std::uint32_t m) {
  Derived d;
  const auto* zero = find(k, 0);
  const auto* one = find(k, 1);
  const auto* x = find(k, m);
  d.g0 = std::isfinite(k.g0) ? param_of(k.g0, k.g0_ci, "", k.g0_ci_method)
                             : Param::invalid(k.notes.empty() ? "g(0) not measured" : k.notes.front());
  if (!x || !zero) return d;
  d.o_s = param_of(x->o_s, x->o_s_ci);
  d.o_r = param_of(x->o_r, x->o_r_ci);
  d.rtt = param_of(x->rtt, x->rtt_ci);
  const PLogPPoint p1 = one ? point(*one) : PLogPPoint{};
  const auto c = plogp_to_loggp(m, point(*x), point(*zero), one ? &p1 : nullptr, k.g0, k.g0_ci);
  d.g = c.g;
  d.G = c.G;
  d.L_plogp = c.L_plogp;
  d.L = c.L;
  d.g_contradicts = c.g_contradicts;
  return d;
}

std::string fmt_ns(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ns", ns);
  return b;
}

// Credits can be what a saturation measures (Kielmann et al.'s n messages and one reply): the sender holds
// C one-way credits and asks for more once C/2 remain, so it stalls unless a credit round trip (about
// RTT(0)) is shorter than the C/2 messages it may still send meanwhile. Within a factor kCreditMargin of
// RTT(0) / (C/2), g(0) may be that round trip spread over the messages, not the sender, NI or receiver.
constexpr double kCreditMargin = 2;
struct CreditLimit {
  bool limits = false;
  double bound_ns = NAN;  // RTT(0) / (C/2): the time per message the credits alone allow
};
CreditLimit credit_limit(const methods::KielmannResult& k) {
  CreditLimit c;
  const auto* zero = find(k, 0);
  if (!zero || k.credits < 2 || !std::isfinite(k.g0) || !std::isfinite(zero->rtt)) return c;
  c.bound_ns = zero->rtt / (k.credits / 2.0);
  c.limits = k.g0 <= kCreditMargin * c.bound_ns;
  return c;
}

// A check that may fail at many sizes: one line, the sizes where it failed listed in the JSON.
void add_size_check(nlohmann::json& checks, const std::string& name, const std::vector<std::uint32_t>& failed,
                    std::size_t of, const std::string& what) {
  std::string detail;
  if (!failed.empty())
    detail = what + " at " + std::to_string(failed.size()) + " of " + std::to_string(of) + " sizes (" +
             std::to_string(failed.front()) + " B .. " + std::to_string(failed.back()) +
             " B; the sizes are in this "
             "check's \"sizes\")";
  add_check(checks, name, failed.empty(), detail);
  checks.back()["sizes"] = failed;
}

}  // namespace

nlohmann::json kielmann_record(const methods::KielmannResult& r) {
  const double ratio = r.fast_seconds > 0 && r.saturation_seconds > 0 ? r.saturation_seconds / r.fast_seconds : NAN;
  return {{"method", "Kielmann et al. parameterized LogP (section 3)"},
          {"g0_messages", r.g0_n},
          {"g0_converged", r.g0_converged},
          {"g0_rule", r.g0_rule},
          {"g0_segments", r.g0_segments.to_json()},
          {"notes", r.notes},
          {"credits", r.credits},
          {"o_s_send_call",
           "the AM request or store alone: the layer's poll before a send (GAM's am_request) is left out "
           "of the timed round trips, as an MPI send call polls for nothing"},
          {"saturation_compared", r.saturation_seconds > 0},
          {"fast_seconds", r.fast_seconds},
          {"saturation_seconds", r.saturation_seconds},
          {"saturation_vs_fast_time", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(nullptr)}};
}

namespace {
using Runs = std::vector<methods::KielmannResult>;

// Per size, over runs; sizes are those of the last run (each run may extend differently: a size
// missing from a run counts as not measured there).
nlohmann::json per_size(const Runs& runs) {
  nlohmann::json per = nlohmann::json::array();
  for (const auto& k : runs.back().sizes) {
    std::vector<Param> os, orr, rtt, g, gs;
    for (const auto& run : runs) {
      const Derived d = derive(run, k.bytes);
      os.push_back(d.o_s);
      orr.push_back(d.o_r);
      rtt.push_back(d.rtt);
      g.push_back(d.g);
      const auto* x = find(run, k.bytes);
      if (x && std::isfinite(x->g_saturation)) gs.push_back(param_of(x->g_saturation, x->g_saturation_ci));
    }
    nlohmann::json e = {{"bytes", k.bytes},      {"o_s", over_runs(os)}, {"o_r", over_runs(orr)},
                        {"rtt", over_runs(rtt)}, {"g", over_runs(g)},    {"samples", k.samples}};
    if (!gs.empty()) {
      e["g_saturation"] = over_runs(gs);
      if (std::isfinite(k.g) && k.g > 0 && std::isfinite(k.g_saturation))
        e["g_fast_vs_saturation"] = k.g / k.g_saturation;
    }
    per.push_back(e);
  }
  return per;
}

// g(0) by saturation is the sender's injection interval: max(g_NI, o_s(0), o_r(0)). Which one it was, from
// the o_s(0) and o_r(0) this method measures itself; hidden where the one-way credits may have set the pace.
std::pair<Param, std::string> ni_gap(const methods::KielmannResult& run, const Derived& d0) {
  const auto c = classify_flood(d0.g0.valid ? d0.g0.value : NAN, d0.g0.ci95, d0.o_s, d0.o_r);
  const CreditLimit cl = credit_limit(run);
  if (!cl.limits) return {c.ni, c.stage.empty() ? "unknown" : c.stage};
  return {Param::hidden(
              "hidden: the saturation may run at the credit round trip, not at the NI: " + std::to_string(run.credits) +
                  " one-way credits, asked back once half are spent, allow RTT(0) / (C/2) = " + fmt_ns(cl.bound_ns) +
                  " per message, within " + std::to_string(static_cast<int>(kCreditMargin)) +
                  "x of g(0) = " + fmt_ns(run.g0) +
                  "; the NI's gap is at most g(0) (more --credits, with NI queues to hold them, would show more)",
              run.g0, run.g0_ci),
          "one-way credits (C = " + std::to_string(run.credits) + ")"};
}

// Table 1's figures of every run, to be combined over runs.
struct TableOne {
  std::vector<Param> os, orr, os0, or0, sum, g, g0, rtt, Lp, L, G, gni;
  std::vector<std::string> stages;
};
TableOne table_one(const Runs& runs, std::uint32_t big) {
  TableOne t;
  for (const auto& run : runs) {
    const Derived d1 = derive(run, 1), d0 = derive(run, 0), dbig = derive(run, big);
    t.os.push_back(d1.o_s);
    t.orr.push_back(d1.o_r);
    // At m = 0 a message is one frame, as the signature's requests and replies are; a message of m >= 1 B is
    // a bulk store in the AM layer (its data and a frame: two sends on libfabric, whose tcp provider read
    // o_s(0) 5.1-7.4 us against o_s(1) 12.0-17.2 us). The one LogP table compares like with like at m = 0.
    t.os0.push_back(d0.o_s);
    t.or0.push_back(d0.o_r);
    // The requester's own cost of one request/reply pair of frames, the signature's g' - Delta (Culler et al.
    // 3.3): the two timed apart, from independent samples.
    if (d0.o_s.valid && d0.o_r.valid)
      t.sum.push_back(param_of(d0.o_s.value + d0.o_r.value, std::hypot(d0.o_s.ci95, d0.o_r.ci95), "",
                               "o_s(0) and o_r(0) summed, their intervals in quadrature"));
    else
      t.sum.push_back(Param::invalid("needs o_s(0) and o_r(0)"));
    t.g.push_back(d1.g);
    t.g0.push_back(d0.g0);
    t.rtt.push_back(d0.rtt);
    t.Lp.push_back(d0.L_plogp);
    t.L.push_back(d1.L);
    t.G.push_back(dbig.G);
    auto [ni, stage] = ni_gap(run, d0);
    t.gni.push_back(ni);
    t.stages.push_back(stage);
  }
  return t;
}

// The parameters over runs, each with what it means here.
nlohmann::json table_one_json(const TableOne& t, const methods::KielmannResult& r, std::uint32_t big) {
  nlohmann::json p = nlohmann::json::object();
  p["o_s"] = over_runs(t.os);
  p["o_r"] = over_runs(t.orr);
  p["o_s_0"] = over_runs(t.os0);
  p["o_s_0"]["note"] = "o_s(0): the send call of one frame, no bulk data";
  p["o_r_0"] = over_runs(t.or0);
  p["o_r_0"]["note"] = "o_r(0): the receive of one waiting frame, no bulk data";
  p["o_s_plus_o_r"] = over_runs(t.sum);
  p["g"] = over_runs(t.g);
  p["g"]["method_sense"] = "Kielmann et al. Table 1: LogP's g = g(1) = RTT(1) - RTT(0) + g(0)";
  p["g0"] = over_runs(t.g0);
  p["g0"]["method_sense"] = "g(0) by saturation: n one-way messages and one reply, the sender's injection interval";
  p["g0"]["bottleneck"] = t.stages.back();
  p["g0"]["estimator"] =
      "saturated once RTT_1 < eps RTT_n and RTT_n / n (the paper's rule) or the steady rate "
      "changes by less than eps (runs[].g0_rule); "
      "the figure is the median over " +
      std::to_string(methods::detail::kSaturationRepeats) + " streams of that n of the receiver's credit-return rate";
  p["g0"]["credits"] = r.credits;
  const CreditLimit cl = credit_limit(r);
  p["g0"]["credit_bound_ns"] = std::isfinite(cl.bound_ns) ? nlohmann::json(cl.bound_ns) : nlohmann::json(nullptr);
  if (std::isfinite(r.g0_total_over_n)) p["g0"]["rtt_n_over_n_ns"] = r.g0_total_over_n;
  p["g_ni"] = over_runs(t.gni);
  p["rtt"] = over_runs(t.rtt);
  p["L_plogp"] = over_runs(t.Lp);
  p["L"] = over_runs(t.L);
  p["G"] = over_runs(t.G);
  p["G"]["note"] = "g(m)/m at the largest m (" + std::to_string(big) + " B), Table 1";
  return p;
}

// Each check names the figures it concerns (agree leaves the others judged): a saturation that did not
// converge says nothing of a receive timed after a wait.
void table_one_checks(const methods::KielmannResult& r, const nlohmann::json& p, nlohmann::json& checks,
                      nlohmann::json& notes) {
  add_check(checks, "L_plogp >= 0", p["L_plogp"]["value_ns"].is_number(),
            "RTT(0) < 2 g(0): saturation and round trips disagree");
  checks.back()["about"] = nlohmann::json::array({"L_plogp", "L", "g0", "g"});
  add_check(checks, "g(0) saturation converged", r.g0_converged, r.notes.empty() ? "" : r.notes.front());
  checks.back()["about"] = nlohmann::json::array({"g0", "g", "g_ni", "L", "L_plogp", "G"});
  std::vector<std::uint32_t> negative, slow_receive;
  for (const auto& k : r.sizes) {
    // Negative beyond its interval, as Table 1's conversion judges it: a contradiction. Within it, g(m) is
    // only too small to tell from 0, and the conversion publishes it as a bound.
    if (derive(r, k.bytes).g_contradicts)
      negative.push_back(k.bytes);
    else if (std::isfinite(k.o_r) && std::isfinite(k.g) && k.o_r > k.g + k.o_r_ci)
      slow_receive.push_back(k.bytes);
  }
  add_size_check(checks, "g(m) >= 0", negative, r.sizes.size(),
                 "g(m) = RTT(m) - RTT(0) + g(0) < 0 beyond its interval (RTT(0) was timed slower than RTT(m); g(m) "
                 "is reported as an upper bound only)");
  checks.back()["about"] = nlohmann::json::array({"g", "G"});
  // A relation between two figures, each measured in its own way: on today's NIs one receive of a message
  // that waited (a cache miss, a poll's fixed cost) costs more than a message of a stream. It qualifies LogP
  // here, not the receive's time: a note of the link, not a doubt about a figure (every quiet run over shm
  // showed it).
  if (!slow_receive.empty()) {
    add_note(notes, "o_r > g",
             "o_r(m) > g(m): a message that waited costs more to receive than one of a stream (Kielmann et al. 3.1) "
             "at " +
                 std::to_string(slow_receive.size()) + " of " + std::to_string(r.sizes.size()) + " sizes (" +
                 std::to_string(slow_receive.front()) + " B .. " + std::to_string(slow_receive.back()) +
                 " B; the sizes are in this note's \"sizes\")");
    notes.back()["sizes"] = slow_receive;
    notes.back()["about"] = nlohmann::json::array({"o_r", "g"});
  }
}
}  // namespace

nlohmann::json kielmann_summary(const Runs& runs) {
  nlohmann::json checks = nlohmann::json::array(), notes = nlohmann::json::array();
  const auto& r = runs.back();
  nlohmann::json p = nlohmann::json::object();
  if (find(r, 0) && find(r, 1)) {
    const std::uint32_t big = r.sizes.back().bytes;
    p = table_one_json(table_one(runs, big), r, big);
    table_one_checks(r, p, checks, notes);
  }
  return {{"parameters", p}, {"per_size", per_size(runs)}, {"checks", checks}, {"notes", notes}};
}

}  // namespace logpb::methods
