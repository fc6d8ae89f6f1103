// The signature extractor against curves from a discrete-event simulation of the real system
// (tests/logp_sim.hpp), in every regime of the truth matrix: the 1990s machines (g > o_s + o_r:
// the NI is the bottleneck), today's NIs (g < o_s + o_r, and g < o_s: the processor is), and a
// capacity-limited machine (W small against L/g: the window is). Tolerance: 5% or 100 ns, whichever is
// larger. Tests tagged [regime] need the regime-aware extractor (bottleneck, idle, g_ni); the others
// check the plain parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "analysis/signature_fit.hpp"
#include "tests/logp_sim.hpp"

using namespace logpb;
using analysis::Param;
using analysis::SignatureFit;

namespace {

struct Named {
  const char* name;
  sim::Machine m;
};
// Culler et al. Table 3 (ns), W = 32.
const Named kParagon{"Paragon", {1400, 2200, 7600, 6300, 32}};
const Named kMeiko{"Meiko CS-2", {1700, 1600, 13600, 7500, 32}};
const Named kMyrinet{"Myrinet", {2000, 2600, 12400, 11100, 32}};
// Today's regime: g < o_s + o_r, and g < o_s (a ConnectX-like NI behind a software stack).
const Named kModern{"modern g < o_s + o_r", {1000, 1200, 1500, 3000, 32}};
const Named kFastNi{"modern g < o_s", {1000, 800, 200, 2000, 32}};
// Capacity-limited: W = 4 against L/g = 20; the steady state is RTT / W.
const Named kCapacity{"capacity W=4", {500, 500, 1000, 20000, 4}};

// What a VM shows: 1-3% spin overrun on every overhead (exponential, so a delay's mean exceeds its
// median), a 10-50 us stall about every 20 ms on each host, 20 ns for a poll that finds nothing.
sim::Noise vm_noise(unsigned seed, double jitter = 0.02) {
  sim::Noise n;
  n.jitter = jitter;
  n.stall_every_ns = 20e6;
  n.empty_poll_ns = 20;
  n.seed = seed;
  return n;
}

double tol(double truth) { return std::max(0.05 * std::fabs(truth), 100.0); }
double rtt_of(const sim::Machine& m) { return 2 * (m.o_s + m.o_r + m.L); }

std::string show(const char* name, const Param& p) {
  char b[512];
  if (p.valid)
    std::snprintf(b, sizeof b, "  %-5s %10.1f +- %.1f ns\n", name, p.value, p.ci95);
  else
    std::snprintf(b, sizeof b, "  %-5s invalid (raw %.1f, upper bound %.1f): %s\n", name, p.raw, p.upper_bound,
                  p.note.c_str());
  return b;
}

std::string show(const SignatureFit& f, const sim::Result& r) {
  std::ostringstream s;
  s << "fit:\n"
    << show("o_s", f.o_s) << show("o_s+o_r", f.o_s_plus_o_r) << show("o_r-", f.o_r_remainder) << show("g", f.g) << show("L", f.L) << show("rtt", f.rtt)
    << show("idle", f.idle) << show("g_ni", f.g_ni) << "  bottleneck \"" << f.bottleneck << "\"\n";
  for (const auto& c : f.checks)
    s << "  check " << (c.ok ? "ok  " : "FAIL") << " " << c.name << " " << c.detail << "\n";
  for (const auto& c : r.curves) {
    s << "  curve Delta=" << c.delta_ns << ":";
    for (std::size_t i = 0; i < c.M.size(); ++i) s << " " << c.M[i] << ":" << std::lround(c.cost_ns[i]);
    s << "\n";
  }
  return s.str();
}

struct Run {
  sim::Result sim;
  SignatureFit fit;
};
Run run(const Named& n, const sim::Noise& noise = {}, const sim::Options& opt = {}) {
  Run r;
  r.sim = sim::simulate(n.m, noise, opt);
  r.fit = analysis::fit_signature(r.sim.curves, r.sim.rtt, 1.2, n.m.window);
  return r;
}

bool near(const Param& p, double truth) { return p.valid && std::fabs(p.value - truth) <= tol(truth); }

void check_recovered(const char* name, const Param& p, double truth) {
  INFO(name << ": truth " << truth << ", fitted " << (p.valid ? std::to_string(p.value) : "invalid: " + p.note)
            << ", tolerance " << tol(truth));
  CHECK(near(p, truth));
}

// No parameter may be reported valid with a negative value (or NaN).
void check_sane(const SignatureFit& f) {
  for (const auto* p : {&f.o_s, &f.o_s_plus_o_r, &f.o_r_remainder, &f.g, &f.L, &f.rtt, &f.g_ni}) {
    if (!p->valid) continue;
    CHECK(std::isfinite(p->value));
    CHECK(p->value >= 0);
    CHECK(std::isfinite(p->ci95));
  }
  // Idle >= 0 within its interval. On the raw g - o_s - o_r: the reported value is clamped at 0, so a
  // check on it could not fail.
  if (f.idle.valid) CHECK(f.idle.raw + f.idle.ci95 >= -100);
}

// Processor-bound: Idle = g - o_s - o_r is zero within its interval, judged before the clamp (a fit whose
// overheads exceed its g by far would otherwise pass as 0), and reported as that value clamped at 0.
void check_idle_zero(const SignatureFit& f) {
  CHECK(f.idle.valid);
  CHECK(std::fabs(f.idle.raw) <= f.idle.ci95 + 100);
  CHECK(f.idle.value == std::max(f.idle.raw, 0.0));
}

// The NI's gap is hidden: not a value, but a finite bound that holds.
void check_gni_hidden(const SignatureFit& f, double true_g) {
  INFO("g_ni: valid " << f.g_ni.valid << ", upper bound " << f.g_ni.upper_bound << ", true g " << true_g);
  CHECK_FALSE(f.g_ni.valid);
  CHECK(std::isfinite(f.g_ni.upper_bound));
  CHECK(f.g_ni.upper_bound >= true_g);
}

}  // namespace

