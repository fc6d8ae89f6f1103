// logpbench: what a network interface costs the host, in LogP terms.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/results_json.hpp"
#include "app/compare.hpp"
#include "app/job.hpp"
#include "app/model.hpp"
#include "app/options.hpp"
#include "app/quick.hpp"
#include "app/report.hpp"
#include "app/progress.hpp"
#include "common/disturbance.hpp"
#include "common/errors.hpp"
#include "common/harness_cost.hpp"
#include "common/library_handlers.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"
#include "methods/signature/options.hpp"
#include "methods/table.hpp"

namespace logpb {
namespace {

void on_signal(int sig) { logpb::interrupt_signal().store(sig); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return so the flag is seen
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// The chosen transport's job, where this build has it; a UsageError naming what it has otherwise.
app::TransportRun transport_runner(const std::string& name) {
  app::TransportRun run = nullptr;
  std::string built;
  for_each_transport(
      [&]<class D>() {
        if constexpr (kBuilt<D>) {
          built += (built.empty() ? "" : ", ") + std::string(D::name);
          if (name == D::name) run = &D::run;
        }
      },
      AllTransports{});
  if (!run) throw UsageError("--transport " + name + " is not built into this logpbench (built: " + built + ")");
  return run;
}

// Both probes of the core stop once their own intervals settle what reads them (ProbePrecision's defaults),
// at --probe-ms (after the run, half of it) at the latest. After the run only the check reads the probe: its
// median interval (the burst cap's) need not settle, so it needs no count of interruptions, and three 5 ms
// chunks may settle the stolen share (within 1 point, or clear of the check's limit), as they did in 5 of 5
// runs on a 2-core EPYC VM whose ticks took 5% of the core (the 30 ms floor had held it at 30 ms each time).
// Before a run whose method caps no burst (methods::run_caps_bursts) nothing reads the median interval either,
// and the probe stops by the same rule as after the run: on a 2-core EPYC VM in a noisy state the interval
// rule held a Kielmann run over MPI at the probe's 100 ms cap (81-106 ms), a third of the run.
constexpr ProbePrecision kProbePrecision{};
constexpr ProbePrecision kProbePrecisionShare{.min_ms = 15, .interval_read = false, .min_count = 0};

double since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// How this rank's core behaves while spinning, measured once the rank is pinned (by then a launched job's
// ranks each have their own core, so they do not measure each other): the busy delay's accuracy, the
// interruptions (which set the signature's automatic burst cap) and, on the leader, the AM layer's own
// share of every o_s and o_r (tens of ms).
void measure_core(app::Options& o, const Clock& clock, ResultsDoc& doc, bool leader) {
  const auto t_core = std::chrono::steady_clock::now();
  doc.j["meta"]["delta_calibration"] = nlohmann::json::array();
  {
    const BusyDelay d(clock);
    for (double req : {100.0, 1000.0, 10000.0}) {
      const double got = d.achieved_ns(req, 100);  // a median: 100 reps (1 ms at 10 us) settle it
      doc.j["meta"]["delta_calibration"].push_back({{"requested_ns", req}, {"achieved_ns", got}});
    }
  }
  const auto& burst_time = methods::opt::kMaxBurstTime;  // 0: auto
  const bool auto_cap = o.get(burst_time) == 0 && (!o.method || methods::run_caps_bursts(*o.method, o.method_args));
  const ProbePrecision& rule = auto_cap ? kProbePrecision : kProbePrecisionShare;
  const Interruptions irq = measure_interruptions(clock, o.probe_ms, 2000, &rule);
  doc.j["meta"]["interruptions"] = interruptions_json(irq, &rule);
  // A quarter of the interval: about one burst in four then holds an interruption, which the median of
  // a point leaves out with room to spare (at 0.4 it was one in three, and the median moved).
  if (o.get(burst_time) == 0)
    o.set(burst_time, std::isfinite(irq.median_interval_us) && irq.count >= 3
                          ? std::clamp(0.25 * irq.median_interval_us * 1e3, 1e5, 2e6)
                          : 2e6);
  doc.j["meta"]["flags"]["max_burst_time_effective_ns"] = o.get(burst_time);
  const auto t_harness = std::chrono::steady_clock::now();
  if (leader) doc.j["meta"]["harness"] = harness_cost_json(measure_harness_cost(clock));
  doc.j["meta"]["startup_ms"]["harness_cost"] = since_ms(t_harness);
  doc.j["meta"]["startup_ms"]["core_probe"] = std::chrono::duration<double, std::milli>(t_harness - t_core).count();
}

// The results document's first lines: what the harness spends before the method, which a paper's own code
// does not (meta.startup_ms), and the host.
void start_document(const app::Options& o, const Clock& clock, double calibration_ms, ResultsDoc& doc) {
  doc.j["meta"] = host_meta(clock);
  doc.j["meta"]["mode"] = o.mode;
  doc.j["meta"]["flags"] = o.flags;
  doc.j["meta"]["stop_rule"] = o.rule;
  doc.j["meta"]["emulation"] = o.emulation;
  doc.j["meta"]["startup_ms"]["clock_calibration"] = calibration_ms;
}

// Was this core taken away from the run? Measured again once the method is over: a machine shared with
// another busy process (or a VM moved between hosts) bends figures, and the results must say so. The
// leader probes inside the job (Job::after_method), before its last barrier: the other ranks wait there
// and their launcher is idle. After MPI_Finalize, mpirun's own work at the job's end took 9-10% of the
// leader's core (interruptions every 94-150 us against the tick's 1 ms), so a probe there watched the
// launcher rather than the run, and ran its whole window, its share never settling against the limit.
void probe_after(const app::Options& o, const Clock& clock, ResultsDoc& doc) {
  const auto t_phase = std::chrono::steady_clock::now();
  const Interruptions after = measure_interruptions(clock, o.probe_ms / 2, 2000, &kProbePrecisionShare);
  doc.j["meta"]["startup_ms"]["interruptions_after"] = since_ms(t_phase);
  doc.j["meta"]["interruptions_after"] = interruptions_json(after, &kProbePrecisionShare);
}

// The leader's end of a run: the check of the core's availability, before and after the method. Then the
// results are complete: saved, printed, and written as CSV when asked.
void finish_run(const app::Options& o, const Clock& clock, ResultsDoc& doc) {
  if (!doc.j["meta"].contains("interruptions_after")) probe_after(o, clock, doc);
  const double before = doc.j["meta"]["interruptions"].value("stolen_fraction", 0.0);
  const double worst = std::max(before, doc.j["meta"]["interruptions_after"].value("stolen_fraction", 0.0));
  if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
  // Each share with its interval, where the probe had two chunks or more to give one.
  auto share = [](double f, const nlohmann::json& ci) {
    char s[64];
    if (ci.is_number())
      std::snprintf(s, sizeof s, "%.1f%% (+- %.1f)", f * 100, ci.get<double>() * 100);
    else
      std::snprintf(s, sizeof s, "%.1f%%", f * 100);
    return std::string(s);
  };
  const std::string b = share(before, doc.j["meta"]["interruptions"]["stolen_fraction_ci95"]);
  const std::string a = share(doc.j["meta"]["interruptions_after"].value("stolen_fraction", 0.0),
                              doc.j["meta"]["interruptions_after"]["stolen_fraction_ci95"]);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s of this core was taken by interruptions before the run and %s after (above %.0f%%, another busy "
                "process or the VM's host shares the core: repeat on a quiet machine)",
                b.c_str(), a.c_str(), kCoreTakenLimit * 100);
  // A method that judged its segments one by one (common/disturbance.hpp) kept the disturbed ones out of its
  // figures, or refused them: the share is then a note of the host, not a doubt about every figure.
  if (worst > kCoreTakenLimit && has_segment_tags(doc.j))
    analysis::add_note(doc.j["notes"], "the core was shared",
                       std::string(buf) +
                           "; each timed segment was judged by the kernel's accounting, and a "
                           "disturbed one measured again or its figure refused (the JSON's segments)");
  else
    doc.j["checks"].push_back(
        {{"name", "the core stayed available"}, {"ok", worst <= kCoreTakenLimit}, {"detail", buf}});
  doc.j["status"] = "complete";
  doc.save(true);
  app::print_table(stdout, doc.j);
  if (!o.json_path.empty()) std::printf("results: %s\n", o.json_path.c_str());
  if (!o.csv_path.empty())
    for (const auto& f : methods::write_csv(o.csv_path, doc.j)) std::printf("csv: %s\n", f.c_str());
}

// The whole run on this rank: the clock, the job (with the core's probe once pinned), the leader's end.
void run(app::Options& o, ResultsDoc& doc, app::RankKind& kind) {
  // Two windows of 5 ms: the rate is the cycles between two bracketed reads of CLOCK_MONOTONIC_RAW, so a
  // window's error is one bracket (tens of ns) over its length. 15 calibrations each on a 2-core EPYC VM:
  // 2 x 5 ms read within 2.3e-6 of one another and 2e-7 of 2 x 25 ms's median (0.002 ns on a 1 us figure),
  // windows agreeing to 4e-6 at most; the longer windows cost every run 40 ms more.
  const auto t0 = std::chrono::steady_clock::now();
  const Clock clock(Clock::Options{10, o.allow_variant_tsc});
  const double calibration_ms = since_ms(t0);
  set_ci_floor_ns(clock.resolution_ns());
  if (clock.calibration_spread() > 0.01)
    std::fprintf(stderr,
                 "logpbench: warning: TSC calibration windows disagree by %.2f%%: the clock or VM is unstable\n",
                 clock.calibration_spread() * 100);
  start_document(o, clock, calibration_ms, doc);
  const app::TransportRun transport = transport_runner(o.transport);
  app::Progress progress(o.quiet);
  app::run_job_main(
      o, clock, doc, progress, kind, [&] { measure_core(o, clock, doc, kind == app::RankKind::leader); }, transport,
      [&] { probe_after(o, clock, doc); });
  progress.done();
  if (kind == app::RankKind::member) std::fprintf(stderr, "logpbench: rank done\n");
  if (kind == app::RankKind::leader && o.mode != "server") finish_run(o, clock, doc);
}

// The exit code of an error, which the results file records with its message.
int record_error(ResultsDoc& doc, const char* status, const std::string& error, int code) {
  doc.j["status"] = status;
  if (!error.empty()) doc.j["error"] = error;
  return code;
}

}  // namespace
}  // namespace logpb

int main(int argc, char** argv) {
  using namespace logpb;
  drop_library_crash_handlers();
  // A command that runs nothing: it reads a result and predicts (LoGPC), with its own options.
  if (argc > 1 && std::strcmp(argv[1], "model") == 0) return app::run_model(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "compare") == 0) return app::run_compare(argc, argv);
  app::Options o;
  try {
    const std::vector<std::string> args = app::command_args(argc, argv);  // `logpbench quick ...`: --bench quick
    std::vector<const char*> av;
    for (const auto& a : args) av.push_back(a.c_str());
    if (!app::parse_options(static_cast<int>(av.size()), av.data(), o)) return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "logpbench: %s\n(see logpbench --help)\n", e.what());
    return 2;
  }
  install_signal_handlers();

  ResultsDoc doc;
  doc.path = o.json_path;
  doc.j["schema"] = "logpbench/1";
  doc.j["status"] = "running";
  int code = 0;
  app::RankKind kind = app::RankKind::leader;
  try {
    run(o, doc, kind);
  } catch (const UsageError& e) {
    // The ranks of a local job share the host and the options: a configuration error a forked rank meets
    // (no such device, port or provider), rank 0 meets too and prints; the forked rank ends the job
    // (Ranks::abort, with its reason) and leaves the line to rank 0, so the error prints once.
    if (kind != app::RankKind::local_child) std::fprintf(stderr, "\nlogpbench: %s\n", e.what());
    code = record_error(doc, "failed", e.what(), 2);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "\nlogpbench: interrupted; results so far are kept\n");
    code = record_error(doc, "interrupted", "", 130);
  } catch (const PeerError& e) {
    std::fprintf(stderr, "\nlogpbench: peer lost: %s\n", e.what());
    code = record_error(doc, "failed", std::string("peer lost: ") + e.what(), 3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nlogpbench: error: %s\n", e.what());
    code = record_error(doc, "failed", e.what(), 1);
  }
  if (kind == app::RankKind::local_child) {  // a forked rank: leave without running rank 0's exit path
    std::fflush(nullptr);
    _exit(code);
  }
  if (code != 0 && !doc.path.empty()) {
    try {
      doc.save(true);
      if (!o.json_path.empty()) std::fprintf(stderr, "logpbench: partial results in %s\n", o.json_path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "logpbench: could not save results: %s\n", e.what());
    }
  }
  return code;
}
