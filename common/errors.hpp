// Errors every layer may raise, and the interrupt flag set by SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace logpb {

// The peer is gone or silent: a dead process, a closed connection, a QP in error, lost frames.
struct PeerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A user asked to stop (SIGINT/SIGTERM). Results measured so far are kept.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by signal") {}
};
// Bad options or an impossible configuration: refused before anything runs.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::atomic<int>& interrupt_signal() {
  static std::atomic<int> s{0};
  return s;
}
inline void throw_if_interrupted() {
  if (interrupt_signal().load(std::memory_order_relaxed)) throw Interrupted();
}

}  // namespace logpb
