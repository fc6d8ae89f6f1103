// Command line of `logpbench` (Boost.Program_options). Every option that can change a figure is copied
// into the results' meta.flags.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/stats.hpp"
#include "dpdk/options.hpp"
#include "methods/method_option.hpp"
#include "mpi/options.hpp"
#include "ofi/options.hpp"
#include "shm/options.hpp"
#include "verbs/options.hpp"

namespace logpb::app {

// The whole command line: the job's options and those several methods share here, each method's own by
// name (method_args, method_values), each transport's in its own part (<transport>/options.hpp, which also
// gives its --help section and its checks).
struct Options : shm::CliOptions, verbs::CliOptions, dpdk::CliOptions, mpi::CliOptions, ofi::CliOptions {
  std::string mode = "local";  // local | server | client | launched (mpirun/srun, no mode given)
  bool mode_given = false;     // the user named a mode (otherwise a launcher's environment makes it "launched")
  int ranks = 2;               // local: processes of the job (-N)
  std::vector<int> cpus;       // each rank's core, by rank (local) or by rank on its host (launched); empty: default
  std::string rendezvous;      // launched: HOST:PORT of rank 0 (empty: a rendezvous file)
  std::string rendezvous_dir;  // launched: where the rendezvous file goes (empty: $SLURM_SUBMIT_DIR or .)
  std::string host;            // client: the server's address
  std::string transport = "shm";
  std::string bench = "signature";
  std::string json_path;
  std::string csv_path;  // --csv: the run's table(s) as CSV (methods/table.hpp)
  int cpu = 0;       // this process's core (local: the client)
  int peer_cpu = 1;  // local: the forked peer's core
  std::uint16_t port = 18515;
  int iterations = 10000, warmup = 1000;
  std::uint32_t size = 0;  // ping-pong message size (perftest's -s)
  bool size_given = false, iterations_given = false;  // -s, -n on the command line (bw has its own defaults)
  bool all_sizes = false;  // -a: every size 2 .. 2^23, as perftest's -a (o.sizes filled, the segment grown)
  double probe_ms = 100;  // the interruption probe before the run (half of it after)
  int window = 32;
  int credits = 256;  // one-way requests in flight (the NI's queues may allow fewer)
  std::uint32_t segment_bytes = 1 << 20;
  StopRule rule;
  // size-based methods
  std::vector<std::uint32_t> sizes;  // empty: each method's default
  int runs = 3;
  double timeout_s = 10;
  double connect_timeout_s = 30;
  bool allow_variant_tsc = false;
  bool quiet = false;
  bool raw = false;
  // The methods' own options (methods/method_option.hpp), by name, with their defaults where not given: the
  // text ones as given (the method parses its own), the typed ones read and checked.
  std::map<std::string, std::string> method_args;
  const std::string& method_arg(const std::string& name) const {
    const auto it = method_args.find(name);
    if (it == method_args.end()) throw std::logic_error("no method option --" + name);
    return it->second;
  }
  std::map<std::string, MethodValue> method_values;
  // A typed option's value; its default in Options never parsed (a budget built from scratch, a test).
  template <class T>
  const T& get(const Typed<T>& opt) const {
    const auto it = method_values.find(opt.name);
    return std::get<T>(it == method_values.end() ? opt.initial : it->second);
  }
  template <class T>
  void set(const Typed<T>& opt, std::type_identity_t<T> v) {
    method_values[opt.name] = std::move(v);
  }
  nlohmann::json flags;  // every option as given or defaulted
};

// perftest's -a: every power of two from 2 to 2^23 bytes.
inline std::vector<std::uint32_t> all_sizes() {
  std::vector<std::uint32_t> v;
  for (std::uint32_t n = 2; n <= (1u << 23); n *= 2) v.push_back(n);
  return v;
}

// Throws UsageError with a message fit for the user. Returns false when --help/--version was handled.
bool parse_options(int argc, const char* const* argv, Options& out);

}  // namespace logpb::app
