// --bench bw: one-way bandwidth and message rate per size, perftest's ib_send_bw in its meaning (the loop
// and what is timed: methods/bw/loops.hpp). Units as perftest computes them (perftest_parameters.c,
// print_report_bw): MB = 2^20 bytes (its MB/sec divides by 0x100000), Gb = 10^9 bits (its Gb/sec divides
// bytes by 125,000,000), Mpps = 10^6 messages per second. The Gb/sec column is always printed (perftest
// shows it instead of MB/sec with --report_gbits). Across --runs: the average and the message rate are
// the mean of the runs with a Student-t 95% interval (none from one run); the peak is the highest run's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.hpp"
#include "methods/bw/loops.hpp"
#include "methods/descriptor.hpp"
#include "methods/settings.hpp"
#include "methods/table.hpp"

namespace logpb::methods::method {

struct bw {
  static constexpr const char* name = "bw";
  static constexpr const char* summary = "one-way bandwidth and message rate per size (perftest's ib_send_bw)";
  static constexpr const char* plot = "";
  static constexpr Needs needs{.bulk = true};  // sizes above 0 are one-way bulk stores (-s 0: the frame alone)
  static constexpr Scope scope = Scope::link;
  static constexpr Takes takes{.one_size = true, .tx_burst = true};
  static inline const std::vector<std::uint32_t> default_sizes{64, 4096, 65536};  // perftest's default is 65536
  static constexpr int kDefaultIterations = 5000;  // perftest's bandwidth tests (DEF_ITERS_WB)
  static constexpr double kMB = 1048576.0, kGb = 125e6, kM = 1e6;
  using Run = std::vector<methods::BwSize>;

  // The sizes: -a or --sizes, else -s n, else the defaults; each within half the segment.
  static std::vector<std::uint32_t> sizes(const Settings& o, std::uint32_t max_bytes) {
    if (o.sizes.empty() && o.size_given) return method_sizes(*find_method(name), {o.size}, max_bytes);
    return method_sizes(*find_method(name), o.sizes, max_bytes);
  }
  static int iterations(const Settings& o) { return o.iterations_given ? o.iterations : kDefaultIterations; }

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock& clock, const Settings& o, RunIO& io) {
    methods::BwConfig cfg;
    cfg.sizes = sizes(o, methods::max_message(link));
    cfg.iterations = iterations(o);
    cfg.warmup = std::min(o.warmup, cfg.iterations);
    return methods::bw(link, st, clock, cfg, io.progress, io.done);
  }

  static nlohmann::json record(const Run& r, const Settings&) {
    nlohmann::json per = nlohmann::json::array();
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    for (const auto& b : r)
      per.push_back({{"bytes", b.bytes},
                     {"iterations", b.iterations},
                     {"seconds", num(b.seconds)},
                     {"bw_peak_MBps", num(b.peak_bytes_per_s / kMB)},
                     {"bw_average_MBps", num(b.bytes_per_s() / kMB)},
                     {"bw_average_Gbps", num(b.bytes_per_s() / kGb)},
                     {"msg_rate_Mpps", num(b.messages_per_s() / kM)},
                     {"credit_frames", b.credit_frames},
                     {"lost", b.lost}});
    return {{"per_size", per}};
  }

  // The method's key of the results, from the runs' records (quick builds it from its own records too).
  static nlohmann::json summarize_runs(const nlohmann::json& runs) {
    std::map<std::uint32_t, std::vector<nlohmann::json>> by_size;
    for (const auto& r : runs)
      for (const auto& s : r.value("per_size", nlohmann::json::array()))
        by_size[s.at("bytes").get<std::uint32_t>()].push_back(s);
    nlohmann::json per = nlohmann::json::array();
    for (const auto& [bytes, runs_of_size] : by_size) {
      const auto& rs = runs_of_size;  // a plain reference: clang 14 cannot capture a structured binding
      auto over_runs = [&](const char* key, bool peak) {
        std::vector<double> v;
        nlohmann::json all = nlohmann::json::array();
        for (const auto& s : rs) {
          all.push_back(s.value(key, nlohmann::json(nullptr)));
          if (s.contains(key) && s[key].is_number()) v.push_back(s[key].get<double>());
        }
        nlohmann::json j = {{"runs", all}, {"value", nullptr}, {"ci95", nullptr}};
        if (v.empty()) return j;
        if (peak) {
          j["value"] = *std::max_element(v.begin(), v.end());
        } else {
          const Estimate m = mean_ci95(v);
          j["value"] = m.value;
          if (std::isfinite(m.ci95)) j["ci95"] = m.ci95;
        }
        return j;
      };
      per.push_back({{"bytes", bytes},
                     {"iterations", rs.front().value("iterations", 0)},
                     {"bw_peak_MBps", over_runs("bw_peak_MBps", true)},
                     {"bw_average_MBps", over_runs("bw_average_MBps", false)},
                     {"bw_average_Gbps", over_runs("bw_average_Gbps", false)},
                     {"msg_rate_Mpps", over_runs("msg_rate_Mpps", false)}});
    }
    return {{"per_size", per},
            {"units",
             {{"MB", "2^20 bytes (perftest's MB/sec)"}, {"Gb", "10^9 bits"}, {"Mpps", "10^6 messages per second"}}},
            {"timed",
             "from just before the first message is posted until the sender sees the reply to a request sent "
             "after the last one: the receiver has handled every message (methods/bw/loops.hpp)"},
            {"peak",
             "the highest rate between two of the receiver's credit frames at least 8 credit windows apart, or "
             "the average if higher; over runs the highest run's"},
            {"interval", "Student-t 95% interval of the mean over the runs (none from one run)"}};
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings& o) {
    nlohmann::json recs = nlohmann::json::array();
    for (const auto& r : runs) recs.push_back(record(r, o));
    return {
        {"parameters", nlohmann::json::object()}, {"checks", nlohmann::json::array()}, {"bw", summarize_runs(recs)}};
  }

  // ib_send_bw's columns, then ours.
  static Table bw_table(const nlohmann::json& summary) {
    Table t{"bw",
            {"#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]", "BW average[Gb/sec]",
             "BW average 95% CI[MB/sec]"},
            {},
            2,
            {0, 0, 2, 2, 6, 2, 2},
            {}};
    for (const auto& s : summary.value("per_size", nlohmann::json::array()))
      t.rows.push_back({s["bytes"], s["iterations"], s["bw_peak_MBps"]["value"], s["bw_average_MBps"]["value"],
                        s["msg_rate_Mpps"]["value"], s["bw_average_Gbps"]["value"], s["bw_average_MBps"]["ci95"]});
    return t;
  }
  static std::vector<Table> tables(const nlohmann::json& doc) {
    return {bw_table(doc.value("bw", nlohmann::json::object()))};
  }
  static void print(std::FILE* out, const nlohmann::json& doc) {
    std::fprintf(out,
                 "  one way, as ib_send_bw reports it (MB = 2^20 bytes, Gb = 10^9 bits; timed to the receiver's "
                 "confirmation):\n");
    print_text(out, bw_table(doc.value("bw", nlohmann::json::object())));
  }
};

}  // namespace logpb::methods::method
