// What the three files of the job's runtime share, and nothing outside them includes: common/ranks.cpp (the
// star on rank 0 and its collectives), common/rank_sockets.cpp (the socketpair and TCP backends, the hello)
// and common/launcher.cpp (mpirun / srun environments and the rendezvous file). See common/ranks.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/bootstrap.hpp"

namespace logpb::ranks_impl {

using Clock = std::chrono::steady_clock;

// A deadline that may be absent (timeout <= 0: wait for ever, but still wake to notice signals and deaths).
struct Deadline {
  double timeout_s;
  Clock::time_point at;
  explicit Deadline(double t)
      : timeout_s(t),
        at(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t > 0 ? t : 0))) {}
  bool finite() const { return timeout_s > 0; }
  bool passed() const { return finite() && Clock::now() >= at; }
  double left_s() const { return std::chrono::duration<double>(at - Clock::now()).count(); }
  // A poll() timeout: never more than 200 ms, so signals are noticed (throw_if_interrupted) promptly.
  int poll_ms() const {
    if (!finite()) return 200;
    const double ms = left_s() * 1e3;
    return ms <= 0 ? 0 : static_cast<int>(std::min(ms + 1, 200.0));
  }
  // For Channel::receive, whose 0 means "for ever": a finite deadline never turns into 0.
  double receive_s() const { return finite() ? std::max(left_s(), 0.001) : 0; }
};

// Fields read from a peer's message or a rendezvous file, tolerant of a wrong type: a foreign or corrupt
// message must give one of our errors, not a json::type_error from deep inside.
std::string str_of(const nlohmann::json& j, const char* key, const std::string& def = "");
long long int_of(const nlohmann::json& j, const char* key, long long def);

std::string fmt_s(double s);  // "1.5 s"
std::string this_host();

// Sends, ignoring failures: used to tell others why the job ends, when some of them may be gone already.
void send_quietly(Channel& ch, const nlohmann::json& m);

// A connect whose every attempt ends by the deadline; -1 with `why` when no address answered in time.
int connect_bounded(const std::string& host, std::uint16_t port, double timeout_s, std::string& why);

// Member side of the hello, on a connected channel. Returns "" when welcomed; otherwise the reason, with
// `code` ("job" when we reached another job's rank 0). Throws PeerError when rank 0 goes silent or away.
std::string member_hello(Channel& ch, int rank, int size, const std::string& key, const Deadline& dl,
                         std::string& code);

}  // namespace logpb::ranks_impl
