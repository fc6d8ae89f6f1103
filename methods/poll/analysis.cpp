#include "methods/poll/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "common/stats.hpp"

namespace logpb::methods::poll_fit {

using namespace analysis;

namespace {

analysis::Param valid(double value, double ci, std::string note) {
  analysis::Param p;
  p.value = value;
  p.ci95 = ci;
  p.valid = true;
  p.note = std::move(note);
  return p;
}

std::string ns_text(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

}  // namespace

Fit fit_poll(const std::vector<Sample>& samples, double resolution_ns, std::size_t min_samples) {
  Fit f;
  std::map<int, std::vector<double>> by;
  for (const auto& s : samples)
    if (s.frames > 0 && std::isfinite(s.ns)) by[s.frames].push_back(s.ns);
  for (auto& [frames, v] : by) {
    if (v.size() < min_samples) continue;
    const Summary sm = summarize(v);
    f.points.push_back({frames, sm.n, sm.median, std::max(sm.ci95_median, resolution_ns), 0});
  }
  for (const auto& p : f.points)
    if (p.frames == 1)
      f.one_frame = valid(p.median_ns, p.ci95_ns, "median of the timed polls that handed up one frame");
  if (!f.one_frame.valid) f.one_frame = analysis::Param::invalid("no frame count 1 with enough timed polls");
  if (f.points.size() < 2) {
    const std::string why =
        f.points.empty() ? "no frame count had enough timed polls"
                         : "every timed poll handed up the same number of frames (" +
                               std::to_string(f.points.front().frames) +
                               "): the fixed and per-frame costs cannot be parted, only their sum is measured";
    f.fixed = analysis::Param::invalid(why);
    f.per_frame = analysis::Param::invalid(why);
    return f;
  }
  // Weighted least squares, each point weighted by its median's own variance (1.96 standard errors in
  // its interval): under a VM's interruptions the medians of large batches scatter far more than those of
  // small ones, and an unweighted line would follow the noisiest point.
  std::vector<double> x, y, w;
  for (const auto& p : f.points) {
    x.push_back(p.frames);
    y.push_back(p.median_ns);
    const double se = p.ci95_ns / kZ95;
    w.push_back(1 / (se * se));
  }
  const LineFit line = fit_line(x, y, w);
  if (!line.ok) {
    f.fixed = f.per_frame = analysis::Param::invalid("the line could not be fitted");
    return f;
  }
  f.dof = line.dof;
  // Each coefficient's half-width: the larger of what the points' own intervals give (the weighted fit's
  // standard error, times 1.96) and the Student-t one from the scatter about the line (n - 2 dof), so
  // neither a line through two points nor a perfect fit of noisy medians looks exact.
  const double ci_b = slope_ci95(line), ci_a = intercept_ci95(line);
  const std::string how = "least squares through the median time per frame count (" +
                          std::to_string(f.points.size()) +
                          " counts, each weighted by its median's interval); interval the larger of Student-t on " +
                          std::to_string(line.dof) + " dof and the points' own intervals propagated";
  // A poll's fixed part cannot be negative: a line that says so is bent by something other than the frames.
  if (line.intercept + ci_a < 0)
    f.fixed = analysis::Param::invalid("the line's intercept is below zero beyond its interval (" +
                                           ns_text(line.intercept) + " +- " + ns_text(ci_a) +
                                           " ns): the poll time is not a + b x frames here",
                                       line.intercept);
  else
  {
    f.fixed = valid(std::max(0.0, line.intercept), ci_a, "a: " + how);
    f.fixed.raw = line.intercept;  // recorded where it was held at zero
  }
  if (!(line.slope - ci_b > 0))
    f.per_frame = analysis::Param::invalid("the time per frame is not above zero beyond its interval (" +
                                               ns_text(line.slope) + " +- " + ns_text(ci_b) + " ns)",
                                           line.slope);
  else
    f.per_frame = valid(line.slope, ci_b, "b: " + how);
  f.fixed.ci_method = f.per_frame.ci_method = "max(student_t_resid, propagated_point_ci)";
  std::string off;
  for (auto& p : f.points) {
    p.residual_ns = p.median_ns - (line.intercept + line.slope * p.frames);
    const double allowed = std::max({2 * p.ci95_ns, 0.10 * p.median_ns, resolution_ns});
    if (std::fabs(p.residual_ns) > allowed) {
      f.linear = false;
      off += (off.empty() ? "" : "; ") + std::to_string(p.frames) + " frames: " + ns_text(p.median_ns) +
             " ns, the line " + ns_text(p.median_ns - p.residual_ns) + " (allowed " + ns_text(allowed) + ")";
    }
  }
  f.linear_detail = f.linear ? "every frame count within max(2 x its interval, 10%, one clock step) of the line"
                             : "off the line: " + off;
  return f;
}

namespace {
// The median of v with the order statistics' interval, floored at `floor`; NaN value for fewer than 6.
Estimate median_estimate(std::vector<double> v, double floor) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.size() < 6) return {};
  std::sort(v.begin(), v.end());
  return {quantile_of_sorted(v, 0.5), std::max(median_ci95_of_sorted(v), floor)};
}
}  // namespace