// ---- The simulation itself, against values derived by hand (independent of the extractor). ----

TEST_CASE("simulation: send-only, round trip and steady states match the LogP time-lines", "[sim]") {
  for (const Named* n : {&kParagon, &kMeiko, &kMyrinet, &kModern, &kFastNi, &kCapacity}) {
    const sim::Machine& m = n->m;
    INFO(n->name);
    // M = 1: the single poll finds nothing, the send costs o_s.
    CHECK(sim::simulate_burst(m, 1, 0) == Approx(m.o_s));
    // Steady state at Delta = 0: the slowest of the NI (g), the processors (o_s + o_r per request-reply
    // pair on each host) and the window (RTT / W requests per round trip).
    const double expect0 = std::max({m.g, m.o_s + m.o_r, rtt_of(m) / m.window});
    const double T1 = 4096 * sim::simulate_burst(m, 4096, 0), T2 = 8192 * sim::simulate_burst(m, 8192, 0);
    CHECK((T2 - T1) / 4096 == Approx(expect0).epsilon(1e-3));
    // A Delta well above Idle and above RTT / W: the client's processor, o_s + o_r + Delta.
    const double d = 4 * expect0 + rtt_of(m);
    const double U1 = 1024 * sim::simulate_burst(m, 1024, d), U2 = 2048 * sim::simulate_burst(m, 2048, d);
    CHECK((U2 - U1) / 1024 == Approx(m.o_s + m.o_r + d).epsilon(1e-3));
    // Ping-pong: o_s + L + (o_r + o_s at the server) + L + o_r.
    const sim::Result r = sim::simulate(m, {}, [] {
      sim::Options o;
      o.deltas_ns = {1000};
      o.max_burst = 8;
      return o;
    }());
    CHECK(r.rtt.value == Approx(rtt_of(m)));
  }
}

TEST_CASE("simulation: noise is seeded and only ever slows things down", "[sim]") {
  const sim::Noise a = vm_noise(7);
  const double c1 = sim::simulate_burst(kParagon.m, 64, 0, a), c2 = sim::simulate_burst(kParagon.m, 64, 0, a);
  CHECK(c1 == c2);
  CHECK(c1 >= sim::simulate_burst(kParagon.m, 64, 0));
}

