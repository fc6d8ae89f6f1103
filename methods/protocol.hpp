// The handlers both ends of every method agree on. The server side is passive: it runs request handlers
// until the client's quit request; every method is driven from the client.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/am.hpp"

namespace logpb::methods {

enum Handler : std::uint16_t {
  kQuit = 1,        // request: the server stops serving (no reply: the client may exit right after)
  kEcho = 2,        // request: reply kAck at once, echoing the four argument words
  kAck = 3,         // reply: counted by the client
  kStoreCheck = 4,  // bulk store request: reply kAck with (checksum of the bytes that landed, their length)
  kGotBack = 5,     // get completion (runs on the client)
  kSink = 6,        // bulk store request: reply kAck at once (the data has landed)
  kSendBack = 7,    // request (args: bytes n, offset in the requester's segment): reply kAck carrying n bytes
  kQuiet = 8,       // one-way request (small or a store): counted, no reply
  kFloodMe = 9,     // one-way request (args: count, bytes n, offset in the requester's segment): the server
                    // sends `count` one-way messages of n bytes (kArrived) back, from its serving loop
  kArrived = 10,    // one-way request on the client: counted
  kService = 11,    // request (args: 1 start, 0 stop): the replier times its own service of requests
                    // (Endpoint::time_service); the reply to stop carries (ps per request, requests)
};

struct ClientState {
  std::uint64_t acks = 0;
  std::uint64_t arrivals = 0;  // one-way messages the peer sent us (kArrived)
  std::uint64_t last_args[4] = {};
};
struct ServerState {
  int quits = 0;              // requesters that said quit
  std::uint64_t quiet = 0;    // one-way messages received
  std::uint64_t to_send = 0;  // kFloodMe: one-way messages still to send back
  int send_to = 0;            // kFloodMe: the rank that asked for them
  std::uint32_t send_bytes = 0, send_off = 0;
};

// Asks the replier to start (on) or stop timing its own service of requests; stopping returns its busy
// time per request in ns (NaN when it did not time any).
template <class EP>
double replier_service(EP& ep, ClientState& st, bool on, std::uint64_t* requests = nullptr, double* mean_ns = nullptr,
                       double* p90_ns = nullptr) {
  const std::uint64_t want = st.acks + 1;
  ep.request(kService, on ? 1 : 0);
  if (!ep.wait_until([&] { return st.acks == want; })) return NAN;
  if (requests) *requests = st.last_args[1];
  // A replier that does not send them (an older peer) leaves them 0: NaN.
  if (mean_ns) *mean_ns = st.last_args[2] > 0 ? static_cast<double>(st.last_args[2]) / 1000 : NAN;
  if (p90_ns) *p90_ns = st.last_args[3] > 0 ? static_cast<double>(st.last_args[3]) / 1000 : NAN;
  return !on && st.last_args[1] > 0 ? static_cast<double>(st.last_args[0]) / 1000 : NAN;
}

template <class EP>
void install_client(EP& ep, ClientState& st) {
  ep.user = &st;
  ep.on(kAck, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<ClientState*>(e.user);
    ++s->acks;
    for (int i = 0; i < 4; ++i) s->last_args[i] = f.args[i];
  });
  ep.on(kArrived, [](EP& e, const am::Frame&) { ++static_cast<ClientState*>(e.user)->arrivals; });
}

template <class EP>
void install_server(EP& ep, ServerState& st) {
  ep.user = &st;
  ep.on(kEcho, [](EP& e, const am::Frame& f) { e.reply(f, kAck, f.args[0], f.args[1], f.args[2], f.args[3]); });
  ep.on(kQuit, [](EP& e, const am::Frame&) { ++static_cast<ServerState*>(e.user)->quits; });
  ep.on(kSink, [](EP& e, const am::Frame& f) { e.reply(f, kAck, f.bulk_len); });
  ep.on(kSendBack, [](EP& e, const am::Frame& f) {
    const auto n = static_cast<std::uint32_t>(f.args[0]);
    if (n == 0) return e.reply(f, kAck, 0);
    if constexpr (BulkTransport<std::remove_reference_t<decltype(e.transport())>>) {
      const auto seg = e.transport().segment();
      // Refuse a length or offset outside the segment (the requester's is as large as ours): it sees 0
      // bytes come back, and this server goes on serving.
      if (n > seg.size() || f.args[1] > seg.size() - n) return e.reply(f, kAck, 0);
      e.reply_store(f, kAck, seg.data(), n, static_cast<std::uint32_t>(f.args[1]), n);
    } else {
      e.reply(f, kAck, 0);
    }
  });
  ep.on(kQuiet, [](EP& e, const am::Frame&) { ++static_cast<ServerState*>(e.user)->quiet; });
  ep.on(kService, [](EP& e, const am::Frame& f) {
    if (f.args[0] != 0) {
      e.time_service(true);
      return e.reply(f, kAck, 0, 0);
    }
    e.time_service(false);
    // In ps: the median, the requests, the mean and the 90th percentile of the replier's timed polls.
    auto ps = [](double ns) { return std::isfinite(ns) ? static_cast<std::uint64_t>(ns * 1000 + 0.5) : 0; };
    const double median = e.service_ns(), mean = e.service_mean_ns(), p90 = e.service_p90_ns();
    e.reply(f, kAck, ps(median), e.service_requests(), ps(mean), ps(p90));
  });
  ep.on(kFloodMe, [](EP& e, const am::Frame& f) {
    auto* s = static_cast<ServerState*>(e.user);
    s->to_send = f.args[0];
    s->send_to = f.src;
    s->send_bytes = static_cast<std::uint32_t>(f.args[1]);
    s->send_off = static_cast<std::uint32_t>(f.args[2]);
  });
  ep.on(kStoreCheck, [](EP& e, const am::Frame& f) {
    const auto seg = e.transport().segment();  // the AM layer has checked the range against it
    std::uint64_t h = 1469598103934665603ull;
    for (std::uint32_t i = 0; i < f.bulk_len; ++i)
      h = (h ^ std::to_integer<std::uint8_t>(seg[f.bulk_off + i])) * 1099511628211ull;
    e.reply(f, kAck, h, f.bulk_len);
  });
}

// Serve until the client says quit (a replier of several requesters: until each has said so). A dead client ends this
// with PeerError. One-way messages the client asked for (kFloodMe) are sent from this loop, never from inside a
// handler, so handlers never nest.
template <class EP>
void serve(EP& ep, int requesters = 1) {
  ServerState st;
  install_server(ep, st);
  for (;;) {
    ep.wait_until([&] { return st.quits >= requesters || st.to_send > 0; });
    if (st.quits >= requesters) break;
    const std::uint32_t n = st.send_bytes;
    if (n == 0) {
      ep.oneway(st.send_to, kArrived);
    } else if constexpr (BulkTransport<std::remove_reference_t<decltype(ep.transport())>>) {
      const auto seg = ep.transport().segment();
      if (n > seg.size() / 2 || st.send_off > seg.size() - n) {  // refuse: the client sees nothing come
        st.to_send = 0;
        continue;
      }
      ep.oneway_store(st.send_to, kArrived, seg.data(), n, st.send_off);
    } else {
      st.to_send = 0;
      continue;
    }
    --st.to_send;
  }
  ep.user = nullptr;
}

}  // namespace logpb::methods
