#include "app/compare.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "common/errors.hpp"
#include "common/results.hpp"
#include "methods/descriptor.hpp"

namespace po = boost::program_options;
using nlohmann::json;
namespace cmp = logpb::analysis::compare;

namespace logpb::app {
namespace {

json load_result(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw cmp::Refused(path + ": cannot open (" + std::strerror(errno) + ")");
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::exception& e) {
    throw cmp::Refused(path + ": not valid JSON, not a logpbench result (" + e.what() + ")");
  }
  cmp::check_result(doc, path);
  return doc;
}

const char* const kIntervals =
    "Intervals are 95% half-widths. A difference is other − baseline (\"added\"); the runs are independent, so\n"
    "its half-width is the two runs' half-widths combined in quadrature, sqrt(a² + b²); a difference within it\n"
    "is marked \"not resolved\" (the runs agree). A value a run could not observe is shown as hidden or n/a\n"
    "with its bound and reason, never as a number; its difference is n/a.\n";

}  // namespace

int run_compare(int argc, const char* const* argv) {
  std::vector<std::string> paths;
  std::string names_list, json_out, csv_out;
  po::options_description opts("logpbench compare A.json B.json [C.json …] [--names a,b,…] [--json OUT] [--csv OUT]");
  opts.add_options()("help,h", "this text")("names", po::value(&names_list),
                                            "one name per file, comma-separated (default: each run's transport when "
                                            "unique, else transport-bench, else A, B, …)")(
      "json", po::value(&json_out), "write the comparison here (atomically); scripts/report draws it")(
      "csv", po::value(&csv_out), "write the same table as CSV");
  po::options_description hidden;
  hidden.add_options()("result", po::value(&paths)->composing());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("result", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout
          << opts
          << "\nThe first file is the baseline. For every other file, each parameter both share (o_s, o_r, g, L,\n"
             "rtt, G, … and the per-size figures: g(m), T(n), BW(n), availability, …) as one line:\n"
             "  <a>-vs-<b> <param>: <a> X ± a, <b> Y ± b, added Z ± c\n"
          << kIntervals
          << "Warns when the runs differ in a knob that changes a figure (meta.flags) or in host/CPU.\n"
             "Exit 2: fewer than two files, a file that is not a logpbench result, or runs sharing no parameter.\n";
      return 0;
    }
    if (paths.size() < 2)
      throw cmp::Refused("compare needs at least two results (the first is the baseline), got " +
                         std::to_string(paths.size()));
    std::vector<json> docs;
    for (const auto& p : paths) docs.push_back(load_result(p));
    const std::vector<std::string> names =
        vm.count("names") ? cmp::parse_names(names_list, docs.size()) : cmp::default_names(docs);

    std::vector<cmp::Pair> pairs;
    for (std::size_t i = 1; i < docs.size(); ++i)
      pairs.push_back(cmp::compare_pair(docs[0], docs[i], names[0], names[i], methods::compare_reading));
    const auto warnings = cmp::knob_warnings(docs, names);
    const auto harness = cmp::harness_lines(docs, names);

    std::printf("compare: baseline %s", names[0].c_str());
    for (std::size_t i = 0; i < docs.size(); ++i)
      std::printf("%s  %s = %s (%s over %s)", i ? "," : ":", names[i].c_str(), paths[i].c_str(),
                  cmp::bench_of(docs[i]).c_str(), cmp::transport_of(docs[i]).c_str());
    std::printf("\n");
    {
      std::stringstream ss(kIntervals);
      std::string l;
      while (std::getline(ss, l)) std::printf("# %s\n", l.c_str());
    }
    for (const auto& w : warnings) std::printf("warning: %s\n", w.c_str());
    for (const auto& h : harness) std::printf("# %s\n", h.c_str());
    json lines = json::array();
    for (const auto& p : pairs) {
      for (const auto& r : p.rows) {
        const std::string l = cmp::format_line(p, r);
        std::printf("%s\n", l.c_str());
        lines.push_back(l);
      }
      if (!p.only_a.empty() || !p.only_b.empty()) {
        auto list = [](const std::vector<std::string>& v) {
          std::string s;
          for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
          return s.empty() ? std::string("-") : s;
        };
        std::printf("# only in %s: %s; only in %s: %s\n", p.a.c_str(), list(p.only_a).c_str(), p.b.c_str(),
                    list(p.only_b).c_str());
      }
    }

    if (!json_out.empty()) {
      json out;
      out["schema"] = "logpbench-compare/1";
      out["status"] = "complete";
      out["version"] = version_string();
      out["baseline"] = names[0];
      out["ci_method"] =
          "95% half-widths; a difference is other - baseline, its half-width the runs' half-widths "
          "combined in quadrature (independent runs)";
      out["runs"] = json::array();
      for (std::size_t i = 0; i < docs.size(); ++i) {
        const json& m = docs[i]["meta"];
        json r = {{"name", names[i]},
                  {"path", paths[i]},
                  {"bench", cmp::bench_of(docs[i])},
                  {"transport", cmp::transport_of(docs[i])},
                  {"status", docs[i].value("status", json(nullptr))},
                  {"host", m.value("host", json(nullptr))},
                  {"cpu", m.value("cpu", json(nullptr))},
                  {"version", m.value("version", json(nullptr))},
                  {"emulation", m.value("emulation", json(nullptr))},
                  {"figure", cmp::figure_inputs(docs[i], methods::compare_reading)}};
        out["runs"].push_back(r);
      }
      out["warnings"] = warnings;
      out["harness"] = harness;
      out["comparisons"] = json::array();
      for (const auto& p : pairs) out["comparisons"].push_back(cmp::pair_json(p));
      out["lines"] = lines;
      write_json_atomic(json_out, out);
      std::printf("compare: %s\n", json_out.c_str());
    }
    if (!csv_out.empty()) {
      write_text_atomic(csv_out, cmp::csv(pairs));
      std::printf("compare: %s\n", csv_out.c_str());
    }
    return 0;
  } catch (const cmp::Refused& e) {
    std::fprintf(stderr, "logpbench compare: %s\n", e.what());
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "logpbench compare: %s (see logpbench compare --help)\n", e.what());
    return 2;
  } catch (const json::exception& e) {
    std::fprintf(stderr, "logpbench compare: malformed result: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logpbench compare: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace logpb::app
