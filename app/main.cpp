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

#include "app/compare.hpp"
#include "app/job.hpp"
#include "app/model.hpp"
#include "app/modes.hpp"
#include "app/options.hpp"
#include "app/quick.hpp"
#include "app/report.hpp"
#include "common/errors.hpp"
#include "common/harness_cost.hpp"
#include "common/library_handlers.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"
#include "methods/signature/options.hpp"
#include "methods/table.hpp"

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

}  // namespace

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
    // What the harness spends before and after the method, which a paper's own code does not (a TSC
    // calibration, the core's interruption probe, the AM layer's own cost), in meta.startup_ms.
    auto since_ms = [](std::chrono::steady_clock::time_point t0) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    auto t_phase = std::chrono::steady_clock::now();
    // Two windows of 5 ms: the rate is the cycles between two bracketed reads of CLOCK_MONOTONIC_RAW, so a
    // window's error is one bracket (tens of ns) over its length. 15 calibrations each on a 2-core EPYC VM:
    // 2 x 5 ms read within 2.3e-6 of one another and 2e-7 of 2 x 25 ms's median (0.002 ns on a 1 us figure),
    // windows agreeing to 4e-6 at most; the longer windows cost every run 40 ms more.
    const Clock clock(Clock::Options{10, o.allow_variant_tsc});
    const double calibration_ms = since_ms(t_phase);
    set_ci_floor_ns(clock.resolution_ns());
    if (clock.calibration_spread() > 0.01)
      std::fprintf(stderr,
                   "logpbench: warning: TSC calibration windows disagree by %.2f%%: the clock or VM is unstable\n",
                   clock.calibration_spread() * 100);
    doc.j["meta"] = host_meta(clock);
    doc.j["meta"]["mode"] = o.mode;
    doc.j["meta"]["flags"] = o.flags;
    doc.j["meta"]["stop_rule"] = o.rule;
    doc.j["meta"]["emulation"] = o.emulation;
    doc.j["meta"]["startup_ms"]["clock_calibration"] = calibration_ms;
    // How this rank's core behaves while spinning: measured once the rank is pinned (by then a launched
    // job's ranks each have their own core, so they do not measure each other).
    auto measure_core = [&] {
      const auto t_core = std::chrono::steady_clock::now();
      doc.j["meta"]["delta_calibration"] = nlohmann::json::array();
      {
        const BusyDelay d(clock);
        for (double req : {100.0, 1000.0, 10000.0}) {
          const double got = d.achieved_ns(req, 500);
          doc.j["meta"]["delta_calibration"].push_back({{"requested_ns", req}, {"achieved_ns", got}});
        }
      }
      {
        // How this core is interrupted while spinning: recorded, and the automatic burst cap follows it.
        const Interruptions irq = measure_interruptions(clock, o.probe_ms);
        doc.j["meta"]["interruptions"] = interruptions_json(irq);
        // A quarter of the interval: about one burst in four then holds an interruption, which the median of
        // a point leaves out with room to spare (at 0.4 it was one in three, and the median moved).
        const auto& burst_time = methods::opt::kMaxBurstTime;  // 0: auto
        if (o.get(burst_time) == 0)
          o.set(burst_time, std::isfinite(irq.median_interval_us) && irq.count >= 3
                                ? std::clamp(0.25 * irq.median_interval_us * 1e3, 1e5, 2e6)
                                : 2e6);
        doc.j["meta"]["flags"]["max_burst_time_effective_ns"] = o.get(burst_time);
      }
      // The AM layer's own share of every o_s and o_r, on the core that measures them (tens of ms).
      const auto t_harness = std::chrono::steady_clock::now();
      if (kind == app::RankKind::leader) doc.j["meta"]["harness"] = harness_cost_json(measure_harness_cost(clock));
      doc.j["meta"]["startup_ms"]["harness_cost"] = since_ms(t_harness);
      doc.j["meta"]["startup_ms"]["core_probe"] = std::chrono::duration<double, std::milli>(t_harness - t_core).count();
    };
    app::Progress progress(o.quiet);
    bool job_transport = o.transport == "shm";
