// Out-of-band exchange between server and client over TCP, before and around a run: versions, session,
// the run's parameters, and whatever the transport needs (a shm name; QPN/PSN/GID/rkey; MAC addresses).
// Each message is a fixed header (magic, protocol version, length) and a JSON body; lengths are checked
// and every wait has a deadline, so a wrong peer or a dead one gives an error, not a hang.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace logpb {

inline constexpr std::uint16_t kBootstrapVersion = 1;
// The largest message body any peer may send (a collective's data: addresses of every rank), and the
// deepest nesting of arrays and objects in it. Deeper input would cost a stack frame per level wherever
// the message is copied or relayed (json's copy and dump recurse); no message of ours nests more than a
// few levels.
inline constexpr std::uint32_t kBootstrapMaxBody = 1u << 20;
inline constexpr int kBootstrapMaxDepth = 64;

class Channel {
 public:
  // Server: listen on `port` (all addresses) and accept one client within `timeout_s` (0: wait forever).
  static Channel accept_one(std::uint16_t port, double timeout_s);
  // Client: connect to host:port, retrying for up to `timeout_s` while the server is not yet listening.
  static Channel connect_to(const std::string& host, std::uint16_t port, double timeout_s);

  // Adopts a connected stream socket, e.g. one end of a socketpair between a process and its fork.
  static Channel adopt(int fd) { return Channel(fd); }

  Channel(Channel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Channel& operator=(Channel&& o) noexcept;
  Channel(const Channel&) = delete;
  ~Channel();

  void send(const nlohmann::json& body);
  // One message, refused (PeerError) when its header is not ours (magic, version), when it declares more
  // than max_bytes (checked before a byte of the body is read), or when its body is not a JSON object
  // nested at most kBootstrapMaxDepth deep.
  nlohmann::json receive(double timeout_s, std::uint32_t max_bytes = kBootstrapMaxBody);
  // Non-blocking: false once the peer has closed the connection or the process behind it died.
  bool peer_alive() const;
  int fd() const { return fd_; }

 private:
  explicit Channel(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace logpb
