// A method's own command-line option (--NAME VALUE), declared once beside the method that owns it and
// listed in the `options` of every descriptor that takes it (methods/descriptor.hpp). The command line
// (app/options.cpp) builds the option, its --help line, its check and its record in meta.flags from the
// declaration alone; a method reads the value through Settings::get.
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/options.hpp"

namespace logpb::methods {

struct Settings;

// What a typed option holds once read and checked.
using MethodValue = std::variant<std::string, int, double, bool, std::vector<int>, std::vector<double>>;

// A text option is the first four fields: kept as given in Settings::method_args, checked by the method's
// check(), agreed by every rank. A typed option (see Typed below) is read and checked here.
struct MethodOption {
  // What Boost reads off the command line, and so what meta.flags records: the text, an int, a double,
  // or a switch with no value.
  enum class Cli { text, integer, real, flag };

  const char* name = nullptr;
  const char* value_name = nullptr;
  const char* help = nullptr;           // a text option's help is shown after the names of the methods taking it
  const char* default_value = nullptr;  // text: the default as given; nullptr: none (recorded only when given)
  Cli cli = Cli::text;
  MethodValue initial{};  // a typed option's default, as the methods read it
  // A typed option's value from what the command line holds (its text, int or double; for a flag, whether
  // it was given), checked (UsageError). `so_far` holds the typed options read before it.
  std::function<MethodValue(const MethodValue& given, const Settings& so_far)> read{};
  const char* no_help = nullptr;  // a flag with a --no-NAME form: that form's help
  // Given with a method that does not list it: refused. The typed options are accepted with any method,
  // as scripts hand one set of options to several methods, and pairs passes them to its --pairs-bench.
  bool refused_elsewhere = true;

  bool typed() const { return static_cast<bool>(read); }
};

// A typed option whose value the methods read as T (Settings::get, Settings::set).
template <class T>
struct Typed : MethodOption {};

namespace option {

// An int in [lo, hi], with the usual "--NAME must be in [lo, hi]".
inline Typed<int> integer(const char* name, const char* help, int initial, double lo, double hi) {
  Typed<int> o;
  o.name = name, o.value_name = "arg", o.help = help, o.cli = MethodOption::Cli::integer, o.initial = initial;
  o.read = [name, lo, hi](const MethodValue& v, const Settings&) -> MethodValue {
    cli::check_range(name, std::get<int>(v), lo, hi);
    return v;
  };
  o.refused_elsewhere = false;
  return o;
}

// A double in [lo, hi] (bounds from `range`, which may read the options before it).
inline Typed<double> real(const char* name, const char* help, double initial,
                          std::function<std::pair<double, double>(const Settings&)> range) {
  Typed<double> o;
  o.name = name, o.value_name = "arg", o.help = help, o.cli = MethodOption::Cli::real, o.initial = initial;
  o.read = [name, range](const MethodValue& v, const Settings& so_far) -> MethodValue {
    const auto [lo, hi] = range(so_far);
    cli::check_range(name, std::get<double>(v), lo, hi);
    return v;
  };
  o.refused_elsewhere = false;
  return o;
}

inline Typed<double> real(const char* name, const char* help, double initial, double lo, double hi) {
  return real(name, help, initial, [lo, hi](const Settings&) { return std::pair{lo, hi}; });
}

// Text the option parses into T. The empty text, as no text, leaves `initial`; `shown` is --help's default.
template <class T>
Typed<T> parsed(const char* name, const char* help, T initial, std::function<T(const std::string&)> parse,
                const char* shown = nullptr) {
  Typed<T> o;
  o.name = name, o.value_name = "arg", o.help = help, o.default_value = shown, o.initial = std::move(initial);
  o.read = [parse = std::move(parse), fallback = o.initial](const MethodValue& v, const Settings&) -> MethodValue {
    const std::string& s = std::get<std::string>(v);
    if (s.empty()) return fallback;
    return parse(s);
  };
  o.refused_elsewhere = false;
  return o;
}

// A switch, off unless given; with `no_help`, a --no-NAME form too (giving both is refused).
inline Typed<bool> flag(const char* name, const char* help, const char* no_help = nullptr) {
  Typed<bool> o;
  o.name = name, o.help = help, o.cli = MethodOption::Cli::flag, o.initial = false, o.no_help = no_help;
  o.read = [](const MethodValue& v, const Settings&) { return v; };
  o.refused_elsewhere = false;
  return o;
}

}  // namespace option

}  // namespace logpb::methods
