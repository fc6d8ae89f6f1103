// Every MPI call of the transport returns its error (MPI_ERRORS_RETURN on the communicator and the
// window); check() turns one into the project's exit classes (common/errors.hpp) with MPI_Error_string's
// text and the call that failed. On the datapath an error means the job's communication broke: PeerError
// (exit 3). In the control path (init, window creation) it is a setup failure: std::runtime_error (exit 1).
#pragma once

#include <mpi.h>

#include <string>

namespace logpb::mpi {

// The error's text as MPI words it, with its class (e.g. "MPI_ERR_TRUNCATE: message truncated").
std::string error_text(int rc);
[[noreturn]] void fail_datapath(int rc, const char* call);
[[noreturn]] void fail_setup(int rc, const char* call, const char* what_to_check);

inline void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    fail_datapath(rc, call);
}
inline void check_setup(int rc, const char* call, const char* what_to_check = "") {
  if (rc != MPI_SUCCESS) [[unlikely]]
    fail_setup(rc, call, what_to_check);
}

}  // namespace logpb::mpi
