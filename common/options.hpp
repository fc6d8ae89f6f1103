// What every part of the command line (the job, each transport, the methods) checks its options with:
// whether the user gave one, a range in the words the user reads, and an option refused for a transport
// that has no use for it; and the comma-separated lists several of them take.
#pragma once

#include <cstdio>
#include <exception>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "common/errors.hpp"

namespace logpb::cli {

namespace po = boost::program_options;

// On the command line, not just defaulted.
inline bool given(const po::variables_map& vm, const char* k) { return vm.count(k) && !vm[k].defaulted(); }

// UsageError "--NAME must be in [lo, hi]" unless lo <= v <= hi (NaN fails).
inline void check_range(const char* name, double v, double lo, double hi) {
  if (v >= lo && v <= hi) return;
  char range[96];
  std::snprintf(range, sizeof range, " must be in [%g, %g]", lo, hi);
  throw UsageError(std::string("--") + name + range);
}

// UsageError "--K belongs to --transport T" for the first of `keys` given.
inline void refuse_given(const po::variables_map& vm, std::initializer_list<const char*> keys, const char* transport) {
  for (const char* k : keys)
    if (given(vm, k)) throw UsageError(std::string("--") + k + " belongs to --transport " + transport);
}

// Comma-separated items, empty ones dropped.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// A comma-separated list of ascending positive integers (--sizes, --bursts, --k); UsageError naming `what`.
inline std::vector<int> parse_int_list(const std::string& what, const std::string& s) {
  std::vector<int> v;
  for (const auto& x : split_list(s)) {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(x, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != x.size() || n < 1) throw UsageError(what + ": '" + x + "' is not a positive integer");
    if (!v.empty() && n <= v.back()) throw UsageError(what + ": values must be ascending");
    v.push_back(n);
  }
  if (v.empty()) throw UsageError(what + ": empty list");
  return v;
}

}  // namespace logpb::cli
