// --bench pingpong: the round trip of one small AM, or with -s n of an n-byte store and its reply
// (Culler et al. 3.2's RTT; perftest's latency test). With -a (perftest's: every size 2 .. 2^23) or
// --sizes it sweeps: each size n > 0 is a bulk store of n bytes whose handler replies (the path every
// bulk method uses: methods/messages.hpp), one row of the latency table per size.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/results_json.hpp"
#include "analysis/signature_fit.hpp"
#include "common/disturbance.hpp"
#include "common/stats.hpp"
#include "methods/descriptor.hpp"
#include "methods/messages.hpp"
#include "methods/pingpong/loops.hpp"
#include "methods/settings.hpp"
#include "methods/table.hpp"

namespace logpb::methods::method {

struct pingpong {
  static constexpr const char* name = "pingpong";
  static constexpr const char* summary = "round trip of one small AM (-s n: an n-byte store; -a/--sizes: a sweep)";
  static constexpr const char* plot = "rtt";
  static constexpr Needs needs{};
  static constexpr Scope scope = Scope::link;
  static constexpr Takes takes{.size_sweep = true, .one_size = true, .ud = true};
  // A ping-pong of -s n measures one size: its round trip is rtt(n), not the small-AM rtt of the others.
  static constexpr analysis::compare::Reading compare_as{.rtt_at_size = true};
  struct Sized {
    std::uint32_t bytes = 0;
    methods::PingpongResult r;
  };
  struct Run {
    bool sweep = false;  // -a or --sizes: per_size in the results; else the single size's layout
    std::vector<Sized> sizes;
  };

