// What every transport's job shares: the session id, the AM endpoint's options and the NUMA
// placement record.
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
#include "methods/protocol.hpp"

namespace logpb::app {

std::uint32_t new_session();

// The AM endpoint's options. The passive side waits as long as the client thinks (it still notices a
// dead client at once); loss_timeout_s is the transport's default when --loss-timeout is not given.
am::EndpointOptions endpoint_options(const Options& o, std::uint32_t session, std::size_t segment_bytes, bool server,
                                     double loss_timeout_s = 0);

// The polling core against the NIC's NUMA node (-1: unknown): warns when remote, returns the record.
nlohmann::json numa_placement(int cpu, int nic_node);

}  // namespace logpb::app
