// --bench quick (what `logpbench quick` runs, app/quick.cpp): a first look at a NI in seconds on any
// transport. Three link-level methods on one connected pair, each with a small fixed budget:
//   1. signature: Culler et al.'s M x Delta signature cut short, for the LogP table (o_s, o_s_plus_o_r, g, L);
//   2. pingpong: the round-trip distribution of one small AM (perftest's latency table);
//   3. bw: the message rate of small AMs (the frame alone) and of 4 KiB stores, ib_send_bw's table
//      (on a transport with bulk transfers, which every one here has).
// The budgets are fixed (so the run stays under about 10 s wherever the NI is not itself slow) and
// recorded in quick.budgets with each phase's wall time; for larger budgets run the methods themselves.
// It is a job-level method only because it runs three methods on one link (app/job.hpp measure_link).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/transport.hpp"
#include "methods/bw/bw.hpp"
#include "methods/descriptor.hpp"
#include "methods/pingpong/pingpong.hpp"
#include "methods/protocol.hpp"
#include "methods/settings.hpp"
#include "methods/signature/options.hpp"
#include "methods/table.hpp"

namespace logpb::methods::method {

struct quick {
  static constexpr const char* name = "quick";
  static constexpr const char* summary = "logpbench quick: pingpong, message rate and the LogP table in seconds";
  static constexpr const char* plot = "";
  static constexpr Needs needs{};
  static constexpr bool burst_cap = true;  // its signature phase's
  static constexpr Scope scope = Scope::job;

  static void check_size(int n) {
    if (n != 2) throw UsageError("quick measures one pair: run 2 ranks, not " + std::to_string(n));
  }
  static Role role(int r, int) { return {r == 0, r == 0 ? 1 : 0, 0}; }
  // Its budgets are fixed: the options that would change them are refused.
  static void budgets(const Given& given, Settings&) {
    for (const char* k : {"all", "sizes", "size", "iters", "warmup", "runs"})
      if (given(k))
        throw UsageError(std::string("--") + k +
                         ": logpbench quick sets its own budgets (recorded in the results' quick.budgets); "
                         "run --bench pingpong, bw or signature for your own");
  }

  // Each phase's settings over the user's (transport, placement and window stay the user's).
  static void pingpong_budget(Settings& o) {
    o.iterations = 10000;
    o.warmup = 1000;
    o.runs = 1;
    o.size = 0;
    o.sizes.clear();
  }
  static void bw_budget(Settings& o, bool bulk) {
    o.sizes = bulk ? std::vector<std::uint32_t>{0, 4096} : std::vector<std::uint32_t>{0};
    o.iterations = 10000;
    o.iterations_given = true;
    o.warmup = 1000;
    o.runs = 3;
  }
  // The warm-up is 2500 round trips: net_af_xdp runs its first 2048 or so received frames at twice the
  // round trip (14-20 us, then 7-8 us here, switching at round trip 2049-2050 with 512, 1024 or 2048
  // descriptors and at 0 or 1024 B: the PMD's initial umem fill, measured with --warmup 0 --raw); with 200 the
  // signature's RTT sat in that stretch (16-24 us against Kielmann's 7-8). 2500 round trips cost about
  // 1 ms on shm and 70 ms on rxe under TCG.
  static void signature_budget(Settings& o) {
    o.iterations = 2000;
    o.warmup = 2500;
    o.runs = 1;
    o.set(opt::kMaxBurst, 64);
    o.set(opt::kBursts, {});
    o.set(opt::kDeltas, {});
    o.set(opt::kDeltaFactors, {1, 2, 4});
    o.rule.max_samples = 400;
    o.rule.max_seconds = 0.1;
    o.sizes.clear();
  }
  static nlohmann::json budgets_json(bool bulk) {
    Settings p, b, s;
    pingpong_budget(p);
    bw_budget(b, bulk);
    signature_budget(s);
    return {{"pingpong", {{"iterations", p.iterations}, {"warmup", p.warmup}, {"runs", p.runs}, {"bytes", 0}}},
            {"bw", {{"sizes", b.sizes}, {"iterations", b.iterations}, {"warmup", b.warmup}, {"runs", b.runs}}},
            {"signature",
             {{"max_burst", s.get(opt::kMaxBurst)},
              {"delta_factors", s.get(opt::kDeltaFactors)},
              {"rtt_iterations", s.iterations},
              {"rtt_warmup", s.warmup},
              {"max_samples_per_point", s.rule.max_samples},
              {"max_point_seconds", s.rule.max_seconds},
              {"runs", s.runs}}}};
  }

