// A self-check every transport can run (`--bench verify`): bulk stores of sizes around and across the
// NI's frame size land byte for byte (the peer checksums what arrived in its segment and replies with
// it), and gets bring the same bytes back. Not a measurement: a transport that fails it is broken.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "methods/protocol.hpp"

namespace logpb::methods {

inline std::uint64_t fnv1a(const std::byte* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::to_integer<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

struct VerifyCase {
  std::uint32_t bytes = 0;
  bool store_ok = false, get_ok = false;
};

template <class EP>
std::vector<VerifyCase> verify_bulk(EP& ep, ClientState& st, std::uint32_t max_bytes, std::uint64_t seed) {
  static bool got;
  ep.endpoint().on(kGotBack, [](typename EP::Endpoint&, const am::Frame&) { got = true; });
  std::vector<std::uint32_t> sizes{1, 7, 64, 1000, 1400, 1500, 1501, 4096, 9000, 65536, 300000};
  std::vector<VerifyCase> out;
  auto seg = ep.transport().segment();
  std::vector<std::byte> data;
  std::uint64_t x = seed | 1;
  for (std::uint32_t n : sizes) {
    if (n > max_bytes || n > seg.size() / 2) continue;
    data.resize(n);
    for (auto& b : data) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = static_cast<std::byte>(x);
    }
    VerifyCase c;
    c.bytes = n;
    const std::uint32_t off = static_cast<std::uint32_t>(x % (seg.size() / 2 - n + 1));
    const std::uint64_t want = st.acks + 1;
    ep.store(kStoreCheck, data.data(), n, off);
    if (ep.wait_until([&] { return st.acks == want; }))
      c.store_ok = st.last_args[0] == fnv1a(data.data(), n) && st.last_args[1] == n;
    // Bring the same bytes back into the upper half of our own segment.
    const std::uint32_t local = static_cast<std::uint32_t>(seg.size() / 2);
    std::memset(seg.data() + local, 0, n);
    got = false;
    ep.get(kGotBack, off, n, local);
    if (ep.wait_until([&] { return got; })) c.get_ok = std::memcmp(seg.data() + local, data.data(), n) == 0;
    out.push_back(c);
    throw_if_interrupted();
  }
  return out;
}

}  // namespace logpb::methods
