// The socket backends of the job's runtime (common/ranks.hpp): `local -N` over socketpairs to forked
// children, and TCP (rank 0 listening, members connecting), with the hello that admits a member.
#include "common/ranks.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/ranks_impl.hpp"

namespace logpb {

using json = nlohmann::json;
using namespace ranks_impl;

namespace {

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST] = {}, serv[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return std::string(host) + ":" + serv;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

json hello_message(int rank, int size, const std::string& key) {
  return {{"op", "hello"},
          {"proto", kRanksProtocol},
          {"rank", rank},
          {"size", size},
          {"job", key},
          {"host", this_host()},
          {"pid", static_cast<long>(::getpid())}};
}

}  // namespace

// A connect that honours a deadline. Channel::connect_to uses a blocking connect(), which towards an address
// that drops SYNs (a firewalled or wrong interface listed in a rendezvous file) would block for the kernel's
// SYN timeout, minutes, whatever our deadline; with several candidate addresses to try we need each attempt
// bounded. Returns -1 and sets `why` when no address answered in time.
int ranks_impl::connect_bounded(const std::string& host, std::uint16_t port, double timeout_s, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gr = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gr != 0) {
    why = "cannot resolve " + host + ": " + gai_strerror(gr);
    return -1;
  }
  const Deadline dl(timeout_s);
  int result = -1;
  for (addrinfo* ai = res; ai && result < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        int r;
        while ((r = ::poll(&p, 1, dl.poll_ms())) == 0 && !dl.passed()) throw_if_interrupted();
        if (r > 0) {
          socklen_t l = sizeof err;
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
        } else {
          err = r < 0 ? errno : ETIMEDOUT;
        }
      }
    }
    if (err == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // Channel expects a blocking socket
      set_nodelay(fd);
      result = fd;
    } else {
      why = host + ":" + std::to_string(port) + ": " + std::strerror(err);
      ::close(fd);
    }
  }
  ::freeaddrinfo(res);
  return result;
}

// Why rank 0 refuses a hello, or "" when it is welcome. `code` lets a member tell "another job's rank 0"
// (worth trying the rendezvous again: the file may be stale and its port reused) from a real misconfiguration.
std::string detail::judge_hello(const json& h, int size, const std::string& key,
                                const std::vector<std::string>& joined_from, std::string& code) {
  if (str_of(h, "op") != "hello") {
    code = "protocol";
    return "the first message was not a hello";
  }
  if (int_of(h, "proto", -1) != kRanksProtocol) {
    code = "protocol";
    return "ranks protocol " + std::to_string(int_of(h, "proto", -1)) + ", rank 0 speaks " +
           std::to_string(kRanksProtocol) + ": run the same logpbench build on every rank";
  }
  // Fields beyond what a member ever sends are refused before anything quotes them (a host name is at most
  // 255 bytes in DNS; a job key is the launcher's ids, far shorter than kMaxJobKey).
  for (const char* field : {"job", "host"}) {
    const auto it = h.find(field);
    if (it != h.end() && (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxHelloField)) {
      code = "protocol";
      return std::string("the hello's '") + field + "' is " +
             (it->is_string() ? std::to_string(it->get_ref<const std::string&>().size()) + " bytes long"
                              : "not a string") +
             " (at most " + std::to_string(kMaxHelloField) + " bytes)";
    }
  }
  const std::string their_key = str_of(h, "job");
  if (their_key != key) {
    code = "job";
    return "job key '" + their_key + "' is not this job's '" + key +
           "' (a member of another job, or a stale rendezvous file pointing at this port)";
  }
  const long long r = int_of(h, "rank", -1), s = int_of(h, "size", -1);
  if (s != size) {
    code = "size";
    return "rank " + std::to_string(r) + " was started for a job of " + std::to_string(s) + " ranks, rank 0 for " +
           std::to_string(size) + ": the ranks' sizes (-N, -n, the launcher's variables) disagree";
  }
  if (r < 1 || r >= size) {
    code = "rank";
    return "rank " + std::to_string(r) + " is outside 1.." + std::to_string(size - 1) +
           (r == 0 ? " (rank 0 is the process it connected to: two processes were given rank 0)" : "");
  }
  if (!joined_from[static_cast<std::size_t>(r)].empty()) {
    code = "duplicate";
    return "rank " + std::to_string(r) + " already joined (" + joined_from[static_cast<std::size_t>(r)] +
           "): two processes were given the same rank";
  }
  return "";
}

