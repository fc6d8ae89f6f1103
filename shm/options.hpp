// The shm transport's part of the command line: the emulated NI (--emulate, parsed by shm/emulation.hpp)
// and the ring of slots per direction.
#pragma once

#include <string>

#include <boost/program_options/options_description.hpp>

#include "shm/emulation.hpp"

namespace logpb::shm {

// The options as the command line names them (the job agrees on all three across its ranks).
struct CliOptions {
  std::string emulate_spec;
  Emulation emulation;
  int ring = 1024;
};

// The section "shm transport" of --help (--emulate, --ring), bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Parses --emulate (UsageError unless --transport shm on the client; an emulated capacity C, when given,
// becomes the AM window), then checks that the ring holds twice the window, so replies need a free slot
// whatever the requests in flight.
void validate(CliOptions& o, const std::string& transport, const std::string& mode, int& window);

}  // namespace logpb::shm
