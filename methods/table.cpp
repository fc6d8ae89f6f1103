#include "methods/table.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "analysis/results_json.hpp"
#include "common/errors.hpp"
#include "common/results.hpp"
#include "methods/all_methods.hpp"

namespace logpb::methods {
namespace {

// Parameters that are not times carry their own unit in value_ns (app/report.cpp prints them alike).
std::string unit_of(const std::string& key) {
  if (key == "G" || key == "G_ni") return "ns/byte";
  if (key == "crossover_bytes") return "bytes";
  if (key == "R_inf_bytes_per_ns") return "bytes/ns";
  return "us";
}

template <class M>
std::vector<Table> own_tables(const nlohmann::json& doc) {
  if constexpr (requires(const nlohmann::json& j) { M::tables(j); })
    return M::tables(doc);
  else
    return {parameters_table(doc)};
}

template <class... M>
std::vector<Table> tables_of(std::string_view bench, const nlohmann::json& doc, MethodList<M...>) {
  std::vector<Table> out;
  const bool found = ((bench == M::name ? (out = own_tables<M>(doc), true) : false) || ...);
  if (!found) out = {parameters_table(doc)};
  return out;
}

std::string cell_text(const nlohmann::json& c, int decimals) {
  if (c.is_null()) return "n/a";
  if (c.is_string()) return c.get<std::string>();
  if (c.is_number_integer() || c.is_number_unsigned()) return c.dump();
  if (c.is_number()) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", decimals, c.get<double>());
    return b;
  }
  return c.dump();
}

std::string csv_cell(const nlohmann::json& c) {
  std::string s;
  if (c.is_null()) return s;
  if (c.is_string()) {
    s = c.get<std::string>();
  } else if (c.is_number_float()) {
    char b[64];
    std::snprintf(b, sizeof b, "%.9g", c.get<double>());
    s = b;
  } else {
    s = c.dump();
  }
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

std::string harness_share(const nlohmann::json& doc, const std::string& key) {
  const char* figure = key == "o_s" ? "send_ns" : key == "o_r" ? "recv_ns" : nullptr;
  if (!figure) return {};
  const auto& h = doc.value("meta", nlohmann::json::object()).value("harness", nlohmann::json::object());
  if (!h.contains(figure) || !h[figure].is_object()) return {};
  const auto& f = h[figure];
  char b[96];
  if (f.value("value_ns", nlohmann::json(nullptr)).is_number())
    std::snprintf(b, sizeof b, "of which logpbench: %.1f ns", f["value_ns"].get<double>());
  else if (f.value("upper_bound_ns", nlohmann::json(nullptr)).is_number())
    std::snprintf(b, sizeof b, "of which logpbench: under %.1f ns", f["upper_bound_ns"].get<double>());
  else
    return {};
  return b;
}

// Beside the AM layer's share, the transport's own (analysis::transport_share): per message, from the small
// AM's round trip over the transport's bare loop in the same run. Said on rtt, and on o_s and o_r, which
// each hold a part of it that the round trip cannot tell apart.
std::string transport_share_note(const nlohmann::json& doc, const std::string& key) {
  if (key != "rtt" && key != "o_s" && key != "o_r") return {};
  const auto t = analysis::transport_share(doc);
  if (!t) return {};
  char b[240];
  if (t->floor_above()) {
    if (key != "rtt") return {};
    std::snprintf(b, sizeof b,
                  "its bare %s loop in this run took %.0f ns, more than this round trip less the AM layer: the "
                  "link changed between them, so no split",
                  t->transport.c_str(), t->floor_rtt_ns);
  } else if (t->transport_ns < 0) {
    std::snprintf(b, sizeof b, "%s%s transport under %.1f ns%s (over a bare loop in this run, %.0f ns)",
                  key == "rtt" ? "of which logpbench: " : "", t->transport.c_str(), t->transport_ns + t->ci95_ns,
                  key == "rtt" ? " per message" : " per message, send and receive together", t->floor_rtt_ns);
  } else if (key == "rtt")
    std::snprintf(b, sizeof b,
                  "of which logpbench, over a bare %s loop in this run (%.0f ns): AM layer 2 x %.1f ns, %s "
                  "transport 2 x %.1f +- %.1f ns",
                  t->transport.c_str(), t->floor_rtt_ns, t->am_layer_ns, t->transport.c_str(), t->transport_ns,
                  t->ci95_ns);
  else
    std::snprintf(b, sizeof b,
                  "%s transport %.1f +- %.1f ns per message, send and receive together (meta.transport_floor)",
                  t->transport.c_str(), t->transport_ns, t->ci95_ns);
  return b;
}

Table parameters_table(const nlohmann::json& doc) {
  Table t{"parameters", {"parameter", "value", "95% CI", "runs min", "runs max", "unit", "note"}, {}, 4, {}, {}};
  const auto& params = doc.value("parameters", nlohmann::json::object());
  std::vector<std::string> keys{"o_s", "o_r", "g", "G", "L", "L_plogp", "g0", "rtt"};
  for (const auto& [k, v] : params.items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  for (const auto& key : keys) {
    if (!params.contains(key) || !params[key].is_object()) continue;
    const auto& p = params[key];
    const std::string unit = unit_of(key);
    const double scale = unit == "us" ? 1e-3 : 1.0;
    auto scaled = [&](const nlohmann::json& x) -> nlohmann::json {
      return x.is_number() ? nlohmann::json(x.get<double>() * scale) : nlohmann::json(nullptr);
    };
    const nlohmann::json value = p.value("value_ns", nlohmann::json(nullptr));
    const nlohmann::json spread = p.value("spread_ns", nlohmann::json::object());
    std::string note = p.value("error", std::string());
    if (value.is_null() && p.contains("upper_bound_ns") && p["upper_bound_ns"].is_number()) {
      char b[96];
      std::snprintf(b, sizeof b, "hidden: at most %.6g %s", p["upper_bound_ns"].get<double>() * scale, unit.c_str());
      note = b + (note.empty() ? "" : "; " + note);
    } else if (value.is_null() && p.contains("lower_bound_ns") && p["lower_bound_ns"].is_number()) {
      char b[96];
      std::snprintf(b, sizeof b, "at least %.6g %s", p["lower_bound_ns"].get<double>() * scale, unit.c_str());
      note = b + (note.empty() ? "" : "; " + note);
    }
    if (note.empty()) note = p.value("ci_method", std::string());
    if (const std::string share = harness_share(doc, key); !share.empty()) note += (note.empty() ? "" : "; ") + share;
    if (const std::string share = transport_share_note(doc, key); !share.empty())
      note += (note.empty() ? "" : "; ") + share;
    t.rows.push_back({key, scaled(value), scaled(p.value("ci95_ns", nlohmann::json(nullptr))),
                      scaled(spread.value("min", nlohmann::json(nullptr))),
                      scaled(spread.value("max", nlohmann::json(nullptr))), unit, note});
  }
  return t;
}

std::vector<Table> run_tables(const nlohmann::json& doc) {
  const std::string bench =
      doc.value("meta", nlohmann::json::object()).value("flags", nlohmann::json::object()).value("bench", "");
  return tables_of(bench, doc, AllMethods{});
}

void print_text(std::FILE* out, const Table& t) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width;
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    width.push_back(std::max(t.columns[i].size(), i < t.min_widths.size() ? t.min_widths[i] : 0));
  for (const auto& r : t.rows) {
    cells.emplace_back();
    for (std::size_t i = 0; i < r.size(); ++i) {
      cells.back().push_back(cell_text(r[i], i < t.column_decimals.size() ? t.column_decimals[i] : t.decimals));
      if (i < width.size()) width[i] = std::max(width[i], cells.back().back().size());
    }
  }
  auto line = [&](const std::vector<std::string>& v) {
    std::string s = " ";
    for (std::size_t i = 0; i < v.size(); ++i) {
      s += ' ' + v[i];
      if (i + 1 < v.size() && i < width.size() && v[i].size() < width[i]) s += std::string(width[i] - v[i].size(), ' ');
    }
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(t.columns);
  for (const auto& r : cells) line(r);
}

std::string csv_text(const Table& t) {
  std::string s;
  for (std::size_t i = 0; i < t.columns.size(); ++i) s += (i ? "," : "") + csv_cell(t.columns[i]);
  s += "\n";
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + csv_cell(r[i]);
    s += "\n";
  }
  return s;
}

std::vector<std::string> write_csv(const std::string& path, const nlohmann::json& doc) {
  const std::vector<Table> tables = run_tables(doc);
  std::vector<std::string> written;
  std::string stem = path;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".csv") == 0) stem.resize(stem.size() - 4);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const std::string p = i == 0 ? path : stem + "-" + tables[i].name + ".csv";
    write_text_atomic(p, csv_text(tables[i]));
    written.push_back(p);
  }
  return written;
}

}  // namespace logpb::methods