// ---- 1. The three Culler machines (1990s regime, g > o_s + o_r). ----

TEST_CASE("Culler machines: o_s, o_r, g, L recovered from a simulated signature", "[sim][culler]") {
  for (const Named* n : {&kParagon, &kMeiko, &kMyrinet}) {
    const Run r = run(*n);
    INFO(n->name << "\n" << show(r.fit, r.sim));
    check_recovered("o_s", r.fit.o_s, n->m.o_s);
    check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, n->m.o_s + n->m.o_r);
    check_recovered("o_r_remainder", r.fit.o_r_remainder, n->m.o_r);
    check_recovered("g", r.fit.g, n->m.g);
    check_recovered("L", r.fit.L, n->m.L);
    check_sane(r.fit);
  }
}

TEST_CASE("Culler machines: the NI is the bottleneck, g_ni = g, Idle = g - o_s - o_r", "[sim][culler][regime]") {
  for (const Named* n : {&kParagon, &kMeiko, &kMyrinet}) {
    const Run r = run(*n);
    INFO(n->name << "\n" << show(r.fit, r.sim));
    CHECK(r.fit.bottleneck == analysis::kBottleneckNI);
    check_recovered("g_ni", r.fit.g_ni, n->m.g);
    check_recovered("idle", r.fit.idle, n->m.g - n->m.o_s - n->m.o_r);
  }
}

// ---- 2. Today's regime: g < o_s + o_r, and g < o_s. ----

TEST_CASE("modern regime: o_s, o_r, L recovered; g is the steady state o_s + o_r", "[sim][modern]") {
  for (const Named* n : {&kModern, &kFastNi}) {
    const Run r = run(*n);
    INFO(n->name << "\n" << show(r.fit, r.sim));
    check_recovered("o_s", r.fit.o_s, n->m.o_s);
    check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, n->m.o_s + n->m.o_r);
    check_recovered("o_r_remainder", r.fit.o_r_remainder, n->m.o_r);
    check_recovered("L", r.fit.L, n->m.L);
    // Culler's g (section 5: "the gap is equal to o_s + o_r"): the steady state, not the NI's gap.
    check_recovered("g", r.fit.g, n->m.o_s + n->m.o_r);
    check_sane(r.fit);
  }
}

// Idle is asserted as a value with an interval that contains zero (the rule: "when Idle = g - o_s - o_r is
// zero within its interval, report bottleneck processor"; the header: "with its interval"), not as an
// invalid-but-bounded parameter.
TEST_CASE("modern regime: the processor is the bottleneck, Idle = 0, g_ni hidden with a bound that holds",
          "[sim][modern][regime]") {
  for (const Named* n : {&kModern, &kFastNi}) {
    const Run r = run(*n);
    INFO(n->name << "\n" << show(r.fit, r.sim));
    CHECK(r.fit.bottleneck == analysis::kBottleneckProcessor);
    check_idle_zero(r.fit);
    check_gni_hidden(r.fit, n->m.g);
  }
}

// ---- 3. Capacity-limited: W = 4 against L/g = 20. ----

TEST_CASE("capacity-limited: o_s recovered, g is RTT / W, o_r and L right whenever reported", "[sim][capacity]") {
  const Named& n = kCapacity;
  const Run r = run(n);
  INFO(n.name << "\n" << show(r.fit, r.sim));
  check_recovered("o_s", r.fit.o_s, n.m.o_s);
  check_recovered("g", r.fit.g, rtt_of(n.m) / n.m.window);
  if (r.fit.o_s_plus_o_r.valid) check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, n.m.o_s + n.m.o_r);
  if (r.fit.o_r_remainder.valid) check_recovered("o_r_remainder", r.fit.o_r_remainder, n.m.o_r);
  if (r.fit.L.valid) check_recovered("L", r.fit.L, n.m.L);
  check_sane(r.fit);
}

TEST_CASE("capacity-limited: the window is the bottleneck, g_ni hidden with a bound that holds",
          "[sim][capacity][regime]") {
  const Named& n = kCapacity;
  const Run r = run(n);
  INFO(n.name << "\n" << show(r.fit, r.sim));
  CHECK(r.fit.bottleneck == analysis::kBottleneckCapacity);
  check_gni_hidden(r.fit, n.m.g);
}

