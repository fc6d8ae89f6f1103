// The command line, assembled from its parts: the job's sections here, each transport's from
// <transport>/options.cpp, each method's own options from the declarations its descriptor lists
// (methods/method_option.hpp). What a method
// takes of the shared options is asked of its descriptor (Takes, budgets), never of its name.
#include "app/options.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>
#include <utility>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "common/errors.hpp"
#include "common/options.hpp"
#include "common/ranks.hpp"
#include "common/results.hpp"
#include "methods/descriptor.hpp"

namespace po = boost::program_options;

namespace logpb::app {

namespace {

using cli::check_range;
using cli::given;

// Options read as text and parsed once the command line is in.
struct Text {
  std::string cpus, estimator = "median", sizes;
  // --size is read signed: Boost reads "-5" into an unsigned field as 4294967291, which then "exceeds half
  // the segment". Checked and handed to Options::size once parsed.
  std::int64_t size = 0;
};

// "--transport shm | verbs | ...", and one line per transport, from the list of transports.
std::string transport_help() {
  std::string names, lines;
  for_each_transport(
      [&]<class D>() {
        names += (names.empty() ? "" : " | ") + std::string(D::name);
        lines += "\n" + std::string(D::name) +
                 std::string(8 - std::min<std::size_t>(7, std::string(D::name).size()), ' ') + D::summary +
                 (kBuilt<D> ? "" : " (not built here)");
      },
      AllTransports{});
  return names + ":" + lines;
}

// What a perftest user looks for first: the link, the method, the sizes and counts, the output.
po::options_description common_section(Options& o, Text& t) {
  po::options_description d("Common options");
  d.add_options()("help,h", "this text")("version", "print the version")(
      "transport", po::value(&o.transport)->default_value(o.transport), transport_help().c_str())(
      "bench", po::value(&o.bench)->default_value(o.bench), "the method (listed at the end of this text)")(
      "size,s", po::value(&t.size)->default_value(o.size),
      "ping-pong message bytes: 0 = one small AM (64-byte frame), n = a bulk store of n bytes")(
      "iters,n", po::value(&o.iterations)->default_value(o.iterations), "ping-pong iterations (timed)")(
      "warmup", po::value(&o.warmup)->default_value(o.warmup), "ping-pong iterations before timing")(
      "all,a", po::bool_switch(&o.all_sizes),
      "every size 2 .. 2^23 bytes, as perftest's -a (pingpong, bw and the other "
      "methods over sizes); the segment grows to 16 MiB")(
      "sizes", po::value(&t.sizes),
      "message sizes in bytes for pingpong, bw, bulk, flood, overlap, availability (e.g. 8,512,4096)")(
      "runs", po::value(&o.runs)->default_value(o.runs),
      "repeat the whole measurement; parameters get run-to-run spread")(
      "json", po::value(&o.json_path), "write results to this file (atomically; checkpointed during the run)")(
      "csv", po::value(&o.csv_path),
      "also write the run's table as CSV (atomically): pingpong's latency table, bw's "
      "bandwidth table, else the parameters; a second table goes to FILE-NAME.csv")(
      "raw", po::bool_switch(&o.raw), "also store every raw sample in the JSON")("quiet,q", po::bool_switch(&o.quiet),
                                                                                 "no progress line");
  return d;
}

po::options_description placement_section(Options& o, Text& t) {
  po::options_description place("Placement and connection");
  place.add_options()("cpu", po::value(&o.cpu)->default_value(o.cpu),
                      "core of this process (local: rank 0, the client)")(
      "peer-cpu", po::value(&o.peer_cpu)->default_value(o.peer_cpu), "local, 2 ranks: core of the forked peer")(
      "ranks,N", po::value(&o.ranks)->default_value(o.ranks), "local: processes in the job (forked onto --cpus)")(
      "cpus", po::value(&t.cpus),
      "each rank's core, e.g. 0,1,0,1 (local: by rank; launched: by rank on its host); "
      "default: local 2 ranks --cpu/--peer-cpu, else rank r on the r-th allowed core")(
      "rendezvous", po::value(&o.rendezvous),
      "under mpirun/srun: HOST:PORT where rank 0 listens (default: a rendezvous file)")(
      "rendezvous-dir", po::value(&o.rendezvous_dir),
      "under mpirun/srun: shared directory for the rendezvous file "
      "(default: $SLURM_SUBMIT_DIR, else the current directory)")("port,p", po::value(&o.port)->default_value(o.port),
                                                                  "TCP port of the out-of-band bootstrap")(
      "timeout", po::value(&o.timeout_s)->default_value(o.timeout_s),
      "seconds without progress before the peer is declared lost")(
      "connect-timeout", po::value(&o.connect_timeout_s)->default_value(o.connect_timeout_s),
      "seconds to wait for the peer to connect")("allow-variant-tsc", po::bool_switch(&o.allow_variant_tsc),
                                                 "measure even without an invariant TSC")(
      "probe-ms", po::value(&o.probe_ms)->default_value(o.probe_ms),
      "ms this core is watched for interruptions before the run at most (half that after it; each probe stops "
      "after 30 ms once its own intervals settle what reads it, meta.interruptions.stop_rule): the 'core stayed "
      "available' check and the signature's automatic --max-burst-time read it");
  return place;
}

po::options_description am_section(Options& o, Text& t) {
  po::options_description d("AM layer and stop rule");
  d.add_options()("window", po::value(&o.window)->default_value(o.window),
                  "AM outstanding window: the network capacity (an emulation's C overrides)")(
      "credits", po::value(&o.credits)->default_value(o.credits),
      "one-way requests in flight before the receiver returns credits (flood, saturation, overlap, availability)")(
      "ci", po::value(&o.rule.rel_precision)->default_value(o.rule.rel_precision, "0.05"),
      "stop rule: relative 95% half-width to reach")("batch", po::value(&o.rule.batch)->default_value(o.rule.batch),
                                                     "stop rule: samples per batch")(
      "min-samples", po::value(&o.rule.min_samples)->default_value(o.rule.min_samples),
      "stop rule: fewest samples per point")(
      "max-samples", po::value(&o.rule.max_samples)->default_value(o.rule.max_samples), "stop rule: cap per point")(
      "max-point-seconds", po::value(&o.rule.max_seconds)->default_value(o.rule.max_seconds),
      "stop rule: time cap per point")("estimator", po::value(&t.estimator)->default_value(t.estimator),
                                       "point estimate: median | mean");
  return d;
}

// Each method's own options, from its descriptors; an option several methods take is listed once.
struct MethodOwned {
  po::options_description desc{"Options of single methods"};
  std::vector<const methods::MethodOption*> first;  // each option as first listed, in the catalogue's order
  std::map<std::string, std::vector<std::string>> owners;
  MethodOwned() {
    for (const auto& m : methods::all_methods())
      for (const auto& mo : m.options) {
        auto& who = owners[mo.name];
        if (who.empty()) first.push_back(&mo);
        who.push_back(m.name);
      }
    for (const methods::MethodOption* mo : first) describe(*mo);
  }
  // A typed option's help names its methods itself.
  void describe(const methods::MethodOption& mo) {
    std::string help = mo.help;
    if (!mo.typed()) {
      std::string who;
      for (const auto& n : owners[mo.name]) who += (who.empty() ? "" : ", ") + n;
      help = who + ": " + help;
    }
    auto add = desc.add_options();
    switch (mo.cli) {
      case methods::MethodOption::Cli::integer:
        add(mo.name, po::value<int>()->default_value(std::get<int>(mo.initial)), help.c_str());
        break;
      case methods::MethodOption::Cli::real:
        add(mo.name, po::value<double>()->default_value(std::get<double>(mo.initial)), help.c_str());
        break;
      case methods::MethodOption::Cli::flag:
        add(mo.name, help.c_str());
        if (mo.no_help) add(("no-" + std::string(mo.name)).c_str(), mo.no_help);
        break;
      case methods::MethodOption::Cli::text: {
        auto* v = po::value<std::string>()->value_name(mo.value_name);
        add(mo.name, mo.default_value ? v->default_value(mo.default_value) : v, help.c_str());
        break;
      }
    }
  }
  // Refuses an option given to a method that does not take it (where its declaration says so), then takes
  // the text ones as given.
  void apply(Options& o, const po::variables_map& vm) const {
    for (const auto& owner : owners) {
      const auto& name = owner.first;  // not a structured binding: clang 14 cannot capture one in a lambda
      const auto& who = owner.second;
      const auto mo =
          std::find_if(first.begin(), first.end(), [&](const methods::MethodOption* m) { return m->name == name; });
      const bool takes = std::find(who.begin(), who.end(), o.bench) != who.end();
      if (!(*mo)->refused_elsewhere || !given(vm, name.c_str()) || takes) continue;
      std::string list;
      for (std::size_t i = 0; i < who.size(); ++i) list += (i ? " or " : "") + who[i];
      throw UsageError("--" + name + " belongs to --bench " + list + ", not " + o.bench);
    }
    for (const methods::MethodOption* mo : first)
      if (!mo->typed())
        o.method_args[mo->name] = vm.count(mo->name) ? vm[mo->name].as<std::string>()
                                                     : std::string(mo->default_value ? mo->default_value : "");
  }
  // Reads and checks the typed options, but for those a method's budgets already set (Options::set).
  void read_typed(Options& o, const po::variables_map& vm) const {
    for (const methods::MethodOption* mo : first) {
      const char* n = mo->name;
      if (!mo->typed() || o.method_values.count(n)) continue;
      methods::MethodValue given_value;
      switch (mo->cli) {
        case methods::MethodOption::Cli::integer:
          given_value = vm[n].as<int>();
          break;
        case methods::MethodOption::Cli::real:
          given_value = vm[n].as<double>();
          break;
        case methods::MethodOption::Cli::flag: {
          const std::string no = "no-" + std::string(n);
          if (mo->no_help && vm.count(n) && vm.count(no))
            throw UsageError("--" + std::string(n) + " and --" + no + " contradict each other: give one");
          given_value = vm.count(n) != 0;
          break;
        }
        case methods::MethodOption::Cli::text:
          given_value = vm.count(n) ? vm[n].as<std::string>() : std::string();
          break;
      }
      o.method_values[n] = mo->read(given_value, o);
    }
  }
};

// Mode, placement, transport and method, before anything that depends on them.
void check_job(Options& o, const po::variables_map& vm, const Text& t) {
  o.mode_given = vm.count("mode") > 0;
  if (o.mode != "local" && o.mode != "server" && o.mode != "client")
    throw UsageError("mode must be local, server or client, not '" + o.mode + "'");
  for (const auto& x : cli::split_list(t.cpus)) {
    std::size_t used = 0;
    int c = -1;
    try {
      c = std::stoi(x, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != x.size() || c < 0 || c > 4095) throw UsageError("--cpus: '" + x + "' is not a core number");
    o.cpus.push_back(c);
  }
  if (o.ranks < 1 || o.ranks > 4096) throw UsageError("-N/--ranks must be in 1..4096");
  if (given(vm, "ranks") && o.mode_given && o.mode != "local")
    throw UsageError(
        "-N is for local jobs: server/client is a pair, and a launcher (mpirun -np, srun -n) sets the size");
  if (o.mode == "client" && o.host.empty())
    throw UsageError("client needs the server's address: logpbench client HOST");
  if (o.mode != "client" && !o.host.empty())
    throw UsageError("unexpected argument '" + o.host + "' (only client takes a HOST)");
  if (!with_transport(
          o.transport, []<class>() {}, AllTransports{})) {
    std::string names;
    for_each_transport([&]<class D>() { names += (names.empty() ? "" : ", ") + std::string(D::name); },
                       AllTransports{});
    throw UsageError("--transport must be one of " + names + "; not '" + o.transport + "'");
  }
  o.method = methods::find_method(o.bench);
  if (!o.method) throw UsageError("--bench must be " + methods::method_names(", ", " or ") + ", not '" + o.bench + "'");
}

// -a, --sizes, -s and -n: which method takes them, and that they do not contradict one another. -a fills
// the sizes and grows the segment so that its largest size (8 MiB) fits half of it, as every bulk size must.
void check_sizes_options(Options& o, const po::variables_map& vm, const std::string& sizes_arg) {
  const methods::MethodInfo* m = o.method;
  o.size_given = given(vm, "size");
  o.iterations_given = given(vm, "iters");
  if (m->budgets) {
    m->budgets([&](const char* k) { return given(vm, k); }, o);
    return;
  }
  // A method over sizes has default sizes that -a replaces, or sweeps a list (pingpong).
  const bool over_sizes = m->scope == methods::Scope::link && (!m->default_sizes.empty() || m->takes.size_sweep);
  if (o.all_sizes) {
    if (!sizes_arg.empty()) throw UsageError("-a runs every size 2 .. 2^23: give it or --sizes, not both");
    if (o.size_given) throw UsageError("-a runs every size 2 .. 2^23: give it or -s, not both");
    if (!over_sizes)
      throw UsageError(
          "-a (every size 2 .. 2^23) is for a method over message sizes (pingpong, bw, bulk, flood, overlap, "
          "availability), not --bench " +
          o.bench);
    o.sizes = all_sizes();
    o.segment_bytes = 2 * o.sizes.back();
  }
  if (!sizes_arg.empty() && o.size_given && m->takes.one_size)
    throw UsageError("-s is one size and --sizes a list: give one of them");
}

// The job's settings and those the methods share: lists, durations, the stop rule and their ranges.
void check_settings(Options& o, const Text& t) {
  // Output paths are refused now, not after the run: a long run's results would be lost. Only the job's
  // leader writes them, so a launcher's other ranks (on nodes that may not see the path) do not look.
  const bool writes = [] {
    try {
      const auto li = detect_launcher();
      return !li || li->rank == 0;
    } catch (const UsageError&) {
      return true;  // malformed launcher variables are refused later, with their own message
    }
  }();
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--csv", o.csv_path},
                                   std::pair<const char*, const std::string&>{"--json", o.json_path}}) {
    if (!writes || path.empty()) continue;
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      throw UsageError(std::string(flag) + " " + path + ": no directory " + dir.string() + " to write it in");
    if (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
      throw UsageError(std::string(flag) + " " + path + ": the directory " + (dir.empty() ? "." : dir.string()) +
                       " is not writable (the results are written beside it, then renamed)");
    if (std::filesystem::is_directory(path, ec))
      throw UsageError(std::string(flag) + " " + path + ": is a directory, not a file name");
  }
  if (!t.sizes.empty()) {
    for (int v : cli::parse_int_list("--sizes", t.sizes)) o.sizes.push_back(static_cast<std::uint32_t>(v));
    if (o.sizes.back() > o.segment_bytes / 2)
      throw UsageError("--sizes: " + std::to_string(o.sizes.back()) + " bytes exceed half the " +
                       std::to_string(o.segment_bytes) + "-byte segment");
  }
  if (o.size > o.segment_bytes / 2)
    throw UsageError("--size exceeds half the " + std::to_string(o.segment_bytes) + "-byte segment");
  o.rule.estimator = parse_estimator(t.estimator);
  check_range("iters", o.iterations, 1, 1e8);
  check_range("warmup", o.warmup, 0, 1e8);
  check_range("window", o.window, 1, 1 << 16);
  check_range("credits", o.credits, 2, 1 << 16);
  check_range("runs", o.runs, 1, 1000);
  check_range("timeout", o.timeout_s, 0.1, 1e6);
  check_range("probe-ms", o.probe_ms, 10, 10000);
  check_range("connect-timeout", o.connect_timeout_s, 0.1, 1e6);
  check_range("ci", o.rule.rel_precision, 1e-4, 1);
  check_range("batch", o.rule.batch, 2, 1e6);
  check_range("min-samples", o.rule.min_samples, 2, 1e8);
  check_range("max-samples", o.rule.max_samples, o.rule.min_samples, 1e8);
  check_range("max-point-seconds", o.rule.max_seconds, 0.001, 1e6);
  check_range("cpu", o.cpu, 0, 4095);
  check_range("peer-cpu", o.peer_cpu, 0, 4095);
  if (o.mode == "local" && o.ranks == 2 && o.cpus.empty() && o.cpu == o.peer_cpu)
    throw UsageError("--cpu and --peer-cpu are the same core: two busy-polling endpoints need two cores");
}

// Every option as given or defaulted, into meta.flags.
void record_flags(Options& o, const po::variables_map& vm) {
  for (const auto& [name, v] : vm) {
    const auto& a = v.value();
    if (a.type() == typeid(std::string))
      o.flags[name] = v.as<std::string>();
    else if (a.type() == typeid(int))
      o.flags[name] = v.as<int>();
    else if (a.type() == typeid(double))
      o.flags[name] = v.as<double>();
    else if (a.type() == typeid(bool))
      o.flags[name] = v.as<bool>();
    else if (a.type() == typeid(std::uint16_t))
      o.flags[name] = v.as<std::uint16_t>();
    else if (a.type() == typeid(std::uint32_t))
      o.flags[name] = v.as<std::uint32_t>();
    else if (a.type() == typeid(std::int64_t))
      o.flags[name] = v.as<std::int64_t>();  // --size
    else
      o.flags[name] = "(recorded as given: unknown type)";
  }
  o.flags["window_effective"] = o.window;
}

// Each transport's checks: first the transports not chosen (each refuses its own options, given for
// another transport), then the chosen one's own, so an option given to the wrong transport is named before
// what the chosen one lacks (--transport mpi --emulate ...: MPI has no emulated NI, before the launcher).
void check_transports(Options& o, const po::variables_map& vm) {
  const TransportCheck c{
      vm, o.transport, o.mode, o.mode_given, o.window, o.method->takes.ud && o.size == 0, o.method->takes.tx_burst};
  for_each_transport(
      [&]<class D>() {
        if (o.transport != D::name) D::validate(o, c);
      },
      AllTransports{});
  with_transport(
      o.transport, [&]<class D>() { D::validate(o, c); }, AllTransports{});
}

void print_help(const std::vector<const po::options_description*>& sections) {
  std::cout << "usage: logpbench [local | server | client HOST] [options]   one method (--bench) over one link\n"
               "       logpbench quick [...]    a first look: ping-pong, message rate and the LogP table in seconds\n"
               "       logpbench agree [...]    one LogP table, every method's figures side by side\n"
               "       logpbench compare A.json B.json [...] | logpbench model RESULT.json [...]\n"
               "With no arguments, or only --json, --csv, -q or --raw: logpbench agree, one LogP table for the shm\n"
               "link (the embedded default); with other options and no --bench, the method is the signature.\n"
               "Like perftest's ib_send_lat over two hosts:\n"
               "  logpbench server --transport verbs -d mlx5_0 --bench pingpong -a\n"
               "  logpbench client HOST --transport verbs -d mlx5_0 --bench pingpong -a\n\n";
  for (const auto* d : sections) std::cout << *d << '\n';
  std::cout << "Methods (--bench NAME):" << methods::bench_help() << '\n';
}

}  // namespace

bool parse_options(int argc, const char* const* argv, Options& o) {
  Text t;
  const po::options_description common = common_section(o, t), place = placement_section(o, t), am = am_section(o, t);
  std::vector<po::options_description> transports;
  for_each_transport([&]<class D>() { transports.push_back(D::describe(o)); }, AllTransports{});
  MethodOwned owned;
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&o.mode))("host", po::value(&o.host));
  po::positional_options_description pos;
  pos.add("mode", 1).add("host", 1);
  po::options_description all;
  all.add(common).add(place).add(am).add(owned.desc).add(hidden);
  for (const auto& d : transports) all.add(d);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (t.size < 0 || t.size > std::numeric_limits<std::int32_t>::max())
    throw UsageError("--size: " + std::to_string(t.size) + " is not a message size (bytes, 0 or more)");
  o.size = static_cast<std::uint32_t>(t.size);
  if (vm.count("help")) {
    std::vector<const po::options_description*> sections{&common};
    for (const auto& d : transports) sections.push_back(&d);
    sections.insert(sections.end(), {&place, &am, &owned.desc});
    print_help(sections);
    return false;
  }
  if (vm.count("version")) {
    std::cout << "logpbench " << version_string() << '\n';
    return false;
  }
  check_job(o, vm, t);
  owned.apply(o, vm);
  if (o.method->check) o.method->check(o);
  check_sizes_options(o, vm, t.sizes);
  check_settings(o, t);
  check_transports(o, vm);
  owned.read_typed(o, vm);
  record_flags(o, vm);
  return true;
}

}  // namespace logpb::app
