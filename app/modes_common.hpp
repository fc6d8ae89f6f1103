// What every transport's run modes share: the forked peer of `local` mode (a socketpair between the two
// processes, the peer reaped whatever happens, its refusal of a configuration reported as the user's
// error), the server's accepting of one client, the AM endpoint's options, the connected client's run,
// the session id, and the NUMA placement record.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "app/bench_runner.hpp"
#include "app/options.hpp"
#include "app/progress.hpp"
#include "common/am.hpp"
#include "common/bootstrap.hpp"
#include "common/methods/protocol.hpp"

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
  // UsageError. The client must end by calling finish() while its transport still exists.
  void run(const std::function<void()>& client);
  // After the quit request: waits (up to timeout_s) for the peer to exit, so the transport is not torn
  // down under a quit the peer has not read yet; a peer that does not stop is killed and reported.
  void finish(double timeout_s);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  Channel channel_;
};

std::uint32_t new_session();

// Server side: waits for one client and its hello; refuses a client that asked for another transport.
Channel accept_client(const Options& o, const std::string& transport, nlohmann::json& hello);

// The AM endpoint's options. The passive side waits as long as the client thinks (it still notices a
// dead client at once); loss_timeout_s is the transport's default when --loss-timeout is not given.
am::EndpointOptions endpoint_options(const Options& o, std::uint32_t session, std::size_t segment_bytes, bool server,
                                     double loss_timeout_s = 0);

// Client side, once connected: records the transport, runs the bench, and records the transport again
// on the way out (its counters of drops and foreign frames belong in the results, also on error).
template <class EP>
void run_connected(EP& ep, const Options& o, const Clock& clock, ResultsDoc& doc, Progress& progress,
                   std::uint32_t session) {
  doc.j["meta"]["transport"] = ep.transport().describe();
  doc.j["meta"]["session"] = session;
  doc.j["meta"]["am"] = {{"window", ep.window()},
                         {"credits", ep.credit_limit()},
                         {"credit_return", "one credit frame per about credits/2 one-way requests"},
                         {"frame_bytes", sizeof(am::Frame)},
                         {"stall_timeout_s", ep.options().stall_timeout_s},
                         {"loss_timeout_s", ep.options().loss_timeout_s}};
  doc.save();
  struct Describe {
    EP& ep;
    ResultsDoc& doc;
    ~Describe() { doc.j["meta"]["transport"] = ep.transport().describe(); }
  } describe{ep, doc};
  run_client_bench(ep, 1, clock, o, doc, progress);
  ep.request(1, methods::kQuit);
}

// The polling core against the NIC's NUMA node (-1: unknown): warns when remote, returns the record.
nlohmann::json numa_placement(int cpu, int nic_node);

}  // namespace logpb::app
