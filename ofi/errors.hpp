// Every libfabric call returns a negative fi_errno on failure; these turn one into the project's exit
// classes (common/errors.hpp) with fi_strerror's text and the call that failed. On the datapath a failure
// means the job's communication broke: PeerError (exit 3). In the control path (getinfo, open, register,
// connect) it is a setup failure: std::runtime_error (exit 1), with what to check when we can say.
#pragma once

#include <cstdint>
#include <string>

namespace logpb::ofi {

// "fi_send failed: Connection reset by peer (-FI_ECONNRESET = -104)"
std::string call_failed(long rc, const char* call);
[[noreturn]] void fail_datapath(long rc, const char* call);
[[noreturn]] void fail_setup(long rc, const char* call, const std::string& what_to_check = "");

inline void check_setup(long rc, const char* call, const std::string& what_to_check = "") {
  if (rc < 0) [[unlikely]]
    fail_setup(rc, call, what_to_check);
}

}  // namespace logpb::ofi
