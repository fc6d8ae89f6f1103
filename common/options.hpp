// What every part of the command line (the job, each transport, the methods) checks its options with:
// whether the user gave one, a range in the words the user reads, and an option refused for a transport
// that has no use for it.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <string>

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

}  // namespace logpb::cli