analysis::Param stream_receive(const std::vector<double>& period, const std::vector<double>& compute, int block,
                               double resolution_ns) {
  std::vector<double> rest;
  for (std::size_t i = 0; i < period.size() && i < compute.size(); ++i) rest.push_back(period[i] - compute[i]);
  const Estimate e = median_estimate(rest, resolution_ns / std::max(1, block));
  if (!std::isfinite(e.value)) return analysis::Param::invalid("fewer than 6 blocks of the stream were timed");
  if (e.value <= 0)
    return analysis::Param::invalid("the stream's time per message is not above its computation", e.value);
  analysis::Param p = valid(e.value, e.ci95,
                            "median over " + std::to_string(rest.size()) + " blocks of " + std::to_string(block) +
                                " messages of the time per message less the computation");
  p.ci_method = "order statistics of the median, floored at one clock step / messages per block";
  return p;
}

analysis::Param empty_poll(const std::vector<double>& block_means, int block, double resolution_ns) {
  std::vector<double> v;
  for (double x : block_means)
    if (std::isfinite(x)) v.push_back(x);
  if (v.size() < 6) return analysis::Param::invalid("fewer than 6 blocks of empty polls were timed");
  std::sort(v.begin(), v.end());
  const double med = quantile_of_sorted(v, 0.5);
  const double floor = resolution_ns / std::max(1, block);
  analysis::Param p = valid(med, std::max(median_ci95_of_sorted(v), floor),
                            "median over " + std::to_string(v.size()) + " spans of " + std::to_string(block) +
                                " back-to-back polls that found nothing, per poll");
  p.ci_method = "order statistics of the median, floored at one clock step / polls per span";
  if (med < floor)
    return analysis::Param::hidden("an empty poll is below one clock step over the span (" + ns_text(floor) + " ns)",
                                   floor);
  return p;
}

Stream stream_of(const std::vector<std::uint64_t>& per_count) {
  Stream s;
  for (std::size_t n = 0; n < per_count.size(); ++n) {
    s.polls += per_count[n];
    s.frames += per_count[n] * n;
  }
  s.empty = per_count.empty() ? 0 : per_count[0];
  const std::uint64_t found = s.polls - s.empty;
  if (found == 0) return s;
  s.mean = static_cast<double>(s.frames) / static_cast<double>(found);
  // The median frames per poll that found something: the count at which half those polls are reached.
  std::uint64_t seen = 0;
  for (std::size_t n = 1; n < per_count.size(); ++n) {
    seen += per_count[n];
    if (2 * seen >= found) {
      s.median = static_cast<double>(n);
      break;
    }
  }
  s.empty_share_of_polls = static_cast<double>(s.empty) / static_cast<double>(s.polls);
  return s;
}

analysis::Param stream_prediction(const analysis::Param& a, const analysis::Param& b, double f) {
  if (!a.valid || !b.valid) return analysis::Param::invalid("needs a and b: " + (a.valid ? b.note : a.note));
  if (!(f >= 1)) return analysis::Param::invalid("the stream's polls handed up no frames");
  return valid(a.value / f + b.value, std::hypot(a.ci95 / f, b.ci95),
               "a / f + b at f = " + ns_text(f) + " frames per poll (Bell et al. 4.3's o_r in a stream)");
}

analysis::Param single_prediction(const Fit& fit) {
  if (fit.fixed.valid && fit.per_frame.valid)
    return valid(fit.fixed.value + fit.per_frame.value, std::hypot(fit.fixed.ci95, fit.per_frame.ci95),
                 "a + b: one poll that finds one waiting message (Kielmann et al. 3's o_r)");
  if (fit.one_frame.valid) {
    analysis::Param p = fit.one_frame;
    p.note = "the one-frame poll measured (a and b cannot be parted here): Kielmann et al. 3's o_r";
    return p;
  }
  return analysis::Param::invalid("neither the line nor one-frame polls: " + fit.fixed.note);
}

int receive_batch(const nlohmann::json& d, std::string& source) {
  auto positive = [&](const char* key) {
    return d.contains(key) && d[key].is_number_integer() && d[key].get<int>() >= 1;
  };
  if (positive("rx_batch")) {
    source = "the emulated NI's batch (rx_batch)";
    return d["rx_batch"].get<int>();
  }
  if (positive("cq_batch")) {
    source = "completions taken per CQ read (cq_batch)";
    return d["cq_batch"].get<int>();
  }
  if (positive("burst")) {
    source = "frames taken per rx burst (burst)";
    return d["burst"].get<int>();
  }
  if (d.value("kind", std::string()) == "shm") {
    source = "the shm ring hands up one frame per poll";
    return 1;
  }
  source = "the transport names no receive batch: taken as one frame per poll";
  return 1;
}

std::vector<int> frame_counts(int batch, int cap) {
  const int top = std::max(1, std::min(batch, cap));
  std::vector<int> ks;
  for (int k = 1; k < top; k *= 2) ks.push_back(k);
  ks.push_back(top);
  return ks;
}

}  // namespace logpb::methods::poll_fit