#ifdef LOGPB_HAVE_VERBS
    job_transport = job_transport || o.transport == "verbs";
#endif
#ifdef LOGPB_HAVE_DPDK
    job_transport = job_transport || o.transport == "dpdk";
#endif
#ifdef LOGPB_HAVE_MPI
    job_transport = job_transport || o.transport == "mpi";
#endif
#ifdef LOGPB_HAVE_OFI
    job_transport = job_transport || o.transport == "ofi";
#endif
    if (job_transport) {
      app::run_job_main(o, clock, doc, progress, kind, measure_core);
    } else {
      std::string built = "shm";
#ifdef LOGPB_HAVE_VERBS
      built += ", verbs";
#endif
#ifdef LOGPB_HAVE_DPDK
      built += ", dpdk";
#endif
#ifdef LOGPB_HAVE_MPI
      built += ", mpi";
#endif
#ifdef LOGPB_HAVE_OFI
      built += ", ofi";
#endif
      throw UsageError("--transport " + o.transport + " is not built into this logpbench (built: " + built + ")");
    }
    progress.done();
    if (kind != app::RankKind::leader) {
      if (kind == app::RankKind::member) std::fprintf(stderr, "logpbench: rank done\n");
    } else if (o.mode != "server") {
      // Was this core taken away from the run? Measured again at the end: a machine shared with another
      // busy process (or a VM moved between hosts) bends figures, and the results must say so.
      t_phase = std::chrono::steady_clock::now();
      const Interruptions after = measure_interruptions(clock, o.probe_ms / 2);
      doc.j["meta"]["startup_ms"]["interruptions_after"] = since_ms(t_phase);
      doc.j["meta"]["interruptions_after"] = interruptions_json(after);
      const double before = doc.j["meta"]["interruptions"].value("stolen_fraction", 0.0);
      const double worst = std::max(before, after.stolen_fraction);
      if (!doc.j.contains("checks")) doc.j["checks"] = nlohmann::json::array();
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "%.1f%% of this core was taken by interruptions before the run and %.1f%% after "
                    "(above 15%%, another busy process or the VM's host shares the core: repeat on a quiet machine)",
                    before * 100, after.stolen_fraction * 100);
      doc.j["checks"].push_back({{"name", "the core stayed available"}, {"ok", worst <= 0.15}, {"detail", buf}});
      doc.j["status"] = "complete";
      doc.save();
      app::print_table(stdout, doc.j);
      if (!o.json_path.empty()) std::printf("results: %s\n", o.json_path.c_str());
      if (!o.csv_path.empty())
        for (const auto& f : methods::write_csv(o.csv_path, doc.j)) std::printf("csv: %s\n", f.c_str());
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "\nlogpbench: %s\n", e.what());
    doc.j["status"] = "failed";
    doc.j["error"] = e.what();
    code = 2;
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "\nlogpbench: interrupted; results so far are kept\n");
    doc.j["status"] = "interrupted";
    code = 130;
  } catch (const PeerError& e) {
    std::fprintf(stderr, "\nlogpbench: peer lost: %s\n", e.what());
    doc.j["status"] = "failed";
    doc.j["error"] = std::string("peer lost: ") + e.what();
    code = 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nlogpbench: error: %s\n", e.what());
    doc.j["status"] = "failed";
    doc.j["error"] = e.what();
    code = 1;
  }
  if (kind == app::RankKind::local_child) {  // a forked rank: leave without running rank 0's exit path
    std::fflush(nullptr);
    _exit(code);
  }
  if (code != 0 && !doc.path.empty()) {
    try {
      doc.save();
      if (!o.json_path.empty()) std::fprintf(stderr, "logpbench: partial results in %s\n", o.json_path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "logpbench: could not save results: %s\n", e.what());
    }
  }
  return code;
}
