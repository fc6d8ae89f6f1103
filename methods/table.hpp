// The tables a run prints, as data: one definition serves the screen (aligned columns, perftest's
// layout) and --csv (one header line, then one line per row). A method that has its own table defines
//   static std::vector<Table> tables(const nlohmann::json& doc);
// in its descriptor (pingpong: perftest's latency table; bw: ib_send_bw's columns); every other method's
// table is the parameters table (the LogP figures with their intervals) that app/report.cpp prints.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace logpb::methods {

struct Table {
  std::string name;                               // the CSV file's suffix when a run writes several tables
  std::vector<std::string> columns;               // perftest's names where the meaning matches
  std::vector<std::vector<nlohmann::json>> rows;  // cells: a number, a string, or null (not measured)
  int decimals = 2;                               // on screen (the CSV keeps full precision)
  std::vector<int> column_decimals;               // per column where it differs (empty: `decimals` for all)
  std::vector<std::size_t> min_widths;            // on screen, per column (perftest's layout); wider cells widen it
};

// The parameters table of any method: name, value and interval in microseconds (or the parameter's own
// unit), the runs' range, and what a missing value means.
Table parameters_table(const nlohmann::json& doc);

// The harness's own share of o_s or o_r (meta.harness: the AM layer against a null NI), as the words
// printed beside the figure ("of which logpbench: 12.3 ns"); empty for other keys or when not measured.
std::string harness_share(const nlohmann::json& doc, const std::string& key);
// The transport's own share beside it (on rtt, o_s and o_r; empty where the run recorded no bare loop of its
// transport, meta.transport_floor): per message, from the small AM's round trip over that loop.
std::string transport_share_note(const nlohmann::json& doc, const std::string& key);

// The run's tables: the method's own (its tables(doc)), else the parameters table.
std::vector<Table> run_tables(const nlohmann::json& doc);

// Aligned text, each line indented by two spaces; null prints as n/a.
void print_text(std::FILE* out, const Table& t);

// CSV (RFC 4180 quoting, LF line ends): a header line and one line per row; null is an empty cell;
// numbers at full precision.
std::string csv_text(const Table& t);

// Writes the run's tables (atomically): the first to `path`, any further one to path's stem + "-" + its
// name + ".csv" (quick.csv, quick-latency.csv, quick-bw.csv). Returns the files written.
std::vector<std::string> write_csv(const std::string& path, const nlohmann::json& doc);

}  // namespace logpb::methods
