#include "common/bootstrap.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"

namespace logpb {
namespace {

constexpr std::uint32_t kMagic = 0x4c504253;  // "LPBS"

struct Header {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t reserved;
  std::uint32_t length;
};

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline, double timeout_s) {
  if (timeout_s <= 0) return 200;  // wait forever, but wake to notice signals
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 200));
}

// Waits for `events` on fd until the deadline; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline, double timeout_s) {
  for (;;) {
    throw_if_interrupted();
    if (timeout_s > 0 && Clock::now() >= deadline) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms_left(deadline, timeout_s));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll on the bootstrap socket: ") + std::strerror(errno));
  }
}

void read_exact(int fd, void* buf, std::size_t n, Clock::time_point deadline, double timeout_s) {
  auto* p = static_cast<char*>(buf);
  while (n) {
    if (!wait_fd(fd, POLLIN, deadline, timeout_s))
      throw PeerError("the peer sent nothing on the bootstrap connection within " + std::to_string(timeout_s) + " s");
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0) throw PeerError("the peer closed the bootstrap connection (it exited or failed)");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw PeerError(std::string("reading the bootstrap connection: ") + std::strerror(errno));
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

}  // namespace

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

Channel Channel::accept_one(std::uint16_t port, double timeout_s) {
  const int ls = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1, zero = 0;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // accept IPv4 clients too
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0) {
    const std::string e = std::strerror(errno);
    ::close(ls);
    throw std::runtime_error("cannot listen on TCP port " + std::to_string(port) + ": " + e +
                             " (another logpbench server running? choose one with --port)");
  }
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  try {
    if (!wait_fd(ls, POLLIN, deadline, timeout_s))
      throw PeerError("no client connected within " + std::to_string(timeout_s) + " s");
  } catch (...) {
    ::close(ls);
    throw;
  }
  const int fd = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  const int err = errno;
  ::close(ls);
  if (fd < 0) throw std::runtime_error(std::string("accept: ") + std::strerror(err));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return Channel(fd);
}

Channel Channel::connect_to(const std::string& host, std::uint16_t port, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gr = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gr != 0) throw UsageError("cannot resolve server '" + host + "': " + gai_strerror(gr));
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string last = "no address";
  for (;;) {
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        ::freeaddrinfo(res);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return Channel(fd);
      }
      last = std::strerror(errno);
      ::close(fd);
    }
    if (interrupt_signal().load() || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  throw_if_interrupted();
  throw PeerError("no logpbench server at " + host + ":" + std::to_string(port) + " (" + last + ") after " +
                  std::to_string(timeout_s) + " s: start `logpbench server` there first, or check --port");
}

void Channel::send(const nlohmann::json& body) {
  const std::string s = body.dump();
  if (s.size() > kBootstrapMaxBody) throw std::length_error("bootstrap message too long");
  Header h{kMagic, kBootstrapVersion, 0, static_cast<std::uint32_t>(s.size())};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof h);
  buf += s;
  const char* p = buf.data();
  std::size_t n = buf.size();
  while (n) {
    const ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw PeerError(std::string("sending on the bootstrap connection: ") + std::strerror(errno));
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

nlohmann::json Channel::receive(double timeout_s, std::uint32_t max_bytes) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Header h{};
  read_exact(fd_, &h, sizeof h, deadline, timeout_s);
  if (h.magic != kMagic) throw PeerError("the bootstrap peer is not logpbench (bad magic)");
  if (h.version != kBootstrapVersion)
    throw PeerError("the bootstrap peer speaks protocol version " + std::to_string(h.version) + ", this build " +
                    std::to_string(kBootstrapVersion) + ": run the same logpbench version on both ends");
  if (h.length > std::min(max_bytes, kBootstrapMaxBody))
    throw PeerError("bootstrap message of " + std::to_string(h.length) + " bytes refused (at most " +
                    std::to_string(std::min(max_bytes, kBootstrapMaxBody)) + " here)");
  // Grown as the bytes arrive: a peer that declares a large message and sends little costs little.
  std::string body;
  char chunk[16384];
  while (body.size() < h.length) {
    const std::size_t n = std::min<std::size_t>(sizeof chunk, h.length - body.size());
    read_exact(fd_, chunk, n, deadline, timeout_s);
    body.append(chunk, n);
  }
  bool too_deep = false;
  auto j = nlohmann::json::parse(
      body,
      [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kBootstrapMaxDepth) too_deep = true;
        return !too_deep;
      },
      false);
  if (too_deep)
    throw PeerError("bootstrap message nested deeper than " + std::to_string(kBootstrapMaxDepth) + " levels refused");
  if (j.is_discarded() || !j.is_object()) throw PeerError("malformed bootstrap message");
  return j;
}

bool Channel::peer_alive() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return false;
  char c;
  const ssize_t r = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r != 0;
}

}  // namespace logpb
