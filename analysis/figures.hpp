// Figures: a measured parameter with its 95% interval (Param), a check stated in words (Check), one
// parameter over repeated runs (combine_runs), and the arithmetic every method shares on such figures: a
// mean of independent estimates, a difference, a ratio, and whether two figures agree. Culler et al. 3.3
// and Bell et al. 5 report every figure with its interval; the statistics behind it live in common/stats.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/stats.hpp"

namespace logpb::analysis {

struct Param {
  double value = 0, ci95 = 0;
  bool valid = false;
  std::string note;  // why it is invalid, or how it was obtained
  static Param invalid(std::string why, double raw = std::nan(""));
  // Not observable here, but known to be at most `bound` (e.g. the NI's gap hidden behind the processor).
  static Param hidden(std::string why, double bound, double bound_ci = 0);
  // Not measured to a value, but known to be at least `bound` (e.g. a steady state whose curve was cut off in its
  // transition: the cost still rises towards it, so what was seen is a floor).
  static Param at_least(std::string why, double bound);
  double raw = std::nan("");          // the computed number even when invalid, for the record
  double upper_bound = std::nan("");  // with !valid: the parameter is at most this (JSON upper_bound_ns)
  double lower_bound = std::nan("");  // with !valid: the parameter is at least this (JSON lower_bound_ns)
  std::string ci_method;              // how ci95 was computed, when it is not the obvious one
  Estimate estimate() const { return {value, ci95}; }
};
void to_json(nlohmann::json& j, const Param& p);

struct Check {
  std::string name;
  bool ok = true;
  std::string detail;
};
void to_json(nlohmann::json& j, const Check& c);

// One parameter over repeated runs: the mean of the valid runs, a 95% interval that is the larger of
// the between-run Student-t interval and the within-run one, and the spread, so a figure that moves
// between runs is never reported with a falsely tight interval.
struct Combined {
  Param param;
  std::vector<double> runs;  // NaN where a run could not produce the parameter
  double min = 0, max = 0;
  std::string ci_method;
};
// step_ns: the clock step the figures were timed with (meta.tsc.resolution_ns; NaN or 0: not a time read off
// that clock, e.g. a fraction or a per-byte cost). A combined figure within one step of zero is then a bound
// (within_step), never a value.
Combined combine_runs(const std::vector<Param>& per_run, double step_ns = NAN);

// A time within one clock step of zero cannot be told from zero by that clock: a valid `p` with |value| at
// most `step_ns` comes back as no value, bounded above by the step (or value + ci95 when that is larger:
// the interval reaches past one step), the number kept in raw_value_ns and the reason in words. Anything
// else, and any p when step_ns is not a positive number, comes back unchanged.
Param within_step(const Param& p, double step_ns);

// The 95% half-width of a point that is the median (or mean) of `samples`, each of them a timed span that
// held `messages` messages divided by their number: the clock's step quantises each span, not each message,
// so the floor is step / messages (a burst of 512 messages on a 10 ns clock resolves 0.02 ns per message),
// not one step. The order-statistic interval of the median is that of common/stats' summarize; the mean's
// is Student-t.
double point_ci95(std::vector<double> samples, bool median, double step_ns, double messages);
void to_json(nlohmann::json& j, const Combined& c);

// The mean of independent estimates (ranks' gaps, runs' figures): the half-widths add in quadrature and
// shrink with their number, sqrt(sum ci^2) / n. NaN for none.
Estimate mean_of_independent(const std::vector<Estimate>& v);

// b - a, its half-width the two in quadrature: the difference of two independent estimates (different
// processes, each with its own samples; not a paired interval).
Estimate difference(const Estimate& a, const Estimate& b);

// a / b, its half-width by the delta method (first order: the relative half-widths in quadrature).
// NaN unless both are positive.
Estimate ratio(const Estimate& a, const Estimate& b);

// How two half-widths combine into what a difference may be and still be noise.
enum class Intervals {
  sum,         // ci_a + ci_b: the intervals overlap (a looser test)
  quadrature,  // sqrt(ci_a^2 + ci_b^2): the interval of the difference of independent estimates
};
// What a caller counts as agreement: a difference within the combined intervals, or within `relative` of
// `of` (a share of a reference figure, e.g. 5% for "the same to two significant digits"), whichever is
// wider.
struct AgreeRule {
  Intervals intervals = Intervals::quadrature;
  double relative = 0;
  double of = 0;
};
struct Agreement {
  bool agree = true;
  double difference = NAN;  // |b - a|
  double allowed = NAN;     // the widest difference the rule accepts (NaN: none can be judged)
};
// An unknown half-width (NaN) leaves the relative allowance alone; without one either, no difference can
// be told from noise and the figures agree.
Agreement agree(const Estimate& a, const Estimate& b, const AgreeRule& rule);

// a is not below b beyond their intervals: a + ci_a + ci_b >= b (one-sided, the intervals summed).
bool at_least(const Estimate& a, const Estimate& b);

}  // namespace logpb::analysis