// ---- 4. With the noise of a VM. ----

// Noise at both ends of what a VM shows (1% and 3% jitter), two seeds each. The Delta handed to the fit
// is what the harness hands it: the Delta spent inside the bursts.
TEST_CASE("noisy VM: the same recoveries hold, nothing valid is negative", "[sim][noise]") {
  for (double jitter : {0.01, 0.03}) {
    for (unsigned seed : {1u, 2u}) {
      const sim::Noise noise = vm_noise(seed, jitter);
      for (const Named* n : {&kParagon, &kMyrinet}) {
        const Run r = run(*n, noise);
        INFO(n->name << " jitter " << jitter << " seed " << seed << "\n" << show(r.fit, r.sim));
        check_recovered("o_s", r.fit.o_s, n->m.o_s);
        check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, n->m.o_s + n->m.o_r);
        check_recovered("o_r_remainder", r.fit.o_r_remainder, n->m.o_r);
        check_recovered("g", r.fit.g, n->m.g);
        check_recovered("L", r.fit.L, n->m.L);
        check_sane(r.fit);
      }
      for (const Named* n : {&kModern, &kFastNi}) {
        const Run r = run(*n, noise);
        INFO(n->name << " jitter " << jitter << " seed " << seed << "\n" << show(r.fit, r.sim));
        check_recovered("o_s", r.fit.o_s, n->m.o_s);
        check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, n->m.o_s + n->m.o_r);
        check_recovered("o_r_remainder", r.fit.o_r_remainder, n->m.o_r);
        check_recovered("L", r.fit.L, n->m.L);
        check_recovered("g", r.fit.g, n->m.o_s + n->m.o_r);
        check_sane(r.fit);
      }
      const Run r = run(kCapacity, noise);
      INFO(kCapacity.name << " jitter " << jitter << " seed " << seed << "\n" << show(r.fit, r.sim));
      check_recovered("o_s", r.fit.o_s, kCapacity.m.o_s);
      check_recovered("g", r.fit.g, rtt_of(kCapacity.m) / kCapacity.m.window);
      if (r.fit.o_s_plus_o_r.valid)
        check_recovered("o_s_plus_o_r", r.fit.o_s_plus_o_r, kCapacity.m.o_s + kCapacity.m.o_r);
      if (r.fit.o_r_remainder.valid) check_recovered("o_r_remainder", r.fit.o_r_remainder, kCapacity.m.o_r);
      if (r.fit.L.valid) check_recovered("L", r.fit.L, kCapacity.m.L);
      check_sane(r.fit);
    }
  }
}

// Why the harness subtracts the Delta spent inside the bursts: with a standalone calibration (a median
// of skewed delays) o_r comes out high by about jitter (1 - ln 2) Delta per curve, the error the issue saw
// on a VM. At 3% jitter the capacity machine's large Deltas show it beyond tolerance.
TEST_CASE("noisy VM: a Delta calibrated apart from the bursts biases o_r (why it is not done)",
          "[sim][noise][calibration]") {
  sim::Options opt;
  opt.delta_report = sim::Options::DeltaReport::standalone_median;
  const Run r = run(kCapacity, vm_noise(1, 0.03), opt);
  INFO(show(r.fit, r.sim));
  REQUIRE(r.fit.o_s_plus_o_r.valid);
  CHECK(r.fit.o_s_plus_o_r.value - (kCapacity.m.o_s + kCapacity.m.o_r) > 100);
}

TEST_CASE("noisy VM: the bottleneck is still named right", "[sim][noise][regime]") {
  for (unsigned seed : {1u, 2u}) {
    for (const Named* n : {&kParagon, &kMyrinet}) {
      const Run r = run(*n, vm_noise(seed));
      INFO(n->name << " seed " << seed << "\n" << show(r.fit, r.sim));
      CHECK(r.fit.bottleneck == analysis::kBottleneckNI);
      check_recovered("g_ni", r.fit.g_ni, n->m.g);
    }
    for (const Named* n : {&kModern, &kFastNi}) {
      const Run r = run(*n, vm_noise(seed));
      INFO(n->name << " seed " << seed << "\n" << show(r.fit, r.sim));
      CHECK(r.fit.bottleneck == analysis::kBottleneckProcessor);
      check_idle_zero(r.fit);
      check_gni_hidden(r.fit, n->m.g);
    }
    const Run r = run(kCapacity, vm_noise(seed));
    INFO(kCapacity.name << " seed " << seed << "\n" << show(r.fit, r.sim));
    CHECK(r.fit.bottleneck == analysis::kBottleneckCapacity);
    check_gni_hidden(r.fit, kCapacity.m.g);
  }
}

