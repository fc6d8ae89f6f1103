#include "analysis/figures.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace logpb::analysis {

Param Param::invalid(std::string why, double raw) {
  Param p;
  p.valid = false;
  p.value = p.ci95 = std::nan("");
  p.note = std::move(why);
  p.raw = raw;
  return p;
}

Param Param::hidden(std::string why, double bound, double bound_ci) {
  Param p = invalid(std::move(why));
  p.upper_bound = bound + (std::isfinite(bound_ci) ? bound_ci : 0);
  return p;
}

Param Param::at_least(std::string why, double bound) {
  Param p = invalid(std::move(why));
  p.lower_bound = bound;
  return p;
}

Param within_step(const Param& p, double step_ns) {
  if (!p.valid || !(step_ns > 0) || !std::isfinite(step_ns) || !(std::fabs(p.value) <= step_ns)) return p;
  const double reach = p.value + (std::isfinite(p.ci95) ? p.ci95 : 0);
  const double bound = std::max(step_ns, reach);
  char buf[256];
  if (bound > step_ns)
    std::snprintf(buf, sizeof buf,
                  "%.1f ns, within one clock step (%.1f ns) of zero: this clock cannot tell it from zero; with "
                  "its interval it is below %.1f ns",
                  p.value, step_ns, bound);
  else
    std::snprintf(buf, sizeof buf,
                  "< 1 step (%.0f ns): %.1f ns is within one clock step of zero, which this clock cannot tell "
                  "from zero",
                  step_ns, p.value);
  Param b = Param::hidden(buf, bound);
  b.raw = p.value;
  b.ci_method = p.ci_method;
  return b;
}

double point_ci95(std::vector<double> v, bool median, double step_ns, double messages) {
  const double floor = step_ns > 0 && messages >= 1 ? step_ns / messages : 0;
  if (!median) return v.size() < 2 ? std::nan("") : std::max(mean_ci95(v).ci95, floor);
  if (v.size() < 6) return std::nan("");
  std::sort(v.begin(), v.end());
  return std::max(median_ci95_of_sorted(v), floor);
}

void to_json(nlohmann::json& j, const Param& p) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  if (p.valid) {
    j = {{"value_ns", num(p.value)}, {"ci95_ns", num(p.ci95)}};
    if (!p.note.empty()) j["note"] = p.note;
    if (std::isfinite(p.raw) && p.raw != p.value) j["raw_value_ns"] = p.raw;  // the value was bounded (idle at 0)
  } else {
    j = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", p.note}};
    if (std::isfinite(p.raw)) j["raw_value_ns"] = p.raw;
    if (std::isfinite(p.upper_bound)) j["upper_bound_ns"] = p.upper_bound;
    if (std::isfinite(p.lower_bound)) j["lower_bound_ns"] = p.lower_bound;
  }
  if (!p.ci_method.empty()) j["ci_method"] = p.ci_method;
}

void to_json(nlohmann::json& j, const Check& c) { j = {{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}}; }

