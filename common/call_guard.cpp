#include "common/call_guard.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/results.hpp"

namespace logpb {

namespace {

// What a stuck call means, for the message and the results file alike.
std::string stuck_message(const std::string& library, const std::string& what, double seconds) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", seconds);
  return "peer lost: a peer of this job is gone and " + library + " " + what + " for " + s +
         " s (a library can spin forever on state its dead peer held); results are as last checkpointed";
}

// The default end: as a lost peer ends on every transport (exit 3, the results kept), from this thread,
// since the datapath's own thread is not coming back.
void end_run(const std::string& message) {
  std::fprintf(stderr, "\nlogpbench: %s\n", message.c_str());
  write_fault_record_from_thread();
  const std::string path = fault_record_path();
  if (!path.empty()) std::fprintf(stderr, "logpbench: partial results in %s\n", path.c_str());
  std::fflush(stderr);
  ::_exit(3);
}

}  // namespace

void CallGuard::watch(Config c) {
  stop();
  if (!c.fire) c.fire = end_run;
  cfg_ = std::move(c);
  arm_fault_record(stuck_message(cfg_.library, "did not return from a call", cfg_.stuck_s));
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

void CallGuard::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  thread_.join();
}

void CallGuard::run(std::stop_token st) {
  using clock = std::chrono::steady_clock;
  const auto step = std::chrono::duration<double>(cfg_.check_s);
  std::uint64_t seen = seq_.load(std::memory_order_acquire);
  auto since = clock::now();
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait_for(lock, st, step, [] { return false; });  // a timeout, or stop() asked
    if (st.stop_requested()) return;
    const std::uint64_t now_seq = seq_.load(std::memory_order_acquire);
    const auto now = clock::now();
    if (now_seq != seen || (now_seq & 1) == 0) {  // moved on, or outside any call: nothing is stuck
      seen = now_seq;
      since = now;
      continue;
    }
    const double stuck = std::chrono::duration<double>(now - since).count();
    if (stuck < cfg_.stuck_s || !cfg_.peers_alive || cfg_.peers_alive()) continue;
    cfg_.fire(stuck_message(cfg_.library, std::string("has not returned from ") + call_.load(std::memory_order_relaxed),
                            stuck));
    return;
  }
}

}  // namespace logpb
