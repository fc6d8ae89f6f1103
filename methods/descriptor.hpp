// One descriptor per measurement method, and the catalogue of them (built in methods/catalogue.cpp) that option
// validation, --help, the printed table, the plots (through meta.method.plot) and the run dispatch all read.
//
// A method lives in a folder methods/<folder>/ whose CMakeLists.txt names it (logpb_methods(NAME)); its
// descriptor methods/<folder>/NAME.hpp defines `struct logpb::methods::method::NAME`, and methods/CMakeLists.txt
// generates the list of them, so adding a method edits no shared file. Its members:
//   static constexpr const char* name, summary, plot;  // --bench NAME; one line for --help; the figure kind
//                                                      // analysis/logpb_plots.py draws ("" for none)
//   static constexpr Needs needs;                      // what it asks of a transport (checked before it runs)
//   static constexpr Scope scope;                      // Scope::link, or Scope::job (see below)
//   static inline const std::vector<std::uint32_t> default_sizes;  // optional: a method over message sizes
//   using Run = ...;                                   // what one run measures
//   template <class L> static Run run(L& link, methods::ClientState&, const Clock&, const Settings&, RunIO&);
//   static nlohmann::json record(const Run&, const Settings&);        // runs[k] of the results
//   static nlohmann::json analyse(const std::vector<Run>&, const Settings&);
//                                   // {parameters, checks, per_size...}: every run so far, rebuilt after each
//   static void print(std::FILE*, const nlohmann::json& doc);  // optional: lines after the table
//   static void verdict(const nlohmann::json& analysed);       // optional: throws when the run proved a fault
//   static inline const std::vector<MethodOption> options;     // optional: the command-line options it
//                                   // takes (--NAME VALUE, method_option.hpp), each declared once in the
//                                   // folder of the method that owns it; recorded in meta.flags
//   static void check(const Settings&);                         // optional: validates its text options
//   static constexpr Takes takes;                               // optional: which shared options it takes
//   static constexpr analysis::compare::Reading compare_as;     // optional: how `compare` names its figures
//   static constexpr ContentionShape contention;                // optional: a contention method's shape
//   static inline const std::vector<SharedFigure> shares;       // optional: the LogP figures it shares with
//                                   // other methods and its paper's definition of each (read by `agree`)
//   static constexpr bool own_table;                            // optional: print() shows the parameters
//                                   // in a table of its own, in place of the usual one (agree's LogP table)
//   static constexpr bool burst_cap;                            // optional: it runs bursts capped in time
//                                   // by --max-burst-time, whose automatic value the core probe before
//                                   // the run sets from its median interval (app/main.cpp)
//   static void budgets(const Given&, Settings&);               // optional: a method that sets its own
//                                   // budgets refuses the options it sets and may give others defaults
// Settings (settings.hpp) is what a method reads of the command line. The timed loops (loops.hpp) and the
// analysis (analysis.*) sit beside the descriptor, which binds them to the command line. --runs repeats run() in the
// one loop of bench_runner.hpp, for every method.
//
// A job-level method (Scope::job: it drives several links, as Culler et al. 3.5's pairs) has no run() on a
// link; the job runner (app/job.hpp) hands it the whole job instead. Its members, besides name, summary,
// plot, needs and scope:
//   static void check_size(int ranks);          // throws UsageError for a job size it cannot use
//   static Role role(int rank, int ranks);      // who requests from whom
//   static int core_slot(int rank, int ranks);  // optional: the rank's place in the default core order
//   template <class J, class EP> static void run_job(J& job, EP& ep, const Role& role);
//                                // every rank runs it on its endpoint; the leader (job.leader()) writes
//                                // the results into job.doc. J is app::Job, whose measure_link(ep, peer,
//                                // bench) runs a link-level method on one link and returns its record;
//                                // job.o, the job's command line, is a Settings and more (quick and
//                                // agree copy it whole and edit the copy's Settings for each phase).
//   static constexpr const char* link_option;   // optional: the option naming the link-level method it
//                                               // runs on each link (pairs: "pairs-bench"); the transport
//                                               // must then meet that method's needs
// It is listed, validated and helped like any other.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "common/results.hpp"
#include "methods/settings.hpp"

