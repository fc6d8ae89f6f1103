// libfabric control path: fi_getinfo with hints from what the methods need, the fabric, domain, CQ, the
// endpoint and address vector (rdm) or a passive endpoint and one connection per peer (msg), the segment's
// registration, and the exchange of addresses over the job's bootstrap (common/ranks.hpp): fi_getname,
// one allgather, fi_av_insert of every rank into one AV (rdm) or fi_connect/fi_accept (msg). Every rank's
// receives are posted before the "ready" barrier. The datapath is ofi/transport.hpp.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ranks.hpp"
#include "ofi/options.hpp"
#include "ofi/transport.hpp"

namespace logpb::ofi {

class Connection {
 public:
  // UsageError when the provider is unknown (the message lists those fi_getinfo sees) or offers nothing
  // the options ask; std::runtime_error naming the call for any other failure.
  Connection(Ranks& ranks, const TransportOptions& opt);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
  Transport& transport() { return *transport_; }
  // The provider and what it reported (meta.ofi; the transport's describe() carries it too).
  const nlohmann::json& describe() const { return provider_; }
  // This rank's address as fi_getname gives it (rdm: its endpoint's; msg: its passive endpoint's), what
  // the peers insert into their address vectors or connect to.
  const std::vector<std::uint8_t>& address() const { return name_; }

 private:
  void open(const TransportOptions& opt);
  void set_universe_size();
  void find_provider(const TransportOptions& opt);
  std::size_t open_domain(const TransportOptions& opt);
  bool choose_multi_recv(const TransportOptions& opt);
  void name_shm_region();
  void open_endpoint(const TransportOptions& opt, bool multi_recv);
  void* register_segment(const TransportOptions& opt, bool rma);
  void make_transport(const TransportOptions& opt, bool multi_recv, bool rma, void* segment_desc);
  void record_provider(const TransportOptions& opt, std::size_t cq_size, bool multi_recv, bool rma);
  void* register_memory(void* buf, std::size_t len, std::uint64_t access);
  void connect_rdm(Ranks& ranks, const nlohmann::json& all);
  void connect_msg(Ranks& ranks, const nlohmann::json& all);
  fid_ep* open_msg_ep(fi_info* info, int peer);

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_pep* pep_ = nullptr;
  fid_ep* ep_ = nullptr;       // rdm
  std::vector<fid_ep*> eps_;   // msg: by peer rank
  std::vector<int> peer_ids_;  // msg: each endpoint's context, its peer's rank
  std::vector<fid_mr*> mrs_;
  std::uint64_t next_key_ = 1;
  struct alignas(4096) Page {
    std::byte b[4096];
  };
  std::vector<Page> segment_;
  fid_mr* segment_mr_ = nullptr;
  std::unique_ptr<Transport> transport_;
  nlohmann::json provider_;
  std::vector<std::uint8_t> name_;
  int rank_ = 0, size_ = 0;
  TransportOptions opt_;
};

}  // namespace logpb::ofi
