#include "analysis/signature.hpp"

#include <map>
#include <string>

#include "analysis/results_json.hpp"

namespace logpb::analysis {

nlohmann::json signature_record(const methods::SignatureData& d, bool raw) {
  return {{"rtt", distribution_json(d.rtt.rtt_ns, raw)}, {"rtt_lost", d.rtt.lost}, {"signature", signature_curves_json(d, raw)}};
}

namespace {
Param pick(const SignatureFit& f, const std::string& k) {
  if (k == "o_s") return f.o_s;
  if (k == "o_r") return f.o_r;
  if (k == "g") return f.g;
  if (k == "L") return f.L;
  if (k == "g_ni") return f.g_ni;
  if (k == "idle") return f.idle;
  if (k == "replier_service") return f.replier;
  return f.rtt;
}
}  // namespace

nlohmann::json signature_summary(const std::vector<SignatureFit>& fits) {
  nlohmann::json params = nlohmann::json::object();
  for (const std::string k : {"o_s", "o_r", "g", "L", "rtt", "g_ni", "idle", "replier_service"}) {
    std::vector<Param> v;
    for (const auto& f : fits) v.push_back(pick(f, k));
    params[k] = combine_runs(v);
  }
  // The bottleneck the runs named; runs that disagree are named too.
  std::map<std::string, int> votes;
  for (const auto& f : fits) ++votes[f.bottleneck.empty() ? "unknown" : f.bottleneck];
  std::string named;
  for (const auto& [b, n] : votes) named += (named.empty() ? "" : ", ") + b + " (" + std::to_string(n) + " of " + std::to_string(fits.size()) + " runs)";
  params["g"]["bottleneck"] = votes.size() == 1 ? votes.begin()->first : named;
  params["g"]["method_sense"] = "Culler et al.: the steady-state cost per message at Delta = 0, the slowest stage including the processor";
  nlohmann::json checks = nlohmann::json::array();
  for (std::size_t r = 0; r < fits.size(); ++r)
    for (const auto& c : fits[r].checks) {
      nlohmann::json jc = c;
      jc["run"] = r;
      checks.push_back(jc);
    }
  return {{"parameters", params}, {"checks", checks}};
}

}  // namespace logpb::analysis
