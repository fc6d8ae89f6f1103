// UCP control path: the context (UCX's environment read by ucp_config_read: UCX_TLS, UCX_NET_DEVICES, ...),
// one worker, the segment mapped with ucp_mem_map and its remote key, and every pair of ranks connected
// over the job's bootstrap (common/ranks.hpp): one allgather of worker addresses and keys, then
// ucp_ep_create to each peer. It records what UCP chose per endpoint (ucp_ep_print_info: transports,
// lanes, protocol thresholds). The datapath is ucx/ucp_transport.hpp.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ranks.hpp"
#include "ucx/options.hpp"
#include "ucx/ucp_transport.hpp"

namespace logpb::ucx {

class UcpConnection {
 public:
  UcpConnection(Ranks& ranks, const TransportOptions& opt);
  UcpConnection(const UcpConnection&) = delete;
  UcpConnection& operator=(const UcpConnection&) = delete;
  ~UcpConnection();
  UcpTransport& transport() { return *transport_; }
  const nlohmann::json& describe() const { return describe_; }

 private:
  nlohmann::json record(int peer) const;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  std::byte* segment_ = nullptr;
  std::uint32_t segment_bytes_ = 0;
  std::vector<ucp_ep_h> eps_;
  std::vector<ucp_rkey_h> rkeys_;
  std::unique_ptr<UcpTransport> transport_;
  nlohmann::json describe_;
  int rank_ = 0, size_ = 0;
};

}  // namespace logpb::ucx
