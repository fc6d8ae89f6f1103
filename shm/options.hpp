// The shm transport's part of the command line: the emulated NI (--emulate, parsed by shm/emulation.hpp)
// and the ring of slots per direction. --help lists them among the run's and the methods' options.
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

// The --emulate and --ring lines of --help, added to the section each is listed in.
void describe_emulate(boost::program_options::options_description& d, CliOptions& o);
void describe_ring(boost::program_options::options_description& d, CliOptions& o);
// Parses --emulate (UsageError unless --transport shm on the client); an emulated capacity C, when given,
// becomes the AM window.
void validate_emulation(CliOptions& o, const std::string& transport, const std::string& mode, int& window);
// Replies need a free slot whatever the requests in flight: the ring holds twice the window.
void validate_ring(const CliOptions& o, const std::string& transport, int window);

}  // namespace logpb::shm
