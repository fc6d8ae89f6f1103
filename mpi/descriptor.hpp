// --transport mpi: its entry in the list of transports (common/transport_registry.hpp says what each member
// is). Its options and checks are in mpi/options.hpp, how a job runs over it in mpi/job.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>

#include "common/transport_registry.hpp"
#include "mpi/options.hpp"

namespace logpb::app {
struct Job;
}  // namespace logpb::app

namespace logpb::mpi {

struct Descriptor {
  static constexpr const char* name = "mpi";
  static constexpr const char* summary = "MPI point-to-point (Isend/Irecv), under mpirun or srun only";
  using Options = CliOptions;
  static boost::program_options::options_description describe(CliOptions& o) { return mpi::describe(o); }
  static void validate(CliOptions& o, const TransportCheck& c) {
    mpi::validate(o, c.vm, c.transport, c.mode_given, c.mode);
  }
  static void run(app::Job& job);  // mpi/job.cpp
};

}  // namespace logpb::mpi