  template <class J, class EP>
  static void run_job(J& job, EP& ep, const Role& role) {
    constexpr bool bulk = BulkTransport<std::remove_cvref_t<decltype(ep.transport())>>;
    if (!role.requester) {
      for (int phase = 0; phase < (bulk ? 3 : 2); ++phase) methods::serve(ep);  // each phase ends with a quit
      return;
    }
    const auto user = job.o;  // the job's whole command line, restored after the phases
    nlohmann::json q = {{"budgets", budgets_json(bulk)}, {"seconds", nlohmann::json::object()}};
    const auto t_all = std::chrono::steady_clock::now();
    // The shares of the progress bar follow the phases' usual lengths.
    auto phase = [&](const char* bench, double from, double to, auto&& budget) {
      job.o = user;
      budget(job.o);
      job.progress.span(from, to);
      const auto t0 = std::chrono::steady_clock::now();
      nlohmann::json rec = job.measure_link(ep, role.peer, bench);
      q["seconds"][bench] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return rec;
    };
    // The LogP table first, then the distribution and the rate (each phase ends with a one-way quit:
    // Job::measure_link).
    q["signature"] = phase("signature", 0.0, 0.7, signature_budget);
    q["pingpong"] = phase("pingpong", 0.7, 0.8, pingpong_budget);
    if constexpr (bulk) {
      nlohmann::json bwr = phase("bw", 0.8, 1.0, [](Settings& o) { bw_budget(o, true); });
      bwr["bw"] = bw::summarize_runs(bwr.value("runs", nlohmann::json::array()));
      q["bw"] = bwr;
    } else {
      q["bw"] = {{"error", "not run: --bench bw needs bulk transfers, which this transport lacks"}};
    }
    job.o = user;
    job.progress.span(0, 1);
    q["seconds"]["total"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
    auto& d = job.doc.j;
    d["quick"] = q;
    d["parameters"] = q["signature"].value("parameters", nlohmann::json::object());
    d["checks"] = q["signature"].value("checks", nlohmann::json::array());
    job.doc.save();
  }

  static std::vector<Table> tables(const nlohmann::json& doc) {
    const auto& q = doc.value("quick", nlohmann::json::object());
    Table logp = parameters_table(doc);
    logp.name = "logp";
    return {logp, pingpong::latency_table(q.value("pingpong", nlohmann::json::object()), 0),
            bw::bw_table(q.value("bw", nlohmann::json::object()).value("bw", nlohmann::json::object()))};
  }
  static void print(std::FILE* out, const nlohmann::json& doc) {
    const auto t = tables(doc);
    std::fprintf(out, "  ping-pong of one small AM, one way = RTT/2 as perftest reports it:\n");
    print_text(out, t[1]);
    std::fprintf(out, "  message rate, one way as ib_send_bw reports it (bytes 0: the 64-byte frame alone):\n");
    print_text(out, t[2]);
    const auto& s = doc.value("quick", nlohmann::json::object()).value("seconds", nlohmann::json::object());
    std::fprintf(
        out, "  quick: measured in %.1f s (pingpong %.1f s, bw %.1f s, signature %.1f s); budgets in quick.budgets\n",
        s.value("total", 0.0), s.value("pingpong", 0.0), s.value("bw", 0.0), s.value("signature", 0.0));
  }
};

}  // namespace logpb::methods::method
