#include "verbs/connect.hpp"

#include "common/errors.hpp"

namespace logpb::verbs {

ConnectedQps connect_qps(const DeviceOptions& d, int rank, int size,
                         const std::function<nlohmann::json(const nlohmann::json&)>& allgather) {
  ConnectedQps q;
  q.context = std::make_unique<Context>(d, rank, size);
  nlohmann::json to = nlohmann::json::array();
  for (int r = 0; r < size; ++r) to.push_back(r == rank ? nlohmann::json() : to_json(q.context->local_address(r)));
  const nlohmann::json all = allgather({{"verbs", {{"ud", d.ud}, {"to", to}}}});
  if (!all.is_array() || all.size() != static_cast<std::size_t>(size))
    throw PeerError("verbs connect: the address exchange returned " + std::to_string(all.size()) + " entries for " +
                    std::to_string(size) + " ranks");
  q.peers.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    const nlohmann::json* v = nullptr;
    try {
      v = &all.at(static_cast<std::size_t>(r)).at("verbs");
      if (v->at("ud").get<bool>() != d.ud)
        throw UsageError("verbs: rank " + std::to_string(r) + (d.ud ? " runs RC, " : " runs --ud, ") + "rank " +
                         std::to_string(rank) + (d.ud ? " --ud" : " RC") + ": give every rank the same options");
      q.peers[static_cast<std::size_t>(r)] = address_from_json(v->at("to").at(static_cast<std::size_t>(rank)));
    } catch (const nlohmann::json::exception& e) {
      throw PeerError("verbs connect: rank " + std::to_string(r) + " sent no usable address: " + e.what());
    }
  }
  for (int r = 0; r < size; ++r)
    if (r != rank) q.context->connect(r, q.peers[static_cast<std::size_t>(r)]);
  return q;
}

}  // namespace logpb::verbs
