// Runs the chosen method on a connected client endpoint, any transport: one definition of each method
// serves every transport. The method is looked up in the registry (methods/descriptor.hpp); one loop repeats it
// for --runs, records each run, rebuilds the parameters over all runs and checkpoints the results.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/am.hpp"
#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/transport.hpp"
#include "methods/all_methods.hpp"
#include "methods/descriptor.hpp"
#include "methods/messages.hpp"
#include "methods/protocol.hpp"

namespace logpb::app {

// Calls f.template operator()<M>() for the registered method named `name`; false when there is none.
// The job runner finds a job-level method (Scope::job) this way.
template <class F, class... M>
bool with_method(std::string_view name, F&& f, methods::MethodList<M...>) {
  return ((name == M::name ? (f.template operator()<M>(), true) : false) || ...);
}
template <class F>
bool with_method(std::string_view name, F&& f) {
  return with_method(name, std::forward<F>(f), methods::AllMethods{});
}

// Whether link type L gives what method M needs (decided at compile time: a method is never instantiated
// for a transport that cannot run it).
template <class L>
inline constexpr bool link_has_bulk = BulkTransport<std::remove_cvref_t<decltype(std::declval<L&>().transport())>>;
template <class M, class L>
inline constexpr bool can_run = (!M::needs.bulk || link_has_bulk<L>)&&(!M::needs.get ||
                                                                       link_has_bulk<L>)&&(!M::needs.local_completion ||
                                                                                           L::has_local_completion);

template <class M, class L>
[[noreturn]] void refuse_transport() {
  std::string what;
  if (M::needs.bulk && !link_has_bulk<L>)
    what = "bulk transfers (store and get)";
  else
    what = "local completion of a send (what Bell et al.'s flood and Doerfler & Brightwell's loop wait for)";
  throw UsageError(std::string("--bench ") + M::name + " needs " + what + ", which this transport lacks");
}

// The one repetition loop: --runs runs of M, each recorded in runs[k] (checkpointed while it runs), and
// after each the parameters, per-size tables and checks rebuilt from every run so far.
template <class M, class L>
void repeat_method(L& link, methods::ClientState& st, const Clock& clock, const Options& o, ResultsDoc& doc,
                   Progress& progress) {
  if constexpr (!can_run<M, L>) {
    refuse_transport<M, L>();
  } else {
    methods::RunIO io;
    if constexpr (M::needs.bulk) {
      const methods::MethodInfo* info = methods::find_method(M::name);
      io.sizes = methods::method_sizes(*info, o.sizes, methods::max_message(link));
    }
    std::vector<typename M::Run> runs;
    for (int r = 0; r < o.runs; ++r) {
      const std::string label = o.runs > 1 ? "run " + std::to_string(r + 1) + "/" + std::to_string(o.runs) + ": " : "";
      io.progress = [&](const std::string& s) { progress(label + s); };
      io.done = [&progress, r, runs = o.runs](double f) { progress.fraction((r + std::clamp(f, 0.0, 1.0)) / runs); };
      io.done(0);
      io.checkpoint = [&](const nlohmann::json& partial) {
        doc.j["runs"].back() = partial;
        doc.save();
      };
      doc.j["runs"].push_back(nlohmann::json::object());
      runs.push_back(M::run(link, st, clock, o, io));
      doc.j["runs"].back() = M::record(runs.back(), o);
      const nlohmann::json analysed = M::analyse(runs, o);
      for (const auto& [k, v] : analysed.items()) doc.j[k] = v;
      doc.save();
      if constexpr (requires { M::verdict(analysed); }) M::verdict(analysed);
    }
  }
}

// The chosen method on one link (requester -> replier).
template <class L>
void run_methods(L link, methods::ClientState& st, const Clock& clock, const Options& o, ResultsDoc& doc,
                 Progress& progress) {
  const methods::MethodInfo* info = methods::find_method(o.bench);
  if (!info) throw UsageError("--bench " + o.bench + ": no such method (" + methods::method_names(", ", " or ") + ")");
  doc.j["meta"]["method"] = {
      {"name", info->name},
      {"summary", info->summary},
      {"plot", info->plot},
      {"needs",
       {{"bulk", info->needs.bulk}, {"get", info->needs.get}, {"local_completion", info->needs.local_completion}}}};
  if (!doc.j.contains("runs")) doc.j["runs"] = nlohmann::json::array();
  with_method(o.bench, [&]<class M>() {
    if constexpr (M::scope == methods::Scope::job)
      throw UsageError(std::string("--bench ") + M::name + " runs on the whole job, not on one link");
    else
      repeat_method<M>(link, st, clock, o, doc, progress);
  });
}

// The AM layer's own counts (frames refused by reason, losses) go into meta.am.counters.
template <class EP>
void record_counters(const EP& ep, ResultsDoc& doc) {
  nlohmann::json c = ep.counters();
  c["loss_events"] = ep.loss_events();
  c["lost_requests"] = ep.lost_requests();
  doc.j["meta"]["am"]["counters"] = c;
}

template <class EP>
void run_client_bench(EP& ep, int peer, const Clock& clock, const Options& o, ResultsDoc& doc, Progress& progress) {
  struct Record {  // on every way out, including errors
    const EP& ep;
    ResultsDoc& doc;
    ~Record() { record_counters(ep, doc); }
  } record{ep, doc};
  methods::ClientState st;
  methods::install_client(ep, st);
  doc.j["runs"] = nlohmann::json::array();
  run_methods(am::Link<EP>(ep, peer), st, clock, o, doc, progress);
}

}  // namespace logpb::app
