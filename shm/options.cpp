#include "shm/options.hpp"

#include "common/errors.hpp"

namespace po = boost::program_options;

namespace logpb::shm {

po::options_description describe(CliOptions& o) {
  po::options_description d("shm transport (the default) and its emulated NI");
  d.add_options()("emulate", po::value(&o.emulate_spec),
                  "an emulated NI of known parameters, e.g. \"os=1.4us,or=2.2us,g=7.6us,L=6.3us,C=32\" "
                  "(shm/emulation.hpp lists every key)")("ring", po::value(&o.ring)->default_value(o.ring),
                                                         "slots per direction (power of two)");
  return d;
}

namespace {

void validate_emulation(CliOptions& o, const std::string& transport, const std::string& mode, int& window) {
  if (o.emulate_spec.empty()) return;
  if (transport == "mpi")
    throw UsageError(
        "--emulate works only with --transport shm: MPI has no emulated NI (measure MPI as it is, and "
        "the emulated machines over shm)");
  if (transport != "shm") throw UsageError("--emulate works only with --transport shm");
  if (mode == "server") throw UsageError("--emulate is given to the client; the server takes it from there");
  o.emulation = parse_emulation(o.emulate_spec);
  if (o.emulation.capacity > 0) window = o.emulation.capacity;
}

void validate_ring(const CliOptions& o, const std::string& transport, int window) {
  if (transport == "shm" && window * 2 > o.ring)
    throw UsageError("--ring must be at least twice --window so replies always find a free slot");
}

}  // namespace

void validate(CliOptions& o, const std::string& transport, const std::string& mode, int& window) {
  validate_emulation(o, transport, mode, window);
  validate_ring(o, transport, window);
}

}  // namespace logpb::shm
