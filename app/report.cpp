#include "report.hpp"

#include <string>

namespace logpb::app {

void print_table(std::FILE* out, const nlohmann::json& doc) {
  const auto& meta = doc.value("meta", nlohmann::json::object());
  const auto& flags = meta.value("flags", nlohmann::json::object());
  std::string emu;
  if (meta.contains("transport") && meta["transport"].contains("emulation") && !meta["transport"]["emulation"].is_null())
    emu = " emulating " + meta["transport"]["emulation"].value("spec", std::string{});
  std::fprintf(out, "logpbench %s: %s over %s%s, %d run(s)\n", meta.value("version", "?").c_str(),
               flags.value("bench", "?").c_str(), flags.value("transport", "?").c_str(), emu.c_str(),
               flags.value("runs", 1));
  std::fprintf(out, "  %-5s %12s %12s %25s\n", "", "value (us)", "95% CI (us)", "runs min..max (us)");
  const auto& params = doc.value("parameters", nlohmann::json::object());
  for (const char* k : {"o_s", "o_r", "g", "L", "rtt"}) {
    if (!params.contains(k)) continue;
    const auto& p = params[k];
    if (p["value_ns"].is_null()) {
      std::fprintf(out, "  %-5s %12s   (%s)\n", k, "n/a", p.value("error", std::string("not measured")).c_str());
      continue;
    }
    std::string range;
    if (p.contains("spread_ns")) {
      char b[64];
      std::snprintf(b, sizeof b, "%.4f..%.4f", p["spread_ns"]["min"].get<double>() / 1e3,
                    p["spread_ns"]["max"].get<double>() / 1e3);
      range = b;
    }
    const double ci = p["ci95_ns"].is_null() ? 0.0 : p["ci95_ns"].get<double>();
    std::fprintf(out, "  %-5s %12.4f %12.4f %25s\n", k, p["value_ns"].get<double>() / 1e3, ci / 1e3, range.c_str());
  }
  for (const auto& r : doc.value("runs", nlohmann::json::array())) {
    if (!r.contains("verify")) continue;
    for (const auto& c : r["verify"])
      std::fprintf(out, "  bulk %7d bytes: store %s, get %s\n", c.value("bytes", 0), c.value("store_ok", false) ? "exact" : "CORRUPT",
                   c.value("get_ok", false) ? "exact" : "CORRUPT");
  }
  int failed = 0;
  for (const auto& c : doc.value("checks", nlohmann::json::array())) {
    if (c.value("ok", true)) continue;
    ++failed;
    std::fprintf(out, "  check failed (run %d): %s: %s\n", c.value("run", 0), c.value("name", "").c_str(),
                 c.value("detail", "").c_str());
  }
  if (failed == 0 && doc.contains("checks") && !doc["checks"].empty()) std::fprintf(out, "  consistency checks: all passed\n");
}

}  // namespace logpb::app