namespace logpb::methods {

// What a method needs of a transport: bulk store, get (one-sided read), local completion of a send (Bell's
// flood and Doerfler's loop wait for it). A transport without them is refused before the method runs.
struct Needs {
  bool bulk = false;
  bool get = false;
  bool local_completion = false;
};

enum class Scope { link, job };

// Which of Culler et al. 3.5's contention shapes a job-level method measures, so `logpbench model`
// (LoGPC) knows how to read its result: per K with g(K)/g(1) (k_to_one), per K with gains (one_to_k), or
// the all-to-all remap. none: not a contention method.
enum class ContentionShape { none, k_to_one, one_to_k, all_to_all };
// The key model's comparison files each shape under ("k_to_one", "one_to_k", "all_to_all").
inline const char* to_key(ContentionShape c) {
  switch (c) {
    case ContentionShape::k_to_one:
      return "k_to_one";
    case ContentionShape::one_to_k:
      return "one_to_k";
    case ContentionShape::all_to_all:
      return "all_to_all";
    default:
      return "";
  }
}

// Which options shared by several methods a method takes, so the command line asks the method, never
// its name.
struct Takes {
  bool size_sweep = false;  // runs over a list of sizes (-a, --sizes) even without default sizes
  bool one_size = false;    // -s is its one size, so -s and --sizes contradict each other
  bool tx_burst = false;    // measures a rate, so a stream's sends may reach the NI together (--tx-burst)
  bool ud = false;          // small AMs only, so it runs over an unreliable datagram QP (--ud)
};

// Whether the user gave an option (by its name on the command line), not just its default.
using Given = std::function<bool(const char*)>;

// A figure a method shares with other methods under LogP's name, and what it is by the method's own paper.
// `agree` sets these side by side and names the definitions where the figures part. The definition may
// hold what only the run knows: {local_completion} (what the transport's local completion means),
// {bottleneck} (the bottleneck the method named for it), {first_bytes} (the method's smallest size).
struct SharedFigure {
  const char* param;  // LogP's name: o_s, o_r, g, rtt, L
  const char* key;    // where the method's parameters hold it
  const char* definition;
  int table_rank = -1;  // agree's usual table takes each parameter from the lowest rank with a value
                        // (-1: never from this method)
};

// What one rank does in a job: request from `peer` (requester), or serve it; peer -1: no part.
struct Role {
  bool requester = false;
  int peer = -1;
  int pair = -1;  // which pair (or group) the rank belongs to
};

// The catalogue's view of a descriptor: data only, no template.
struct MethodInfo {
  std::string name, summary, plot;
  Needs needs;
  Scope scope = Scope::link;
  std::vector<std::uint32_t> default_sizes;  // empty: the method is not run over a list of sizes
  Takes takes;
  void (*budgets)(const Given&, Settings&) = nullptr;  // sets its own budgets
  void (*print)(std::FILE*, const nlohmann::json& doc) = nullptr;
  std::vector<MethodOption> options;                   // the method's own options
  void (*check)(const Settings&) = nullptr;            // validates them
  std::string link_option;                             // a job-level method: the option naming its link-level method
  analysis::compare::Reading compare_as;               // how `compare` names its figures
  std::vector<SharedFigure> shares;                    // the figures it shares with other methods
  ContentionShape contention = ContentionShape::none;  // what `model` reads from its result
  bool own_table = false;  // its print() shows the parameters in a table of its own, in place of the usual one
  bool burst_cap = false;  // it reads --max-burst-time (auto: from the core probe's median interval)
  // A job-level method's place in the job (Scope::job; null for a link-level one, and core_slot when it has
  // no core order of its own).
  void (*check_size)(int ranks) = nullptr;
  Role (*role)(int rank, int ranks) = nullptr;
  int (*core_slot)(int rank, int ranks) = nullptr;
};

// Every registered method, by name.
const std::vector<MethodInfo>& all_methods();
const MethodInfo* find_method(std::string_view name);
// "a, b, c or d" (for an error), or "a | b | c" (for --help).
std::string method_names(const char* sep, const char* last_sep);
// What a run asks of the transport: the method's needs, and for a job-level method that runs a link-level
// method on each link (its link_option, e.g. --pairs-bench) that method's too. Unknown names need nothing.
Needs run_needs(const MethodInfo& method, const std::map<std::string, std::string>& method_args);
// Whether a run caps its bursts in time (the method's burst_cap, or its link-level method's), and so needs
// the core probe's median interval between interruptions for the automatic --max-burst-time.
bool run_caps_bursts(const MethodInfo& method, const std::map<std::string, std::string>& method_args);
// How `compare` reads a result of that method (its descriptor's compare_as; the plain reading for a name
// no method has, as an old result's may be).
analysis::compare::Reading compare_reading(const std::string& bench);
// The contention shape of that method (none for a name no method has).
ContentionShape contention_shape(const std::string& bench);
// --bench's help: every method with its one-line summary.
std::string bench_help();
// The sizes a method over sizes runs: --sizes, or its defaults that fit; a size past half the segment
// (max_bytes) is refused.
std::vector<std::uint32_t> method_sizes(const std::vector<std::uint32_t>& default_sizes,
                                        const std::vector<std::uint32_t>& given, std::uint32_t max_bytes);

// What a method's run can tell the loop that repeats it.
struct RunIO {
  std::function<void(const std::string&)> progress;       // a progress line (the run number is prefixed)
  std::function<void(const nlohmann::json&)> checkpoint;  // the run's record so far: saved at once
  std::function<void(double)> done = [](double) {};       // the share of this run done (0..1), where a long
                                                          // method knows it: percent and time left on screen
  std::vector<std::uint32_t> sizes;  // a method over sizes: --sizes or its default_sizes, checked against the segment
};

template <class... M>
struct MethodList {};

}  // namespace logpb::methods