Combined combine_runs(const std::vector<Param>& per_run, double step_ns) {
  Combined c;
  std::vector<double> v;
  std::vector<Estimate> own;
  std::string why;
  for (const auto& p : per_run) {
    c.runs.push_back(p.valid ? p.value : std::nan(""));
    if (p.valid) {
      v.push_back(p.value);
      own.push_back(p.estimate());
    } else if (why.empty()) {
      why = p.note;
    }
  }
  if (v.empty()) {
    c.param = Param::invalid(why.empty() ? "no run produced this parameter" : why);
    double bound = -INFINITY;
    for (const auto& p : per_run)
      if (std::isfinite(p.upper_bound)) bound = std::max(bound, p.upper_bound);
    if (std::isfinite(bound)) c.param.upper_bound = bound;  // the loosest of the runs' bounds
    double floor = INFINITY;
    for (const auto& p : per_run)
      if (std::isfinite(p.lower_bound)) floor = std::min(floor, p.lower_bound);
    if (std::isfinite(floor)) c.param.lower_bound = floor;  // likewise: the lowest of the runs' floors
    c.min = c.max = std::nan("");
    return c;
  }
  const Estimate between = mean_ci95(v);             // the runs' scatter
  const Estimate within = mean_of_independent(own);  // the runs' own intervals
  c.min = *std::min_element(v.begin(), v.end());
  c.max = *std::max_element(v.begin(), v.end());
  double ci = within.ci95;
  std::string how;  // how the runs computed their own intervals, when they said
  for (const auto& p : per_run)
    if (p.valid && !p.ci_method.empty()) how = p.ci_method;
  c.ci_method = how.empty() ? "propagated within the run" : how;
  if (v.size() >= 2) {
    if (!std::isfinite(ci) || between.ci95 > ci) {
      ci = between.ci95;
      c.ci_method = "Student-t over " + std::to_string(v.size()) + " runs";
    } else {
      c.ci_method = (how.empty() ? std::string("propagated within runs") : how) + " (exceeds the between-run interval)";
    }
  }
  if (!std::isfinite(ci)) c.ci_method = "none: a run gave no interval of its own, and there is no second run";
  c.param.value = c.param.raw = between.value;
  c.param.ci95 = ci;
  c.param.valid = true;
  if (v.size() < per_run.size())
    c.param.note = std::to_string(per_run.size() - v.size()) + " of " + std::to_string(per_run.size()) +
                   " runs gave no value: " + why;
  // The mean of the runs within one clock step of zero is no value either (Culler et al. 3.3 reads figures
  // off a clock; one step is the least it can tell apart). Each run's number stays in runs_ns.
  const Param bounded = within_step(c.param, step_ns);
  if (!bounded.valid) c.param = bounded;
  return c;
}

void to_json(nlohmann::json& j, const Combined& c) {
  to_json(j, c.param);
  if (!c.param.valid && std::isfinite(c.param.raw)) {  // bounded by the clock step: the runs are still shown
    nlohmann::json runs = nlohmann::json::array();
    for (double x : c.runs) runs.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
    j["runs_ns"] = runs;
  }
  if (!c.param.valid) return;
  nlohmann::json runs = nlohmann::json::array();
  for (double x : c.runs) runs.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  j["runs_ns"] = runs;
  j["spread_ns"] = {{"min", c.min}, {"max", c.max}};
  j["ci_method"] = c.ci_method;
}

Estimate mean_of_independent(const std::vector<Estimate>& v) {
  if (v.empty()) return {};
  double s = 0, var = 0;
  for (const auto& e : v) {
    s += e.value;
    var += e.ci95 * e.ci95;
  }
  const double n = static_cast<double>(v.size());
  return {s / n, std::sqrt(var) / n};
}

Estimate difference(const Estimate& a, const Estimate& b) { return {b.value - a.value, std::hypot(a.ci95, b.ci95)}; }

Estimate ratio(const Estimate& a, const Estimate& b) {
  if (!(a.value > 0 && b.value > 0)) return {};
  const double r = a.value / b.value;
  return {r, r * std::hypot(a.ci95 / a.value, b.ci95 / b.value)};
}

Agreement agree(const Estimate& a, const Estimate& b, const AgreeRule& rule) {
  Agreement r;
  r.difference = std::fabs(b.value - a.value);
  const double intervals = rule.intervals == Intervals::sum ? a.ci95 + b.ci95 : std::hypot(a.ci95, b.ci95);
  const double share = rule.relative > 0 ? rule.relative * rule.of : NAN;
  r.allowed = std::isnan(intervals) ? share : std::isnan(share) ? intervals : std::max(share, intervals);
  r.agree = !(r.difference > r.allowed);
  return r;
}

bool at_least(const Estimate& a, const Estimate& b) { return a.value + a.ci95 + b.ci95 >= b.value; }

}  // namespace logpb::analysis