  // The round trip of a ping-pong program: no poll before each request (methods/pingpong/loops.hpp).
  static constexpr bool kPollBeforeSend = false;
  // One size: the replier's turnaround after the timed round trips (methods/pingpong/loops.hpp), over
  // as many round trips as were timed, at most kTurnaroundIterations. A sweep has none.
  static constexpr int kTurnaroundIterations = 2000;
  static methods::PingpongConfig config(const Settings& o, std::uint32_t bytes, bool sweep) {
    return {o.iterations, o.warmup, bytes, kPollBeforeSend, sweep ? 0 : std::min(o.iterations, kTurnaroundIterations)};
  }
  static nlohmann::json turnaround_json(const methods::Turnaround& t) {
    using analysis::finite_or_null;
    return {{"service_median_ns", finite_or_null(t.service_ns)},
            {"service_p90_ns", finite_or_null(t.service_p90_ns)},
            {"requests_timed", t.requests},
            {"rtt_median_ns", finite_or_null(t.rtt_median_ns)},
            {"iterations", t.iterations}};
  }

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    Run run;
    run.sweep = !o.sizes.empty();
    if (!run.sweep) {
      io.progress("round trip");
      run.sizes.push_back({o.size, methods::pingpong(link, st, clock, config(o, o.size, false))});
      return run;
    }
    const std::vector<std::uint32_t> sizes = method_sizes({}, o.sizes, methods::max_message(link));
    // The share of the sweep each size is, for the progress display: its bytes plus a fixed cost.
    double total = 0, so_far = 0;
    for (auto n : sizes) total += n + 4096.0;
    for (auto n : sizes) {
      throw_if_interrupted();
      io.progress("round trip " + std::to_string(n) + " B");
      run.sizes.push_back({n, methods::pingpong(link, st, clock, config(o, n, true))});
      so_far += n + 4096.0;
      io.done(so_far / total);
    }
    return run;
  }
  static nlohmann::json record(const Run& r, const Settings& o) {
    if (!r.sweep)
      return {{"rtt", analysis::distribution_json(r.sizes.front().r.rtt_ns, o.raw)},
              {"lost", r.sizes.front().r.lost},
              {"segments", segments_json(r.sizes.front().r)},
              {"poll_before_send", kPollBeforeSend},
              {"replier_turnaround", turnaround_json(r.sizes.front().r.turnaround)}};
    nlohmann::json per = nlohmann::json::array();
    for (const auto& s : r.sizes)
      per.push_back({{"bytes", s.bytes},
                     {"rtt", analysis::distribution_json(s.r.rtt_ns, o.raw)},
                     {"lost", s.r.lost},
                     {"segments", segments_json(s.r)}});
    return {{"per_size", per}, {"poll_before_send", kPollBeforeSend}};
  }
  static nlohmann::json segments_json(const methods::PingpongResult& r) {
    nlohmann::json j = r.segments.to_json();
    j["round_trips_per_batch"] = r.batch;
    return j;
  }
  // The first refusal among the runs' books at size index i (empty: every run had enough clean batches).
  static std::string refusal(const std::vector<Run>& runs, std::size_t i) {
    for (const auto& r : runs)
      if (!r.sizes.at(i).r.segments.enough()) return r.sizes[i].r.segments.refusal();
    return {};
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    if (!runs.front().sweep) {
      std::vector<analysis::Param> rtts;
      std::vector<double> service, rtt_timed;
      for (const auto& r : runs) {
        const auto& s = r.sizes.front().r;
        rtts.push_back(analysis::rtt_param(s.summary));
        if (std::isfinite(s.turnaround.service_ns)) service.push_back(s.turnaround.service_ns);
        if (std::isfinite(s.turnaround.rtt_median_ns)) rtt_timed.push_back(s.turnaround.rtt_median_ns);
      }
      // The replier's turnaround over the runs: the median of the runs' medians (null where the peer
      // did not time itself, e.g. a reflector). Not a LogP parameter: a record of the replier's share.
      auto median = [](std::vector<double> v) {
        return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v[lower_median_index(v)]);
      };
      nlohmann::json rtt = analysis::combine_runs(rtts);
      if (const std::string why = refusal(runs, 0); !why.empty()) refuse_figure(rtt, why);
      return {{"parameters", {{"rtt", rtt}}},
              {"checks", nlohmann::json::array()},
              {"replier_turnaround", {{"service_median_ns", median(service)}, {"rtt_median_ns", median(rtt_timed)}}}};
    }
    // Per size: the median RTT combined over the runs, and which run is typical (its median is the
    // median of the runs'), whose distribution the table shows.
    nlohmann::json per = nlohmann::json::array();
    for (std::size_t i = 0; i < runs.front().sizes.size(); ++i) {
      std::vector<analysis::Param> rtts;
      std::vector<double> medians;
      std::vector<std::size_t> of_run;
      for (std::size_t k = 0; k < runs.size(); ++k) {
        const auto& s = runs[k].sizes.at(i).r.summary;
        rtts.push_back(analysis::rtt_param(s));
        if (s.n > 0) {
          medians.push_back(s.median);
          of_run.push_back(k);
        }
      }
      nlohmann::json rtt = analysis::combine_runs(rtts);
      if (const std::string why = refusal(runs, i); !why.empty()) refuse_figure(rtt, why);
      per.push_back({{"bytes", runs.front().sizes[i].bytes},
                     {"rtt", rtt},
                     {"typical_run", medians.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json(of_run[lower_median_index(medians)])}});
    }
    return {{"parameters", nlohmann::json::object()},
            {"checks", nlohmann::json::array()},
            {"pingpong", {{"per_size", per}}}};
  }

  // perftest's latency table (ib_send_lat) in its meaning: one-way latency = RTT / 2, in microseconds;
  // t_typical is the median. Our 95% interval of the median (one way) is the added last column. One size:
  // a row per run, with that run's interval. A sweep: a row per size from its typical run, with the
  // interval of the median over all runs.
  static Table latency_table(const nlohmann::json& d, std::uint32_t size) {
    Table t{"latency",
            {"#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]",
             "99% percentile[usec]", "99.9% percentile[usec]", "t_typical 95% CI[usec]"},
            {},
            2,
            {0, 0, 2, 2, 2, 2, 2, 2, 2, 3},
            {7, 11, 12, 12, 15, 11, 13, 22, 24}};
    const auto& runs = d.value("runs", nlohmann::json::array());
    auto row = [&](std::uint32_t bytes, const nlohmann::json& sm, const nlohmann::json& ci_ns) {
      auto us = [&](const char* k) {
        return sm.contains(k) && sm[k].is_number() ? nlohmann::json(sm[k].get<double>() / 2e3)
                                                   : nlohmann::json(nullptr);
      };
      t.rows.push_back({bytes, sm.value("n", 0), us("min_ns"), us("max_ns"), us("median_ns"), us("mean_ns"),
                        us("stdev_ns"), us("p99_ns"), us("p999_ns"),
                        ci_ns.is_number() ? nlohmann::json(ci_ns.get<double>() / 2e3) : nlohmann::json(nullptr)});
    };
    if (d.contains("pingpong")) {
      for (const auto& s : d["pingpong"].value("per_size", nlohmann::json::array())) {
        const auto bytes = s.at("bytes").get<std::uint32_t>();
        if (!s["typical_run"].is_number()) continue;
        const auto k = s["typical_run"].get<std::size_t>();
        if (k >= runs.size()) continue;
        for (const auto& r : runs[k].value("per_size", nlohmann::json::array()))
          if (r.value("bytes", 0u) == bytes && r.contains("rtt"))
            row(bytes, r["rtt"]["summary"], s["rtt"].value("ci95_ns", nlohmann::json(nullptr)));
      }
      return t;
    }
    for (const auto& r : runs)
      if (r.contains("rtt") && r["rtt"].contains("summary"))
        row(size, r["rtt"]["summary"], r["rtt"]["summary"].value("ci95_median_ns", nlohmann::json(nullptr)));
    return t;
  }
  static std::vector<Table> tables(const nlohmann::json& doc) {
    const auto& flags = doc.value("meta", nlohmann::json::object()).value("flags", nlohmann::json::object());
    return {latency_table(doc, flags.value("size", 0u))};
  }
  static void print(std::FILE* out, const nlohmann::json& doc) {
    std::fprintf(out, "  one way = RTT/2, as perftest reports it:\n");
    print_text(out, tables(doc).front());
  }
};

}  // namespace logpb::methods::method
