// UCT control path: finds the transport and device the user named among every component's memory
// domains (what ucx_info -d lists), opens the worker and the interface (and the bulk interface of
// --ucx-bulk-tl), allocates or registers the segment on the memory domain that serves puts and gets,
// and connects every pair of ranks over the job's bootstrap (common/ranks.hpp): one allgather of device,
// interface and segment addresses (connect to iface), or of one endpoint address per peer (connect to ep,
// e.g. rc_verbs). The datapath is ucx/uct_transport.hpp.
#pragma once

#include <uct/api/uct.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/ranks.hpp"
#include "ucx/options.hpp"
#include "ucx/uct_transport.hpp"

namespace logpb::ucx {

class UctConnection {
 public:
  // UsageError when the transport or device is not on this host (the message lists what UCT sees) or
  // cannot do what the method needs; std::runtime_error naming the UCX call for any other failure.
  UctConnection(Ranks& ranks, const TransportOptions& opt);
  UctConnection(const UctConnection&) = delete;
  UctConnection& operator=(const UctConnection&) = delete;
  ~UctConnection();
  UctTransport& transport() { return *transport_; }
  // The bare loop under the small AM's round trip (meta.transport_floor), in a job of two ranks: am_short of
  // 64 bytes on an AM id of its own, uct_worker_progress until the answer's handler ran, nothing else
  // (bench/uct_bare_pingpong is the same loop as a program of its own). Both ranks call it before the job
  // runs; `requester` times it and returns the figures (common/results.hpp, transport_floor_json), or why it
  // has none; the other rank returns null.
  nlohmann::json measure_floor(Ranks& ranks, const Clock& clock, int requester);
  // What UCT chose and reported (meta.ucx; the transport's describe() carries it too).
  const nlohmann::json& describe() const { return describe_; }

 private:
  struct Iface {
    uct_component_h component = nullptr;
    uct_md_h md = nullptr;
    uct_iface_h iface = nullptr;
    uct_iface_attr_t attr{};
    uct_md_attr_t md_attr{};
    std::string tl, dev, md_name, component_name;
  };
  void open_iface(Iface& f, const std::string& tl, const std::string& dev);
  void allocate_segment(const TransportOptions& opt, Iface& bulk);
  UctCaps caps(const TransportOptions& opt, const Iface& bulk) const;
  nlohmann::json my_addresses(const Iface& f, std::vector<uct_ep_h>& eps, int size);
  void connect(Ranks& ranks, Iface& f, std::vector<uct_ep_h>& eps, const nlohmann::json& all, const char* key);
  nlohmann::json record(const TransportOptions& opt, const UctCaps& c) const;

  uct_component_h* components_ = nullptr;
  unsigned n_components_ = 0;
  ucs_async_context_t* async_ = nullptr;
  uct_worker_h worker_ = nullptr;
  Iface am_, bulk_;
  struct FloorInbox {
    std::uint64_t count = 0, last = 0;  // messages seen, the last one's header
  } floor_inbox_;
  UctTransport* error_target_ = nullptr;  // the interfaces' error handler's argument (UctTransport::on_iface_error)
  bool separate_bulk_ = false;
  std::uint32_t segment_bytes_ = 0;
  std::byte* segment_ = nullptr;
  bool segment_alloc_ = false;  // allocated by the memory domain (uct_mem_alloc), else by us and registered
  uct_allocated_memory_t alloc_{};
  uct_mem_h memh_ = UCT_MEM_HANDLE_NULL;
  std::byte* staging_ = nullptr;
  uct_mem_h staging_memh_ = UCT_MEM_HANDLE_NULL;
  std::vector<std::byte> rkey_packed_;
  std::vector<uct_ep_h> eps_, bulk_eps_;
  std::vector<uct_rkey_bundle_t> rkeys_;
  std::vector<bool> rkey_held_;
  std::unique_ptr<UctTransport> transport_;
  nlohmann::json describe_;
  std::vector<std::string> workarounds_;  // what logpbench set in UCX's configuration, and why (meta.ucx)
  int rank_ = 0, size_ = 0;
};

}  // namespace logpb::ucx