std::string ranks_impl::member_hello(Channel& ch, int rank, int size, const std::string& key, const Deadline& dl,
                                     std::string& code) {
  ch.send(hello_message(rank, size, key));
  // Rank 0 answers once every member has joined: the wait is the job's assembly, up to the whole deadline.
  const json m = ch.receive(dl.receive_s(), kMaxHelloBytes);
  const std::string op = str_of(m, "op");
  if (op == "welcome") {
    // Only rank 0 of this job may have our data (addresses, rkeys) after this: a welcome from another job's
    // rank 0 (a stale rendezvous, a port reused) is refused like its refusal would be.
    if (str_of(m, "job") != key) {
      code = "job";
      return "a welcome for job '" + str_of(m, "job").substr(0, kMaxHelloField) + "', not this job '" + key + "'";
    }
    if (int_of(m, "size", -1) != size) {
      code = "size";
      return "rank 0 says the job has " + std::to_string(int_of(m, "size", -1)) + " ranks";
    }
    return "";
  }
  if (op == "refused") {
    code = str_of(m, "code");
    return str_of(m, "reason", std::string("no reason given"));
  }
  if (op == "abort")
    throw PeerError("rank 0 ended the job before it started: " + str_of(m, "reason", std::string("?")));
  code = "protocol";
  return "unexpected answer '" + op.substr(0, kMaxHelloField) + "' to the hello";
}

std::string detail::member_hello(Channel& ch, int rank, int size, const std::string& key, double timeout_s,
                                 std::string& code) {
  return ranks_impl::member_hello(ch, rank, size, key, Deadline(timeout_s), code);
}

// --- RanksListener ------------------------------------------------------------------------------------------

RanksListener::RanksListener(std::uint16_t port) {
  fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1, zero = 0;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 members too
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  // The backlog holds members that connect while rank 0 is still reading an earlier hello.
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 128) != 0) {
    const std::string e = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw UsageError("rank 0 cannot listen on TCP port " + std::to_string(port) + ": " + e +
                     (port ? " (is another logpbench job using it? choose another port, or 0 for any free one)" : ""));
  }
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin6_port);
}

RanksListener& RanksListener::operator=(RanksListener&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

RanksListener::~RanksListener() {
  if (fd_ >= 0) ::close(fd_);
}

// --- local and TCP jobs -------------------------------------------------------------------------------------

Ranks Ranks::local(int size, double timeout_s) {
  if (size < 1) throw UsageError("a local job needs at least one rank, not " + std::to_string(size));
  Ranks r;
  r.launcher_ = "local";
  r.size_ = size;
  r.timeout_s_ = timeout_s;
  r.job_key_ = "local:" + std::to_string(::getpid());
  std::fflush(nullptr);  // or buffered output would be written once by each process
  const std::string host = this_host();
  for (int k = 1; k < size; ++k) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("socketpair for local rank ") + std::to_string(k) + ": " +
                               std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
      const std::string e = std::strerror(errno);
      ::close(sv[0]);
      ::close(sv[1]);
      throw std::runtime_error("fork of local rank " + std::to_string(k) + ": " + e);
    }
    if (pid == 0) {
      // Child k: drop rank 0's ends of every pair made so far (its own and its elder siblings'). Keeping a copy
      // would hold those connections open after rank 0 dies, and the child would never see the death.
      ::close(sv[0]);
      r.peers_.clear();  // closes them
      r.children_.clear();
      r.rank_ = k;
      r.peers_.push_back(Peer{0, Channel::adopt(sv[1]), host, static_cast<long>(::getppid())});
      return r;
    }
    ::close(sv[1]);  // so that the child's death closes the connection: no other copy of its end remains
    r.children_.push_back(pid);
    r.peers_.push_back(Peer{k, Channel::adopt(sv[0]), host, static_cast<long>(pid)});
  }
  return r;
}

Ranks Ranks::tcp_root(std::uint16_t port, int size, double timeout_s, const std::string& job_key) {
  return tcp_root(RanksListener(port), size, timeout_s, job_key);
}

