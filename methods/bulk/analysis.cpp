#include "methods/bulk/analysis.hpp"

#include "analysis/loggp.hpp"
#include "analysis/results_json.hpp"
#include "methods/signature/analysis.hpp"

namespace logpb::methods {

using namespace analysis;

nlohmann::json bulk_record(const std::vector<methods::BulkSize>& v, bool raw) {
  methods::SignatureData sig;
  for (const auto& b : v) sig.curves.push_back(b.curve);
  nlohmann::json curves = signature_curves_json(sig, raw);
  for (std::size_t i = 0; i < v.size(); ++i) curves[i]["bytes"] = v[i].bytes;
  return {{"method", "Culler et al. bulk transfer (section 4)"}, {"signature_per_size", curves}};
}

nlohmann::json bulk_summary(const std::vector<std::vector<methods::BulkSize>>& runs) {
  nlohmann::json checks = nlohmann::json::array();
  const auto& v = runs.back();
  nlohmann::json per = nlohmann::json::array();
  std::vector<Param> T0, Rinf;
  for (const auto& run : runs) {
    std::vector<double> sizes, T;
    for (const auto& b : run) {
      sizes.push_back(b.bytes);
      T.push_back(b.round_trip.median);
    }
    const auto naive = fit_naive_bulk(sizes, T);
    T0.push_back(naive.T0);
    Rinf.push_back(naive.R_inf);
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::vector<Param> rtt, get, os, g;
    for (const auto& run : runs) {
      const auto& b = run[i];
      const auto c = to_fit_curve(b.curve);
      os.push_back(send_only_cost(c).o_s);
      g.push_back(steady_state_cost(c).cost);
      rtt.push_back(param_of(b.round_trip.median, b.round_trip.ci95_median));
      get.push_back(param_of(b.get_round_trip.median, b.get_round_trip.ci95_median));
    }
    const auto r = combine_runs(rtt);
    per.push_back({{"bytes", v[i].bytes},
                   {"rtt", r},
                   {"bandwidth_bytes_per_ns",
                    r.param.valid ? nlohmann::json(v[i].bytes / r.param.value) : nlohmann::json(nullptr)},
                   {"get_rtt", over_runs(get)},
                   {"o_s", over_runs(os)},
                   {"g", over_runs(g)}});
  }
  nlohmann::json params = {{"T0", over_runs(T0)}, {"R_inf_bytes_per_ns", over_runs(Rinf)}};
  if (!v.empty()) {
    params["o_s"] = per.front()["o_s"];
    params["rtt"] = per.front()["rtt"];
  }
  add_check(
      checks, "naive bulk model T_0 >= 0", params["T0"]["value_ns"].is_number(),
      "T_0 of the naive fit is negative: T(n) is not linear in n and T_0 means nothing (Culler et al. section 4)");
  return {{"parameters", params}, {"per_size", per}, {"checks", checks}};
}

}  // namespace logpb::methods
