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

// What the command line asked: the result files, in order (the first is the baseline), and the outputs.
struct CompareArgs {
  std::vector<std::string> paths;
  std::string names_list, json_out, csv_out;
  bool names_given = false;
  bool help = false;
};

po::options_description compare_options(CompareArgs& a) {
  po::options_description opts("logpbench compare A.json B.json [C.json …] [--names a,b,…] [--json OUT] [--csv OUT]");
  opts.add_options()("help,h", "this text")("names", po::value(&a.names_list),
                                            "one name per file, comma-separated (default: each run's transport when "
                                            "unique, else transport-bench, else A, B, …)")(
      "json", po::value(&a.json_out), "write the comparison here (atomically); scripts/report draws it")(
      "csv", po::value(&a.csv_out), "write the same table as CSV");
  return opts;
}

void print_help(const po::options_description& opts) {
  std::cout << opts
            << "\nThe first file is the baseline. For every other file, each parameter both share (o_s, o_r, g, L,\n"
               "rtt, G, … and the per-size figures: g(m), T(n), BW(n), availability, …) as one line:\n"
               "  <a>-vs-<b> <param>: <a> X ± a, <b> Y ± b, added Z ± c\n"
            << kIntervals
            << "Warns when the runs differ in a knob that changes a figure (meta.flags) or in host/CPU.\n"
               "Exit 2: fewer than two files, a file that is not a logpbench result, or runs sharing no parameter.\n";
}

// Reads the command line into `a`; returns the options (for --help).
po::options_description parse_compare_args(int argc, const char* const* argv, CompareArgs& a) {
  po::options_description opts = compare_options(a);
  po::options_description hidden;
  hidden.add_options()("result", po::value(&a.paths)->composing());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("result", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
  po::notify(vm);
  a.help = vm.count("help") > 0;
  a.names_given = vm.count("names") > 0;
  return opts;
}

// The runs compared, and every pair of the baseline with another run.
struct Comparison {
  std::vector<json> docs;
  std::vector<std::string> names;
  std::vector<cmp::Pair> pairs;
  std::vector<std::string> warnings, harness;
};

Comparison compare_files(const CompareArgs& a) {
  if (a.paths.size() < 2)
    throw cmp::Refused("compare needs at least two results (the first is the baseline), got " +
                       std::to_string(a.paths.size()));
  Comparison c;
  for (const auto& p : a.paths) c.docs.push_back(load_result(p));
  c.names = a.names_given ? cmp::parse_names(a.names_list, c.docs.size()) : cmp::default_names(c.docs);
  for (std::size_t i = 1; i < c.docs.size(); ++i)
    c.pairs.push_back(cmp::compare_pair(c.docs[0], c.docs[i], c.names[0], c.names[i], methods::compare_reading));
  c.warnings = cmp::knob_warnings(c.docs, c.names);
  c.harness = cmp::harness_lines(c.docs, c.names);
  return c;
}

// The comparison on stdout: the runs, how to read the intervals, warnings, then one line per parameter.
// Returns those lines (the JSON keeps them).
json print_comparison(const Comparison& c, const std::vector<std::string>& paths) {
  std::printf("compare: baseline %s", c.names[0].c_str());
  for (std::size_t i = 0; i < c.docs.size(); ++i)
    std::printf("%s  %s = %s (%s over %s)", i ? "," : ":", c.names[i].c_str(), paths[i].c_str(),
                cmp::bench_of(c.docs[i]).c_str(), cmp::transport_of(c.docs[i]).c_str());
  std::printf("\n");
  std::stringstream ss(kIntervals);
  for (std::string l; std::getline(ss, l);) std::printf("# %s\n", l.c_str());
  for (const auto& w : c.warnings) std::printf("warning: %s\n", w.c_str());
  for (const auto& h : c.harness) std::printf("# %s\n", h.c_str());
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("-") : s;
  };
  json lines = json::array();
  for (const auto& p : c.pairs) {
    for (const auto& r : p.rows) {
      const std::string l = cmp::format_line(p, r);
      std::printf("%s\n", l.c_str());
      lines.push_back(l);
    }
    if (!p.only_a.empty() || !p.only_b.empty())
      std::printf("# only in %s: %s; only in %s: %s\n", p.a.c_str(), list(p.only_a).c_str(), p.b.c_str(),
                  list(p.only_b).c_str());
  }
  return lines;
}

// The comparison as a document (schema logpbench-compare/1), for --json.
json comparison_json(const Comparison& c, const std::vector<std::string>& paths, const json& lines) {
  json out;
  out["schema"] = "logpbench-compare/1";
  out["status"] = "complete";
  out["version"] = version_string();
  out["baseline"] = c.names[0];
  out["ci_method"] =
      "95% half-widths; a difference is other - baseline, its half-width the runs' half-widths "
      "combined in quadrature (independent runs)";
  out["runs"] = json::array();
  for (std::size_t i = 0; i < c.docs.size(); ++i) {
    const json& m = c.docs[i]["meta"];
    json r = {{"name", c.names[i]},
              {"path", paths[i]},
              {"bench", cmp::bench_of(c.docs[i])},
              {"transport", cmp::transport_of(c.docs[i])},
              {"status", c.docs[i].value("status", json(nullptr))},
              {"host", m.value("host", json(nullptr))},
              {"cpu", m.value("cpu", json(nullptr))},
              {"version", m.value("version", json(nullptr))},
              {"emulation", m.value("emulation", json(nullptr))},
              {"figure", cmp::figure_inputs(c.docs[i], methods::compare_reading)}};
    out["runs"].push_back(r);
  }
  out["warnings"] = c.warnings;
  out["harness"] = c.harness;
  out["comparisons"] = json::array();
  for (const auto& p : c.pairs) out["comparisons"].push_back(cmp::pair_json(p));
  out["lines"] = lines;
  return out;
}

}  // namespace

int run_compare(int argc, const char* const* argv) {
  try {
    CompareArgs a;
    const po::options_description opts = parse_compare_args(argc, argv, a);
    if (a.help) {
      print_help(opts);
      return 0;
    }
    const Comparison c = compare_files(a);
    const json lines = print_comparison(c, a.paths);
    if (!a.json_out.empty()) {
      write_json_atomic(a.json_out, comparison_json(c, a.paths, lines));
      std::printf("compare: %s\n", a.json_out.c_str());
    }
    if (!a.csv_out.empty()) {
      write_text_atomic(a.csv_out, cmp::csv(c.pairs));
      std::printf("compare: %s\n", a.csv_out.c_str());
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