Ranks Ranks::tcp_root(RanksListener listener, int size, double timeout_s, const std::string& job_key) {
  if (size < 1) throw UsageError("a job needs at least one rank, not " + std::to_string(size));
  Ranks r;
  r.launcher_ = "tcp";
  r.size_ = size;
  r.timeout_s_ = timeout_s;
  r.job_key_ = job_key;
  std::vector<std::optional<Peer>> joined(static_cast<std::size_t>(size));
  std::vector<std::string> joined_from(static_cast<std::size_t>(size));
  std::vector<std::string> refusals;
  int count = 0;
  const Deadline dl(timeout_s);
  while (count < size - 1) {
    throw_if_interrupted();
    if (dl.passed()) {
      std::string missing;
      for (int k = 1; k < size; ++k)
        if (!joined[static_cast<std::size_t>(k)]) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
      std::string msg = "only " + std::to_string(count) + " of " + std::to_string(size - 1) +
                        " members joined rank 0 on port " + std::to_string(listener.port()) + " within " +
                        fmt_s(timeout_s) + "; missing rank(s) " + missing +
                        ": did they start, and can they reach this host and port?";
      for (const auto& f : refusals) msg += "; refused: " + f;
      // Tell those who joined, so they do not wait out their own deadline.
      for (auto& p : joined)
        if (p) send_quietly(p->ch, {{"op", "abort"}, {"reason", msg}});
      throw PeerError(msg);
    }
    // Watch the members who joined too: one that dies while others are still starting ends the job now.
    std::vector<pollfd> fds{{listener.fd(), POLLIN, 0}};
    std::vector<int> who{0};
    for (int k = 1; k < size; ++k)
      if (joined[static_cast<std::size_t>(k)]) {
        fds.push_back({joined[static_cast<std::size_t>(k)]->ch.fd(), POLLIN | POLLRDHUP, 0});
        who.push_back(k);
      }
    const int pr = ::poll(fds.data(), fds.size(), dl.poll_ms());
    if (pr < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (pr <= 0) continue;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      const auto& p = *joined[static_cast<std::size_t>(who[i])];
      if (fds[i].revents && !p.ch.peer_alive()) {
        const std::string msg = "rank " + std::to_string(p.rank) + " (" + p.host + " pid " + std::to_string(p.pid) +
                                ") joined and then died before the job was complete";
        for (auto& q : joined)
          if (q && q->rank != p.rank) send_quietly(q->ch, {{"op", "abort"}, {"reason", msg}});
        throw PeerError(msg);
      }
    }
    if (!(fds[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the connection went away before we took it; nothing to refuse
    set_nodelay(fd);
    Channel ch = Channel::adopt(fd);
    const std::string from = peer_address(fd);
    json h;
    try {
      // A member sends its hello as soon as it connects; a few seconds is plenty, and bounds the time a
      // stray connection (a port scanner, a wrong program) can hold up the others.
      h = ch.receive(dl.finite() ? std::min(std::max(dl.left_s(), 0.001), 5.0) : 5.0, kMaxHelloBytes);
    } catch (const PeerError& e) {
      refusals.push_back("a connection from " + from + " sent no valid hello (" + e.what() + ")");
      continue;
    }
    std::string code;
    const std::string why = detail::judge_hello(h, size, job_key, joined_from, code);
    if (!why.empty()) {
      send_quietly(ch, {{"op", "refused"}, {"code", code}, {"reason", why}});
      refusals.push_back(from + ": " + why);
      continue;
    }
    const int k = h["rank"].get<int>();
    joined_from[static_cast<std::size_t>(k)] =
        str_of(h, "host", "?") + " pid " + std::to_string(int_of(h, "pid", 0)) + " from " + from;
    joined[static_cast<std::size_t>(k)] = Peer{k, std::move(ch), str_of(h, "host", from), int_of(h, "pid", 0)};
    ++count;
  }
  for (int k = 1; k < size; ++k) r.peers_.push_back(std::move(*joined[static_cast<std::size_t>(k)]));
  for (auto& p : r.peers_) {
    try {
      p.ch.send({{"op", "welcome"}, {"size", size}, {"job", job_key}});
    } catch (const PeerError& e) {
      r.fail("rank " + std::to_string(p.rank) + " (" + p.host + ") died before the job started: " + e.what(), p.rank);
    }
  }
  return r;  // the listener closes here: nobody else may join
}

Ranks Ranks::tcp_member(const std::string& host, std::uint16_t port, int rank, int size, double timeout_s,
                        const std::string& job_key) {
  if (size < 2 || rank < 1 || rank >= size)
    throw UsageError("a member's rank must be in 1.." + std::to_string(size - 1) + " (size " + std::to_string(size) +
                     "), not " + std::to_string(rank));
  const Deadline dl(timeout_s);
  Channel ch = Channel::connect_to(host, port, timeout_s);
  std::string code;
  std::string why;
  try {
    why = member_hello(ch, rank, size, job_key, dl, code);
  } catch (const PeerError& e) {
    throw PeerError("rank " + std::to_string(rank) + ": rank 0 at " + host + ":" + std::to_string(port) +
                    " did not complete the job: " + e.what());
  }
  if (!why.empty())
    throw UsageError("rank 0 at " + host + ":" + std::to_string(port) + " refused rank " + std::to_string(rank) + ": " +
                     why);
  return joined_member(std::move(ch), host, 0, rank, size, timeout_s, job_key);
}

Ranks Ranks::joined_member(Channel ch, const std::string& host, long pid, int rank, int size, double timeout_s,
                           const std::string& job_key) {
  Ranks r;
  r.launcher_ = "tcp";
  r.rank_ = rank;
  r.size_ = size;
  r.timeout_s_ = timeout_s;
  r.job_key_ = job_key;
  r.peers_.push_back(Peer{0, std::move(ch), host, pid});
  return r;
}

}  // namespace logpb
