// What a method reads of the command line: the budgets several methods share, and each method's own
// options by name (method_option.hpp). app::Options (app/options.hpp) derives from it, so the command line
// fills it in place; descriptors (descriptor.hpp) take it, and a method that sets its own budgets edits one.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/stats.hpp"
#include "methods/method_option.hpp"

namespace logpb::methods {

struct Settings {
  int iterations = 10000, warmup = 1000;
  std::uint32_t size = 0;                             // ping-pong message size (perftest's -s)
  bool size_given = false, iterations_given = false;  // -s, -n on the command line (bw has its own defaults)
  std::uint32_t segment_bytes = 1 << 20;
  StopRule rule;
  // size-based methods
  std::vector<std::uint32_t> sizes;  // empty: each method's default
  int runs = 3;
  bool raw = false;
  // The methods' own options (method_option.hpp), by name, with their defaults where not given: the text
  // ones as given (the method parses its own), the typed ones read and checked.
  std::map<std::string, std::string> method_args;
  const std::string& method_arg(const std::string& name) const {
    const auto it = method_args.find(name);
    if (it == method_args.end()) throw std::logic_error("no method option --" + name);
    return it->second;
  }
  std::map<std::string, MethodValue> method_values;
  // A typed option's value; its default in Settings never parsed (a budget built from scratch, a test).
  template <class T>
  const T& get(const Typed<T>& opt) const {
    const auto it = method_values.find(opt.name);
    return std::get<T>(it == method_values.end() ? opt.initial : it->second);
  }
  template <class T>
  void set(const Typed<T>& opt, std::type_identity_t<T> v) {
    method_values[opt.name] = std::move(v);
  }
};

}  // namespace logpb::methods
