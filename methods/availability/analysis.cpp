#include "methods/availability/analysis.hpp"

#include <algorithm>
#include <string>

#include "common/disturbance.hpp"
#include "analysis/results_json.hpp"

namespace logpb::methods {

using namespace analysis;

nlohmann::json doerfler_record(const std::vector<methods::DoerflerSize>& v, double base_threshold,
                               double stop_threshold) {
  nlohmann::json curves = nlohmann::json::array();
  for (const auto& d : v) {
    nlohmann::json cs = nlohmann::json::array(), cr = nlohmann::json::array();
    for (const auto& p : d.send.curve) cs.push_back({p.work_ns, p.iter_ns});
    for (const auto& p : d.recv.curve) cr.push_back({p.work_ns, p.iter_ns});
    curves.push_back({{"bytes", d.bytes},
                      {"send_work_iter_ns", cs},
                      {"recv_work_iter_ns", cr},
                      {"send_segments", SegmentBook::merged({&d.send.point_segments, &d.send.segments})},
                      {"recv_segments", SegmentBook::merged({&d.recv.point_segments, &d.recv.segments})}});
  }
  return {{"method", "Doerfler & Brightwell post-work-wait (section 2), waiting for local completion"},
          {"base_threshold", base_threshold},
          {"stop_threshold", stop_threshold},
          {"curves", curves}};
}

nlohmann::json doerfler_summary(const std::vector<std::vector<methods::DoerflerSize>>& runs) {
  nlohmann::json checks = nlohmann::json::array(), notes = nlohmann::json::array();
  const auto& v = runs.back();
  nlohmann::json per = nlohmann::json::array();
  const std::string how =
      "order-statistic interval of the median of (iteration - work) per iteration at the stop point";
  for (std::size_t i = 0; i < v.size(); ++i) {
    nlohmann::json e = {{"bytes", v[i].bytes}};
    for (const bool send : {true, false}) {
      std::vector<Param> over, avail;
      for (const auto& run : runs) {
        const auto& s = send ? run[i].send : run[i].recv;
        over.push_back(!s.refusal.empty()  ? Param::invalid(s.refusal)
                       : !s.completed      ? Param::invalid("the iteration time never reached the stop threshold")
                       : !(s.overhead > 0) ? Param::invalid("iteration minus work is not positive: the work loop "
                                                            "or the timer is wrong",
                                                            s.overhead)
                                           : param_of(s.overhead, s.overhead_ci, "", how));
        // availability is a fraction, carried in Param's value for combine_runs.
        avail.push_back(s.completed && s.availability >= 0 && s.availability <= 1
                            ? param_of(s.availability, s.availability_ci)
                            : Param::invalid(!s.refusal.empty() ? s.refusal
                                             : s.completed      ? "overhead exceeds the transfer time or is negative"
                                                                : "the stop threshold was never reached",
                                             s.availability));
      }
      const auto& s = send ? v[i].send : v[i].recv;
      nlohmann::json side = {
          {"overhead", over_runs(over)}, {"base_t_ns", s.base_t}, {"iter_t_ns", s.iter_t}, {"work_t_ns", s.work_t}};
      const auto a = combine_runs(avail);
      side["availability"] = a.param.valid ? nlohmann::json(a.param.value) : nlohmann::json(nullptr);
      side["availability_ci95"] = a.param.valid ? nlohmann::json(a.param.ci95) : nlohmann::json(nullptr);
      if (!a.param.valid) side["availability_error"] = a.param.note;
      // Doerfler & Brightwell's availability is the share of the transfer the CPU can overlap. When the NI
      // reports a send complete inside the send call (a PMD that copies the frame out and frees its mbuf in
      // tx_burst, memif, mlx5 inline; a CPU-driven NI; shm's ring slot), the wait hides nothing and the
      // figure is ~0 whatever the wire does: it then describes how completion is reported, and says so, in a
      // note: a property of the link, not a doubt about a figure (the overhead is still the send up to its
      // completion).
      const std::string size = std::to_string(v[i].bytes) + " B";
      const bool inside_call =
          send && s.completed && s.base_t > 0 && s.overhead >= s.base_t - std::max(0.05 * s.base_t, s.overhead_ci);
      if (inside_call) {
        side["availability_meaning"] =
            "local completion came inside the send call (the iteration time at zero work, " + std::to_string(s.base_t) +
            " ns, is the overhead itself): no work hid behind the wait, so this availability says how the NI reports "
            "completion (see meta.transport.local_completion), not how much of a transfer the CPU can overlap";
        add_note(notes, "local completion inside the send call (" + size + ")",
                 side["availability_meaning"].get<std::string>());
        notes.back()["about"] = nlohmann::json::array({"availability"});
      }
      e[send ? "send" : "recv"] = side;
      e[send ? "o_s_completion" : "o_r"] = side["overhead"];
      const std::string name = std::string("availability in [0,1] (") + (send ? "send" : "recv") + " " + size + ")";
      if (!a.param.valid && inside_call) {
        // With nothing to overlap the share has no transfer to be a share of: 0 less the overhead's noise,
        // below 0 as often as not, and far below where the send takes a few clock steps. The same property of
        // the link, which the figure's own error (null, with why) already states; the figure is never given.
        add_note(notes, "availability outside [0,1] (send " + size + ")",
                 a.param.note + ": local completion came inside the send call, so there is no transfer to overlap");
        notes.back()["about"] = nlohmann::json::array({"availability"});
        continue;
      }
      add_check(checks, name, a.param.valid, a.param.note);
      // The share, not the overhead it is computed from.
      checks.back()["about"] = nlohmann::json::array({"availability"});
    }
    per.push_back(e);
  }
  nlohmann::json params = nlohmann::json::object();
  if (!v.empty()) {
    params = {{"o_s_completion", per.front()["o_s_completion"]}, {"o_r", per.front()["o_r"]}};
    params["o_s_completion"]["note"] = "Doerfler & Brightwell send overhead at " + std::to_string(v.front().bytes) +
                            " B: post, then wait for local completion (the NI is done with the buffer)";
    params["o_r"]["note"] = "Doerfler & Brightwell receive overhead at the smallest size";
  }
  return {{"parameters", params}, {"per_size", per}, {"checks", checks}, {"notes", notes}};
}

}  // namespace logpb::methods
