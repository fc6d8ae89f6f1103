// The connect step of a verbs job (control path, apart from the datapath in transport.hpp): given the
// job's runtime (common/ranks.hpp: rank, size, allgather, barrier, liveness) and the device/transport
// options, build this rank's context with one QP per peer, publish what every peer needs to reach us
// (one Address per peer: its QP, our segment, the header ring we keep for it) with ONE allgather, take
// every QP to RTS, post every receive, and meet the others in a barrier ("ready") so nothing is sent to
// a queue without receives. Any rank failing on the way aborts the job for all (Ranks::abort), so the
// others stop at once instead of waiting out their deadline.
//
// The transport's peer_alive() is the runtime's all_alive(): `job` must outlive the transport.
#pragma once

#include <concepts>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verbs/context.hpp"
#include "verbs/transport.hpp"

namespace logpb::verbs {

// What the connect step needs from a job's runtime. logpb::Ranks has it; so may a test's own.
template <class B>
concept JobRuntime = requires(B& b, const B& cb, const nlohmann::json& j) {
  { cb.rank() } -> std::convertible_to<int>;
  { cb.size() } -> std::convertible_to<int>;
  { b.allgather(j) } -> std::same_as<nlohmann::json>;
  b.barrier();
  { cb.all_alive() } -> std::same_as<bool>;
};

// The context with every QP at RTS, and every rank's address for us (by rank; ours unused).
struct ConnectedQps {
  std::unique_ptr<Context> context;
  std::vector<Address> peers;
};
// The cold part, not a template: context, one allgather of addresses (and of the options every rank
// must share: --ud), connect. UsageError when the ranks disagree on what they run.
ConnectedQps connect_qps(const DeviceOptions& d, int rank, int size,
                         const std::function<nlohmann::json(const nlohmann::json&)>& allgather);

// T: Transport (busy polling) or EventTransport (--event).
template <class T = Transport, JobRuntime B>
std::unique_ptr<T> connect(B& job, const DeviceOptions& d, const TransportOptions& t) {
  std::unique_ptr<T> transport;
  try {
    ConnectedQps q =
        connect_qps(d, job.rank(), job.size(), [&job](const nlohmann::json& j) { return job.allgather(j); });
    transport = std::make_unique<T>(std::move(q.context), std::move(q.peers), t, [&job] { return job.all_alive(); });
  } catch (const std::exception& e) {
    if constexpr (requires { job.abort(std::string()); }) job.abort(std::string("verbs connect failed: ") + e.what());
    throw;
  }
  job.barrier();  // ready: every rank has posted the receives of every QP
  return transport;
}

}  // namespace logpb::verbs
