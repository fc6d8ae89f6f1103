#include "shm/emulation.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace logpb::shm {

double parse_duration_ns(const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw UsageError("'" + s + "' is not a duration (examples: 250ns, 1.4us, 2ms)");
  }
  const std::string unit = s.substr(used);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "µs")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit.empty() && v == 0)
    scale = 1;
  else
    throw UsageError("'" + s + "' needs a unit: ns, us, ms or s");
  if (!std::isfinite(v)) throw UsageError("'" + s + "' is not a finite duration");
  return v * scale;
}

namespace {
const char* const kKnownKeys =
    "' (known: os, or, g, L, C, G, os_per_byte, or_per_byte, h, wait, batch, cq, signal, rs, jitter, stall, seed)";

// The value of key k as an integer in [lo, hi]; `what` says what it counts.
int integer_value(const std::string& k, const std::string& v, int lo, int hi, const char* what) {
  std::size_t used = 0;
  long c = -1;
  try {
    c = std::stol(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || c < lo || c > hi)
    throw UsageError("--emulate: " + k + " (" + what + ") must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + v + "'");
  return static_cast<int>(c);
}

int capacity_value(const std::string& v) {
  std::size_t used = 0;
  int c = -1;
  try {
    c = std::stoi(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || c < 1 || c > 4096)
    throw UsageError("--emulate: capacity C must be an integer in [1, 4096], not '" + v + "'");
  return c;
}

// stall=PERIOD/LENGTH: the emulated NI stops for LENGTH once every PERIOD.
void set_stall(Emulation& e, const std::string& v) {
  const auto slash = v.find('/');
  if (slash == std::string::npos)
    throw UsageError("--emulate: stall takes PERIOD/LENGTH (e.g. stall=1ms/20us), not '" + v + "'");
  e.stall_period_ns = parse_duration_ns(v.substr(0, slash));
  e.stall_ns = parse_duration_ns(v.substr(slash + 1));
  if (!(e.stall_ns >= 0) || !(e.stall_period_ns > e.stall_ns))
    throw UsageError("--emulate: stall=" + v + ": the period must be longer than the stall, both >= 0");
}

// The keys whose value is no duration: C, batch, signal and rs, seed, stall, wait. False: k is none of them.
bool set_non_time(Emulation& e, const std::string& k, const std::string& v) {
  if (k == "C" || k == "capacity") {
    e.capacity = capacity_value(v);
  } else if (k == "batch") {
    e.batch = integer_value(k, v, 1, 256, "frames handed up per poll");
  } else if (k == "signal" || k == "rs") {
    e.signal_every = integer_value(k, v, 1, 1024, "completion reported every k-th send");
    e.signal_tracked = k == "signal";
  } else if (k == "seed") {
    e.seed = static_cast<std::uint64_t>(integer_value(k, v, 0, 1 << 30, "the jitter's seed"));
  } else if (k == "stall") {
    set_stall(e, v);
  } else if (k == "wait") {
    if (v != "spin" && v != "sleep" && v != "auto")
      throw UsageError("--emulate: wait must be spin, sleep or auto, not '" + v + "'");
    e.waiting = v;
  } else {
    return false;
  }
  return true;
}

// The field a duration key sets (nullptr: no such key).
double Emulation::*time_field(const std::string& k) {
  static const std::pair<const char*, double Emulation::*> kTimes[] = {
      {"os", &Emulation::o_s_ns},
      {"o_s", &Emulation::o_s_ns},
      {"or", &Emulation::o_r_ns},
      {"o_r", &Emulation::o_r_ns},
      {"g", &Emulation::g_ns},
      {"L", &Emulation::L_ns},
      {"G", &Emulation::G_ns},
      {"os_per_byte", &Emulation::o_s_per_byte_ns},
      {"or_per_byte", &Emulation::o_r_per_byte_ns},
      {"h", &Emulation::handler_ns},
      {"handler", &Emulation::handler_ns},
      {"cq", &Emulation::cq_ns},
      {"jitter", &Emulation::jitter_ns},
  };
  for (const auto& [name, field] : kTimes)
    if (k == name) return field;
  return nullptr;
}

// One key=value item of the specification.
void set_item(Emulation& e, const std::string& item) {
  const auto eq = item.find('=');
  if (eq == std::string::npos) throw UsageError("--emulate: '" + item + "' is not key=value");
  const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
  if (set_non_time(e, k, v)) return;
  // An unknown key is named before its value is read ('bogus=3' is not a duration problem).
  double Emulation::*field = time_field(k);
  if (!field) throw UsageError("--emulate: unknown key '" + k + kKnownKeys);
  const double ns = parse_duration_ns(v);
  if (ns < 0) throw UsageError("--emulate: " + k + " = " + v + " is negative; LogP parameters are times >= 0");
  e.*field = ns;
}

// What no single key can tell: the parameters' sum and the jitter's need of an L.
void check_emulation(const Emulation& e) {
  // g < o_s or g < o_r is today's NI (a ConnectX-6 injects every ~5 ns against hundreds of ns of software
  // overhead): accepted; the processor is then the bottleneck and methods must say g is hidden.
  if (e.jitter_ns > 0 && e.L_ns <= 0)
    throw UsageError("--emulate: jitter needs an L to scale g's share of it (jitter adds to L, and J g / L to g)");
  if (e.o_s_ns + e.o_r_ns + e.g_ns + e.L_ns + e.handler_ns + e.cq_ns + e.jitter_ns + e.stall_ns > 1e9)
    throw UsageError("--emulate: parameters above one second would make the run last hours");
}
}  // namespace

Emulation parse_emulation(const std::string& spec) {
  Emulation e;
  e.enabled = true;
  e.spec = spec;
  std::stringstream ss(spec);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    any = true;
    set_item(e, item);
  }
  if (!any) throw UsageError("--emulate: empty specification");
  check_emulation(e);
  return e;
}

void to_json(nlohmann::json& j, const Emulation& e) {
  if (!e.enabled) {
    j = nullptr;
    return;
  }
  j = {{"spec", e.spec},
       {"o_s_ns", e.o_s_ns},
       {"o_r_ns", e.o_r_ns},
       {"g_ns", e.g_ns},
       {"L_ns", e.L_ns},
       {"capacity", e.capacity},
       {"G_ns_per_byte", e.G_ns},
       {"o_s_per_byte_ns", e.o_s_per_byte_ns},
       {"o_r_per_byte_ns", e.o_r_per_byte_ns},
       {"handler_ns", e.handler_ns},
       {"wait", e.waiting},
       {"batch", e.batch},
       {"cq_ns", e.cq_ns},
       {"signal_every", e.signal_every},
       {"signal_tracked", e.signal_tracked},
       {"jitter_ns", e.jitter_ns},
       {"jitter_distribution", e.jitter_ns > 0 ? "L + Exp(mean J); g + Exp(mean J g / L); seeded" : ""},
       {"stall_period_ns", e.stall_period_ns},
       {"stall_ns", e.stall_ns},
       {"seed", e.seed},
       {"real_ni_behaviours", e.behaves()}};
}

}  // namespace logpb::shm
