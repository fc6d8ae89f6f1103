// The two UCX datapaths' shared cold parts: errors, the inbox's growth, the operation slots, addresses
// as text.
#include "ucx/transport.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/errors.hpp"

namespace logpb::ucx {

std::string call_failed(ucs_status_t s, const char* call) {
  return std::string(call) + " failed: " + ucs_status_string(s) + " (UCS status " + std::to_string(s) + ")";
}

void fail_datapath(ucs_status_t s, const char* call) {
  throw PeerError("ucx: " + call_failed(s, call) + " (the job's UCX communication broke; a rank may be gone)");
}

void fail_setup(ucs_status_t s, const char* call, const std::string& what_to_check) {
  std::string m = "ucx: " + call_failed(s, call);
  if (!what_to_check.empty()) m += "; " + what_to_check;
  throw std::runtime_error(m);
}

void CallbackError::rethrow() const {
  if (status != UCS_OK) fail_datapath(status, what);
}

std::string soft_roce_ud_workaround(const std::string& ib_dev) {
  if (std::getenv("UCX_UD_VERBS_ETH_DGID_CHECK") || std::getenv("UCX_UD_ETH_DGID_CHECK")) return "";  // the user's
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string soft;
  for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec)) {
    const std::string name = e.path().filename().string();
    if ((ib_dev.empty() || name == ib_dev) && fs::exists(e.path() / "parent", ec))
      soft += (soft.empty() ? "" : ", ") + name;
  }
  if (soft.empty()) return "";
  setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0);
  return "UCX_UD_VERBS_ETH_DGID_CHECK=n set by logpbench: " + soft +
         " is software RoCE, on which UCX's UD destination-GID check drops every packet (ud_verbs never "
         "connects with it, ucx_perftest's too); set the variable to y to keep the check";
}

Inbox::Inbox(std::byte* segment, std::uint32_t segment_bytes)
    : ring_(256), segment_(segment), segment_bytes_(segment_bytes) {}

void Inbox::grow() {
  std::vector<am::Frame> bigger(ring_.size() * 2);
  std::uint64_t n = 0;
  for (; head_ != tail_; ++head_) bigger[n++] = ring_[head_ & (ring_.size() - 1)];
  ring_.swap(bigger);
  head_ = 0;
  tail_ = n;
  ++counters_.queue_grown;
}

Ops::Ops(std::size_t slots, std::size_t payload_bytes) : slots_(slots), payload_(slots * payload_bytes) {
  if (slots == 0 || (slots & (slots - 1)) != 0) throw std::logic_error("ucx: Ops slots must be a power of two");
  mask_ = slots - 1;
  for (std::size_t i = 0; i < slots; ++i) {
    slots_[i].owner = this;
    slots_[i].payload = payload_bytes ? payload_.data() + i * payload_bytes : nullptr;
  }
}

std::string hex(const void* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* b = static_cast<const unsigned char*>(p);
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[b[i] >> 4];
    s[2 * i + 1] = kDigits[b[i] & 15];
  }
  return s;
}

std::vector<std::uint8_t> unhex(const std::string& s, const char* what) {
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error(std::string("ucx: a peer's ") + what + " is not hexadecimal");
  };
  if (s.size() % 2) throw std::runtime_error(std::string("ucx: a peer's ") + what + " has an odd length");
  std::vector<std::uint8_t> out(s.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint8_t>(digit(s[2 * i]) * 16 + digit(s[2 * i + 1]));
  return out;
}

}  // namespace logpb::ucx
