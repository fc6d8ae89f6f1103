// A watchdog for calls into a library that may never return once a peer is gone. The AM layer's watchdog
// (am.hpp, stall_check) runs between transport calls; a provider that spins inside one call on state its
// dead peer held (seen with libfabric's shm provider: a rank 0 spinning for 25 minutes after its peer was
// SIGKILLed) never gives it the chance.
//
// The datapath brackets each call into the library with enter(name)/leave(): two relaxed stores to a line
// only it writes. A thread started by watch() looks every check_s: when the datapath has been inside the
// same call for stuck_s or more and the job's liveness says a peer is gone, the run ends as any lost peer
// does: a message naming the call, the results as last checkpointed with status "failed"
// (common/results.hpp's fault record), exit 3. A live peer never fires it, however long a call takes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace logpb {

class CallGuard {
 public:
  struct Config {
    double stuck_s = 2.0;                          // a call this long, with a peer gone, ends the run
    double check_s = 0.25;                         // how often the watching thread looks
    std::string library;                           // for the message, e.g. "libfabric's shm provider"
    std::function<bool()> peers_alive;             // the job's liveness; called from the watching thread
    std::function<void(const std::string&)> fire;  // what ends the run (default: message, fault record, exit 3)
  };

  CallGuard() = default;
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;
  ~CallGuard() { stop(); }

  void enter(const char* call) noexcept {
    call_.store(call, std::memory_order_relaxed);
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // odd: inside
  }
  void leave() noexcept { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Starts (or restarts with a new config) the watching thread. Arms the fault record, so every
  // checkpoint from now on is staged for it.
  void watch(Config c);
  void stop();
  bool watching() const { return thread_.joinable(); }
  double stuck_s() const { return cfg_.stuck_s; }

 private:
  void run(std::stop_token st);

  alignas(64) std::atomic<std::uint64_t> seq_{0};
  std::atomic<const char*> call_{""};
  alignas(64) Config cfg_;
  std::mutex m_;
  std::condition_variable_any cv_;
  std::jthread thread_;
};

}  // namespace logpb
