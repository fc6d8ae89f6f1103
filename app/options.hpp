// Command line of `logpbench` (Boost.Program_options). Every option that can change a figure is copied
// into the results' meta.flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "dpdk/options.hpp"
#include "methods/settings.hpp"
#include "mpi/options.hpp"
#include "ofi/options.hpp"
#include "shm/options.hpp"
#include "verbs/options.hpp"

namespace logpb::app {

// The whole command line: the job's options; what the methods read (Settings: the options several share,
// each method's own by name); each transport's in its own part (<transport>/options.hpp, which also gives
// its --help section and its checks).
struct Options : methods::Settings, shm::CliOptions, verbs::CliOptions, dpdk::CliOptions, mpi::CliOptions, ofi::CliOptions {
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
  int cpu = 0;           // this process's core (local: the client)
  int peer_cpu = 1;      // local: the forked peer's core
  std::uint16_t port = 18515;
  bool all_sizes = false;  // -a: every size 2 .. 2^23, as perftest's -a (o.sizes filled, the segment grown)
  double probe_ms = 100;   // the interruption probe before the run (half of it after)
  int window = 32;
  int credits = 256;  // one-way requests in flight (the NI's queues may allow fewer)
  double timeout_s = 10;
  double connect_timeout_s = 30;
  bool allow_variant_tsc = false;
  bool quiet = false;
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