// ---- 5. Negative controls: the tolerance and the regime test can fail. ----

TEST_CASE("negative control: a Paragon fit judged against Meiko's truth fails", "[sim][negative]") {
  const Run r = run(kParagon);
  INFO(show(r.fit, r.sim));
  const sim::Machine& t = kMeiko.m;
  const bool all = near(r.fit.o_s, t.o_s) && near(r.fit.o_s_plus_o_r, t.o_s + t.o_r) && near(r.fit.g, t.g) && near(r.fit.L, t.L);
  CHECK_FALSE(all);
  CHECK_FALSE(near(r.fit.g, t.g));  // 7.6 against 13.6 us: far outside 5%
}

TEST_CASE("negative control: a modern-regime fit never names the NI as the bottleneck", "[sim][negative]") {
  for (const Named* n : {&kModern, &kFastNi}) {
    for (const sim::Noise& noise : {sim::Noise{}, vm_noise(3)}) {
      const Run r = run(*n, noise);
      INFO(n->name << "\n" << show(r.fit, r.sim));
      CHECK(r.fit.bottleneck != analysis::kBottleneckNI);
      // Nor may the NI's gap be given as a value: it is hidden behind the processor.
      CHECK_FALSE(near(r.fit.g_ni, n->m.o_s + n->m.o_r));
    }
  }
}

// ---- 6. A 1990s machine whose bursts are capped short (issue 36). ----

// g = 4.5 us > o_s + o_r = 3 us, L = 10 us, bursts capped at 120 us: the Delta = 0 curve stops while the
// requester still sends ahead of its replies (its window fills only near M = 60), at ~2.6 us per message.
// logpbench --emulate "os=2us,or=1us,g=4.5us,L=10us" --max-burst-time 120us read g = 2674-2680 ns there,
// "limited by the processor", g_ni "at most 2.7066 us": a value and a bound the truth breaks.
TEST_CASE("a short burst cap: g is a lower bound or the truth, never a value below it", "[sim][transition]") {
  const Named slow{"1990s, capped bursts", {2000, 1000, 4500, 10000, 32}};
  sim::Options opt;
  opt.max_burst_ns = 120e3;
  opt.min_window_multiple = 0;
  const Run cut = run(slow, {}, opt);
  INFO("without longer bursts\n" << show(cut.fit, cut.sim));
  CHECK(cut.fit.g_in_transition);
  CHECK_FALSE(cut.fit.g.valid);
  CHECK(cut.fit.g.lower_bound <= 4500);
  CHECK_FALSE(cut.fit.g_ni.valid);
  CHECK(std::isnan(cut.fit.g_ni.upper_bound));
  CHECK(cut.fit.bottleneck.empty());
  check_recovered("o_s_plus_o_r", cut.fit.o_s_plus_o_r, 3000);
  // With the run's longer bursts (loops.hpp extends the Delta = 0 curve past the cap while the fit says so)
  // the steady state is reached and g is the NI's 4.5 us.
  opt.extend_first = 8;
  const Run longer = run(slow, {}, opt);
  INFO("with longer bursts\n" << show(longer.fit, longer.sim));
  CHECK_FALSE(longer.fit.g_in_transition);
  check_recovered("g", longer.fit.g, 4500);
  CHECK(longer.fit.bottleneck == analysis::kBottleneckNI);
  check_recovered("g_ni", longer.fit.g_ni, 4500);
  check_recovered("o_s", longer.fit.o_s, 2000);
  check_recovered("o_s_plus_o_r", longer.fit.o_s_plus_o_r, 3000);
}
