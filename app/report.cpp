#include "app/report.hpp"

#include "methods/descriptor.hpp"
#include "methods/table.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace logpb::app {

void print_table(std::FILE* out, const nlohmann::json& doc) {
  const auto& meta = doc.value("meta", nlohmann::json::object());
  const auto& flags = meta.value("flags", nlohmann::json::object());
  std::string emu;
  if (meta.contains("transport") && meta["transport"].contains("emulation") &&
      !meta["transport"]["emulation"].is_null())
    emu = " emulating " + meta["transport"]["emulation"].value("spec", std::string{});
  const std::string bench = flags.value("bench", "?");
  const methods::MethodInfo* method = methods::find_method(bench);
  std::string runs;  // a job-level method plays the job once; --runs repeats single-pair methods
  if (!method || method->scope == methods::Scope::link)
    runs = ", " + std::to_string(flags.value("runs", 1)) + " run(s)";
  std::fprintf(out, "logpbench %s: %s over %s%s%s\n", meta.value("version", "?").c_str(), bench.c_str(),
               flags.value("transport", "?").c_str(), emu.c_str(), runs.c_str());
  const nlohmann::json params =
      method && method->own_table ? nlohmann::json::object() : doc.value("parameters", nlohmann::json::object());
  if (!params.empty())  // a method with a table of its own only (bw, a pingpong sweep) has no parameters
    std::fprintf(out, "  %-7s %12s %12s %25s  %s\n", "", "value (us)", "95% CI (us)", "runs min..max (us)", "interval");
  // The LogP/LogGP keys first, in the usual order, then whatever else the method reported.
  std::vector<std::string> keys{"o_s", "o_r", "g", "G", "L", "L_plogp", "g0", "rtt"};
  for (const auto& [k, v] : params.items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  for (const auto& key : keys) {
    const char* k = key.c_str();
    if (!params.contains(key)) continue;
    const auto& p = params[key];
    if (key == "G" || key == "G_ni" || key == "R_inf_bytes_per_ns" || key == "crossover_bytes") {  // not times
      if (p["value_ns"].is_null() && p.contains("upper_bound_ns")) {
        std::fprintf(out, "  %-7s %12s   at most %.5g ns/byte (%s)\n", k, "hidden", p["upper_bound_ns"].get<double>(),
                     p.value("error", std::string()).c_str());
      } else if (p["value_ns"].is_null()) {
        std::fprintf(out, "  %-7s %12s   (%s)\n", k, "n/a", p.value("error", std::string("not measured")).c_str());
      } else {
        const char* unit = key == "G" || key == "G_ni" ? "ns/byte" : key == "crossover_bytes" ? "bytes" : "bytes/ns";
        std::fprintf(out, "  %-7s %12.5g %12.3g  %s\n", k, p["value_ns"].get<double>(),
                     p["ci95_ns"].is_null() ? 0.0 : p["ci95_ns"].get<double>(), unit);
      }
      continue;
    }
    if (p["value_ns"].is_null()) {
      if (p.contains("upper_bound_ns")) {  // not observable here: a bound, never a guessed value
        std::string why = p.value("error", std::string());
        if (const std::string share = methods::harness_share(doc, key); !share.empty()) why += "; " + share;
        std::fprintf(out, "  %-7s %12s   at most %.4f us (%s)\n", k, "hidden", p["upper_bound_ns"].get<double>() / 1e3,
                     why.c_str());
      } else if (p.contains("lower_bound_ns") && p["lower_bound_ns"].is_number()) {  // a floor, never a value
        std::fprintf(out, "  %-7s %12s   at least %.4f us (%s)\n", k, "n/a", p["lower_bound_ns"].get<double>() / 1e3,
                     p.value("error", std::string()).c_str());
      } else {
        std::fprintf(out, "  %-7s %12s   (%s)\n", k, "n/a", p.value("error", std::string("not measured")).c_str());
      }
      continue;
    }
    std::string range;
    if (p.contains("spread_ns")) {
      char b[64];
      std::snprintf(b, sizeof b, "%.4f..%.4f", p["spread_ns"]["min"].get<double>() / 1e3,
                    p["spread_ns"]["max"].get<double>() / 1e3);
      range = b;
    }
    // A method may give a figure without an interval: printed as such, never read as a missing key.
    const double ci = p.contains("ci95_ns") && p["ci95_ns"].is_number() ? p["ci95_ns"].get<double>() : 0.0;
    std::string how = p.value("ci_method", std::string());
    if (p.contains("bottleneck") && p["bottleneck"].is_string())
      how += (how.empty() ? "" : "; ") + std::string("limited by the ") + p["bottleneck"].get<std::string>();
    // A negative figure is never shown without what explains it.
    if (p["value_ns"].get<double>() < 0 && p.contains("note"))
      how += (how.empty() ? "" : "; ") + p["note"].get<std::string>();
    if (const std::string share = methods::harness_share(doc, key); !share.empty())
      how = share + (how.empty() ? "" : "; ") + how;
    if (const std::string share = methods::transport_share_note(doc, key); !share.empty())
      how += (how.empty() ? "" : "; ") + share;
    std::fprintf(out, "  %-7s %12.4f %12.4f %25s  %s\n", k, p["value_ns"].get<double>() / 1e3, ci / 1e3, range.c_str(),
                 how.c_str());
  }
  if (method && method->print) method->print(out, doc);  // what the method adds in its own words
  // A note is a property of the link that explains how a figure reads; a failed check, a figure in doubt.
  for (const auto& n : doc.value("notes", nlohmann::json::array()))
    std::fprintf(out, "  note: %s: %s\n", n.value("name", "").c_str(), n.value("detail", "").c_str());
  int failed = 0;
  for (const auto& c : doc.value("checks", nlohmann::json::array())) {
    if (c.value("ok", true)) continue;
    ++failed;
    std::fprintf(out, "  check failed (run %d): %s: %s\n", c.value("run", 0), c.value("name", "").c_str(),
                 c.value("detail", "").c_str());
  }
  if (failed == 0 && doc.contains("checks") && !doc["checks"].empty())
    std::fprintf(out, "  consistency checks: all passed\n");
}

}  // namespace logpb::app
