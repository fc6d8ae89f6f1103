#include "shm/connect.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <random>

#include "common/errors.hpp"

namespace logpb::shm {

nlohmann::json shm_host_identity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  return {{"host", host}, {"boot_id", boot_id}};
}

ShmRegion join_shm_region(Ranks& ranks, const ShmOptions& opt) {
  // Step 1: one host. Every rank sees the same allgather, so every rank throws the same error.
  const nlohmann::json hosts = ranks.allgather(shm_host_identity());
  for (std::size_t r = 1; r < hosts.size(); ++r) {
    if (hosts[r] != hosts[0])
      throw UsageError("--transport shm needs every rank on one host: rank 0 runs on " +
                       hosts[0].at("host").get<std::string>() + ", rank " + std::to_string(r) + " on " +
                       hosts[r].at("host").get<std::string>() + " (use --transport verbs or dpdk across hosts)");
  }

  // Step 2: rank 0 creates and names the region; it says why when it cannot, so nobody waits for it.
  std::optional<ShmRegion> region;
  nlohmann::json named = nlohmann::json::object();
  if (ranks.rank() == 0) {
    std::random_device rd;
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%08x%08x", rd(), rd());
    const std::string name = "/logpbench." + std::to_string(getpid()) + "." + nonce;
    try {
      region.emplace(ShmRegion::create_named(name, ranks.size(), opt));
      named["name"] = name;
    } catch (const std::exception& e) {
      named["error"] = e.what();
      named["usage"] = dynamic_cast<const UsageError*>(&e) != nullptr;
    }
  }
  named = ranks.broadcast(named);
  if (named.contains("error")) {
    const std::string why = "rank 0 could not create the shm region: " + named["error"].get<std::string>();
    if (named.value("usage", false)) throw UsageError(why);
    throw std::runtime_error(why);
  }
  std::string failed;
  if (ranks.rank() != 0) {
    try {
      region.emplace(ShmRegion::open_named(named.at("name").get<std::string>()));
      if (region->ranks() != ranks.size()) throw std::runtime_error("the region is not sized for this job");
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }
  const nlohmann::json opened = ranks.allgather(failed);
  for (std::size_t r = 0; r < opened.size(); ++r)
    if (!opened[r].get<std::string>().empty())
      throw std::runtime_error("rank " + std::to_string(r) +
                               " could not map the shm region: " + opened[r].get<std::string>());
  return std::move(*region);
}

}  // namespace logpb::shm
