// What every transport's run modes share: the forked peer of `local` mode (a socketpair between the two
// processes, the peer reaped whatever happens, its refusal of a configuration reported as the user's
// error), the session id, and the NUMA placement record.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "common/bootstrap.hpp"

namespace logpb::app {

class LocalPeer {
 public:
  // Forks; `body` runs in the child with its end of the socketpair and never returns there: an
  // exception ends the child with 1, 2 (UsageError), 3 (PeerError) or 130 (Interrupted), its message
  // on stderr prefixed by `who`.
  LocalPeer(const char* who, const std::function<void(Channel&)>& body);
  LocalPeer(const LocalPeer&) = delete;
  LocalPeer& operator=(const LocalPeer&) = delete;
  ~LocalPeer();  // kills and reaps a peer still running

  Channel& channel() { return channel_; }
  // Runs the client side; a PeerError caused by the peer refusing its configuration becomes that
  // UsageError. Then waits for the peer's normal end.
  void run(const std::function<void()>& client);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  Channel channel_;
};

std::uint32_t new_session();

// The polling core against the NIC's NUMA node (-1: unknown): warns when remote, returns the record.
nlohmann::json numa_placement(int cpu, int nic_node);

}  // namespace logpb::app
