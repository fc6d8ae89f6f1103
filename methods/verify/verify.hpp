// --bench verify: a self-check, not a measurement (methods/verify/loops.hpp): bulk stores and gets of
// sizes across the NI's frame size land byte for byte. A transport that fails it is broken: the run ends
// with an error once the results are saved.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "methods/descriptor.hpp"
#include "methods/settings.hpp"
#include "methods/verify/loops.hpp"

namespace logpb::methods::method {

struct verify {
  static constexpr const char* name = "verify";
  static constexpr const char* summary = "self-check: bulk store and get are byte-exact";
  static constexpr const char* plot = "";
  static constexpr Needs needs{.bulk = true, .get = true};
  static constexpr Scope scope = Scope::link;
  using Run = std::vector<methods::VerifyCase>;

  template <class L>
  static Run run(L& link, methods::ClientState& st, const Clock&, const Settings& o, RunIO& io) {
    io.progress("verifying bulk store and get");
    return methods::verify_bulk(link, st, o.segment_bytes, 12345);
  }
  static nlohmann::json record(const Run& r, const Settings&) {
    nlohmann::json v = nlohmann::json::array();
    for (const auto& c : r) v.push_back({{"bytes", c.bytes}, {"store_ok", c.store_ok}, {"get_ok", c.get_ok}});
    return {{"verify", v}};
  }
  static nlohmann::json analyse(const std::vector<Run>& runs, const Settings&) {
    int failed_run = -1;
    for (std::size_t k = 0; k < runs.size() && failed_run < 0; ++k)
      for (const auto& c : runs[k])
        if (!c.store_ok || !c.get_ok) failed_run = static_cast<int>(k);
    const bool all = failed_run < 0;
    return {
        {"parameters", nlohmann::json::object()},
        {"checks",
         {{{"name", "bulk store and get are byte-exact"},
           {"ok", all},
           {"detail", all ? "every size" : "a size failed: see runs[" + std::to_string(failed_run) + "].verify"}}}}};
  }
  static void verdict(const nlohmann::json& analysed) {
    const auto& c = analysed["checks"][0];
    if (!c["ok"].get<bool>())
      throw std::runtime_error(
          "bulk verification failed: " + c["detail"].get<std::string>().substr(std::string("a size failed: ").size()) +
          " in the results");
  }
  // One line per size: exact, or corrupt in how many runs.
  static void print(std::FILE* out, const nlohmann::json& doc) {
    const auto runs = doc.value("runs", nlohmann::json::array());
    if (runs.empty() || !runs[0].contains("verify")) return;
    for (std::size_t i = 0; i < runs[0]["verify"].size(); ++i) {
      int store_bad = 0, get_bad = 0, n = 0;
      for (const auto& r : runs) {
        if (!r.contains("verify") || i >= r["verify"].size()) continue;
        ++n;
        store_bad += !r["verify"][i].value("store_ok", false);
        get_bad += !r["verify"][i].value("get_ok", false);
      }
      auto word = [n](int bad) {
        if (bad == 0) return std::string("exact");
        return n == 1 ? std::string("CORRUPT")
                      : "CORRUPT in " + std::to_string(bad) + " of " + std::to_string(n) + " runs";
      };
      std::fprintf(out, "  bulk %7d bytes: store %s, get %s\n", runs[0]["verify"][i].value("bytes", 0),
                   word(store_bad).c_str(), word(get_bad).c_str());
    }
  }
};

}  // namespace logpb::methods::method
