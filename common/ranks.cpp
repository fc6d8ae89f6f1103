#include "ranks.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <numa.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "errors.hpp"

namespace logpb {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// A deadline that may be absent (timeout <= 0: wait for ever, but still wake to notice signals and deaths).
struct Deadline {
  double timeout_s;
  Clock::time_point at;
  explicit Deadline(double t)
      : timeout_s(t), at(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t > 0 ? t : 0))) {}
  bool finite() const { return timeout_s > 0; }
  bool passed() const { return finite() && Clock::now() >= at; }
  double left_s() const { return std::chrono::duration<double>(at - Clock::now()).count(); }
  // A poll() timeout: never more than 200 ms, so signals are noticed (throw_if_interrupted) promptly.
  int poll_ms() const {
    if (!finite()) return 200;
    const double ms = left_s() * 1e3;
    return ms <= 0 ? 0 : static_cast<int>(std::min(ms + 1, 200.0));
  }
  // For Channel::receive, whose 0 means "for ever": a finite deadline never turns into 0.
  double receive_s() const { return finite() ? std::max(left_s(), 0.001) : 0; }
};

// Fields read from a peer's message or a rendezvous file, tolerant of a wrong type: a foreign or corrupt
// message must give one of our errors, not a json::type_error from deep inside.
std::string str_of(const json& j, const char* key, const std::string& def = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}
long long int_of(const json& j, const char* key, long long def) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<long long>() : def;
}

std::string fmt_s(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST] = {}, serv[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return std::string(host) + ":" + serv;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// A connect that honours a deadline. Channel::connect_to uses a blocking connect(), which towards an address
// that drops SYNs (a firewalled or wrong interface listed in a rendezvous file) would block for the kernel's
// SYN timeout, minutes, whatever our deadline; with several candidate addresses to try we need each attempt
// bounded. Returns -1 and sets `why` when no address answered in time.
int connect_bounded(const std::string& host, std::uint16_t port, double timeout_s, std::string& why) {
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

// Sends, ignoring failures: used to tell others why the job ends, when some of them may be gone already.
void send_quietly(Channel& ch, const json& m) {
  try {
    ch.send(m);
  } catch (...) {
  }
}

json hello_message(int rank, int size, const std::string& key) {
  return {{"op", "hello"}, {"proto", kRanksProtocol}, {"rank", rank}, {"size", size}, {"job", key},
          {"host", this_host()}, {"pid", static_cast<long>(::getpid())}};
}

}  // namespace

// Why rank 0 refuses a hello, or "" when it is welcome. `code` lets a member tell "another job's rank 0"
// (worth trying the rendezvous again: the file may be stale and its port reused) from a real misconfiguration.
std::string detail::judge_hello(const json& h, int size, const std::string& key, const std::vector<std::string>& joined_from,
                                std::string& code) {
  if (str_of(h, "op") != "hello") {
    code = "protocol";
    return "the first message was not a hello";
  }
  if (int_of(h, "proto", -1) != kRanksProtocol) {
    code = "protocol";
    return "ranks protocol " + std::to_string(int_of(h, "proto", -1)) + ", rank 0 speaks " + std::to_string(kRanksProtocol) +
           ": run the same logpbench build on every rank";
  }
  // Fields beyond what a member ever sends are refused before anything quotes them (a host name is at most
  // 255 bytes in DNS; a job key is the launcher's ids, far shorter than kMaxJobKey).
  for (const char* field : {"job", "host"}) {
    const auto it = h.find(field);
    if (it != h.end() && (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxHelloField)) {
      code = "protocol";
      return std::string("the hello's '") + field + "' is " +
             (it->is_string() ? std::to_string(it->get_ref<const std::string&>().size()) + " bytes long" : "not a string") +
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

namespace {

// --- launcher environment ---------------------------------------------------------------------------------

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, const char* value) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (errno || end == value || *end || v < 0 || v > 1 << 24)
    throw UsageError(std::string("the launcher variable ") + name + "='" + value + "' is not a rank or size");
  return static_cast<int>(v);
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return o;
}

// Rank 0's addresses for the rendezvous file: every non-loopback address of an interface that is up. IPv6
// link-local addresses are left out: they need an interface scope that differs between hosts.
std::vector<std::string> interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* ifa = nullptr;
  if (::getifaddrs(&ifa) != 0) return out;
  for (ifaddrs* i = ifa; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      ::inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), buf) == out.end()) out.emplace_back(buf);
  }
  ::freeifaddrs(ifa);
  return out;
}

// Written to a temporary name in the same directory and renamed: a reader sees the old file or the whole new
// one, never half of it (rename is atomic within a file system, NFS included).
void write_rendezvous(const std::filesystem::path& path, const json& body) {
  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const std::string text = body.dump() + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  if (fd >= 0) {
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
  }
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string e = std::strerror(ok ? errno : err);
    ::unlink(tmp.c_str());
    throw UsageError("cannot write the rendezvous file " + path.string() + ": " + e +
                     ": choose a writable directory that every rank shares (the rendezvous directory option)");
  }
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::pair<std::string, std::uint16_t> split_host_port(const std::string& hp) {
  const auto colon = hp.rfind(':');
  if (colon == std::string::npos || colon + 1 == hp.size())
    throw UsageError("rendezvous '" + hp + "' is not HOST:PORT");
  std::string host = hp.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const char* ps = hp.c_str() + colon + 1;
  char* end = nullptr;
  const long port = std::strtol(ps, &end, 10);
  if (*end || port < 1 || port > 65535 || host.empty())
    throw UsageError("rendezvous '" + hp + "' is not HOST:PORT with a port in 1..65535");
  return {host, static_cast<std::uint16_t>(port)};
}

}  // namespace

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

// --- construction -------------------------------------------------------------------------------------------

Ranks::Ranks(Ranks&&) noexcept = default;
Ranks& Ranks::operator=(Ranks&&) noexcept = default;
Ranks::~Ranks() = default;

Ranks Ranks::single() {
  Ranks r;
  r.launcher_ = "local";
  return r;
}

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
      throw std::runtime_error(std::string("socketpair for local rank ") + std::to_string(k) + ": " + std::strerror(errno));
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
      std::string msg = "only " + std::to_string(count) + " of " + std::to_string(size - 1) + " members joined rank 0 on port " +
                        std::to_string(listener.port()) + " within " + fmt_s(timeout_s) + "; missing rank(s) " + missing +
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
    joined_from[static_cast<std::size_t>(k)] = str_of(h, "host", "?") + " pid " + std::to_string(int_of(h, "pid", 0)) + " from " + from;
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

namespace {
// Member side of the hello, on a connected channel. Returns "" when welcomed; otherwise the reason, with
// `code` ("job" when we reached another job's rank 0). Throws PeerError when rank 0 goes silent or away.
std::string member_hello(Channel& ch, int rank, int size, const std::string& key, const Deadline& dl, std::string& code) {
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
  if (op == "abort") throw PeerError("rank 0 ended the job before it started: " + str_of(m, "reason", std::string("?")));
  code = "protocol";
  return "unexpected answer '" + op.substr(0, kMaxHelloField) + "' to the hello";
}
}  // namespace

std::string detail::member_hello(Channel& ch, int rank, int size, const std::string& key, double timeout_s, std::string& code) {
  return logpb::member_hello(ch, rank, size, key, Deadline(timeout_s), code);
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
    throw UsageError("rank 0 at " + host + ":" + std::to_string(port) + " refused rank " + std::to_string(rank) + ": " + why);
  Ranks r;
  r.launcher_ = "tcp";
  r.rank_ = rank;
  r.size_ = size;
  r.timeout_s_ = timeout_s;
  r.job_key_ = job_key;
  r.peers_.push_back(Peer{0, std::move(ch), host, 0});
  return r;
}

// --- launchers ----------------------------------------------------------------------------------------------

std::optional<LauncherInfo> detect_launcher() {
  LauncherInfo li;
  auto note = [&](const char* n) {
    if (const char* v = env(n)) li.variables += (li.variables.empty() ? "" : " ") + std::string(n) + "=" + v;
  };
  const char* pmix_rank = env("PMIX_RANK");
  std::string cluster;
  if (const char* r = env("OMPI_COMM_WORLD_RANK")) {
    li.launcher = "mpirun";
    for (const char* n : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid",
                          "OMPI_MCA_ess_base_jobid"})
      note(n);
    const char* s = env("OMPI_COMM_WORLD_SIZE");
    if (!s) throw UsageError("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not (" + li.variables + "): run under Open MPI's mpirun");
    li.rank = env_int("OMPI_COMM_WORLD_RANK", r);
    li.size = env_int("OMPI_COMM_WORLD_SIZE", s);
    if (pmix_rank && env_int("PMIX_RANK", pmix_rank) != li.rank)
      throw UsageError("OMPI_COMM_WORLD_RANK and PMIX_RANK disagree (" + li.variables + ")");
    // PMIX_NAMESPACE (Open MPI 4 and 5) names the mpirun instance; the orte/ess job id is the older form.
    for (const char* n : {"PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid"})
      if (const char* v = env(n)) {
        li.job_id = v;
        break;
      }
    if (li.job_id.empty())
      throw UsageError("launched by Open MPI (" + li.variables +
                       ") but neither PMIX_NAMESPACE nor OMPI_MCA_orte_ess_jobid is set, so the ranks cannot name a "
                       "rendezvous: give the rendezvous HOST:PORT, or a job id");
  } else if (const char* r = env("SLURM_PROCID")) {
    li.launcher = "srun";
    for (const char* n : {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_JOB_ID", "SLURM_JOBID",
                          "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_CLUSTER_NAME", "PMIX_RANK"})
      note(n);
    // A step's own task count first: `srun -n 4` inside `sbatch -n 8` has 4 tasks.
    const char* sname = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : env("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
    const char* s = env(sname);
    if (!s) throw UsageError("SLURM_PROCID is set but none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS, SLURM_NPROCS (" + li.variables +
                             "): run under srun");
    li.rank = env_int("SLURM_PROCID", r);
    li.size = env_int(sname, s);
    if (pmix_rank && env_int("PMIX_RANK", pmix_rank) != li.rank)
      throw UsageError("SLURM_PROCID and PMIX_RANK disagree (" + li.variables + ")");
    const char* job = env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : env("SLURM_JOBID");
    if (!job) throw UsageError("SLURM_PROCID is set but SLURM_JOB_ID is not (" + li.variables + "): run under srun");
    const char* step = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
    li.job_id = std::string(job) + "." + (step ? step : "batch");
    // Job ids restart per cluster; two clusters sharing a home directory can both have job 1234.
    if (const char* c = env("SLURM_CLUSTER_NAME")) cluster = c;
  } else if (const char* r = env("PMI_RANK")) {
    li.launcher = "pmi";
    for (const char* n : {"PMI_RANK", "PMI_SIZE"}) note(n);
    const char* s = env("PMI_SIZE");
    if (!s) throw UsageError("PMI_RANK is set but PMI_SIZE is not (" + li.variables + ")");
    li.rank = env_int("PMI_RANK", r);
    li.size = env_int("PMI_SIZE", s);
    // A generic PMI launcher's environment names no job: the caller supplies one (LaunchOptions::job_id).
  } else if (pmix_rank) {
    throw UsageError("PMIX_RANK=" + std::string(pmix_rank) +
                     " is set but no size (OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or PMI_SIZE): logpbench reads rank and size "
                     "from the launcher's environment and has no PMIx client");
  } else {
    return std::nullopt;
  }
  if (li.size < 1 || li.rank >= li.size)
    throw UsageError("the launcher says rank " + std::to_string(li.rank) + " of " + std::to_string(li.size) + " (" + li.variables +
                     "): the rank must be below the size");
  li.job_key = li.launcher + "|" + cluster + "|" + li.job_id + "|" + std::to_string(li.size);
  return li;
}

Ranks Ranks::from_launcher(const LaunchOptions& opts) {
  auto found = detect_launcher();
  if (!found)
    throw UsageError("no launcher found: none of OMPI_COMM_WORLD_RANK/SIZE (mpirun), SLURM_PROCID/SLURM_NTASKS (srun), "
                     "PMI_RANK/PMI_SIZE is set; run under mpirun or srun, or use local -N, server or client");
  LauncherInfo li = *found;
  if (!opts.job_id.empty()) {
    li.job_id = opts.job_id;
    li.job_key = li.launcher + "||" + li.job_id + "|" + std::to_string(li.size);
  }
  auto finish = [&](Ranks r) {
    r.launcher_ = li.launcher;
    return r;
  };
  if (li.size == 1) {
    Ranks r = single();
    r.timeout_s_ = opts.timeout_s;
    r.job_key_ = li.job_key;
    return finish(std::move(r));
  }

  if (!opts.rendezvous.empty()) {
    const auto [host, port] = split_host_port(opts.rendezvous);
    if (li.rank == 0) return finish(tcp_root(port, li.size, opts.timeout_s, li.job_key));
    return finish(tcp_member(host, port, li.rank, li.size, opts.timeout_s, li.job_key));
  }

  // The rendezvous file. Why a file and not PMIx: logpbench stays free of a PMIx (or MPI) dependency, and runs
  // the same under any launcher that sets rank and size; on a real cluster the submit directory is on the shared
  // file system every node mounts; on one host any directory works.
  if (li.job_id.empty())
    throw UsageError("launched by a PMI launcher (" + li.variables + ") whose environment names no job: give a job id "
                     "(the same on every rank) or the rendezvous HOST:PORT");
  std::filesystem::path dir = opts.rendezvous_dir;
  if (dir.empty()) {
    const char* submit = env("SLURM_SUBMIT_DIR");
    dir = submit ? std::filesystem::path(submit) : std::filesystem::current_path();
  }
  const auto path = dir / ("logpbench-rendezvous-" + sanitize(li.launcher + "-" + li.job_id) + ".json");
  const std::string where = " (rendezvous file " + path.string() + ")";

  if (li.rank == 0) {
    RanksListener listener(opts.port);
    json body{{"job", li.job_key}, {"proto", kRanksProtocol}, {"port", listener.port()}, {"pid", static_cast<long>(::getpid())}};
    if (!opts.advertise.empty()) {
      body["host"] = opts.advertise;
      body["addrs"] = json::array();
    } else {
      body["host"] = this_host();
      body["addrs"] = interface_addresses();
    }
    write_rendezvous(path, body);
    // Removed once the job has assembled (no member needs it any more) or failed to: a crashed job's file may
    // still be left behind, which is why members check the job key inside.
    struct Remove {
      std::filesystem::path p;
      ~Remove() {
        std::error_code ec;
        std::filesystem::remove(p, ec);
      }
    } remove{path};
    try {
      return finish(tcp_root(std::move(listener), li.size, opts.timeout_s, li.job_key));
    } catch (const PeerError& e) {
      throw PeerError(std::string(e.what()) + where + " (the members look for it there: is " + dir.string() +
                      " shared by every node? launcher: " + li.variables + ")");
    }
  }

  // Members: wait for the file of this job, then try rank 0's addresses. Anything that fails (no file yet, a
  // file from another job, an address that does not answer, another job's rank 0 on that port) means "try
  // again shortly" until the deadline: rank 0 may simply not have started yet.
  const Deadline dl(opts.timeout_s);
  std::string last = "no rendezvous file yet";
  const std::string me = this_host();
  // Looks again after 1 ms, then twice as long each time up to 100 ms: the ranks of one launch start
  // together and rank 0 writes its file tens of ms in (after its clock calibration), so a fixed 100 ms
  // wait cost every launched job most of 100 ms; a rank 0 that is slow to come is still not polled hard.
  int wait_ms = 1;
  for (;;) {
    throw_if_interrupted();
    if (dl.passed())
      throw PeerError("rank " + std::to_string(li.rank) + " found no rank 0 of this job within " + fmt_s(opts.timeout_s) + where +
                      ": " + last + ". Is rank 0 running, and is " + dir.string() +
                      " the same shared directory on every node? (or give the rendezvous HOST:PORT)");
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      const json f = json::parse(slurp(path), nullptr, false);
      if (f.is_discarded() || !f.is_object()) {
        last = "the rendezvous file is not valid JSON (not written by logpbench?)";
      } else if (str_of(f, "job") != li.job_key) {
        last = "the rendezvous file belongs to job '" + str_of(f, "job", std::string("?")) + "', not this job '" + li.job_key +
               "' (stale, from an earlier job?): not trusted";
      } else {
        std::vector<std::string> candidates;
        const std::string host = str_of(f, "host");
        if (host == me) candidates.push_back("127.0.0.1");  // same host: loopback always works
        if (!host.empty()) candidates.push_back(host);
        if (f.contains("addrs") && f["addrs"].is_array())
          for (const auto& a : f["addrs"])
            if (a.is_string()) candidates.push_back(a.get<std::string>());
        const long long port = int_of(f, "port", 0);
        if (port < 1 || port > 65535) {
          candidates.clear();
          last = "the rendezvous file names no valid port";
        }
        for (const auto& c : candidates) {
          std::string why;
          const int fd = connect_bounded(c, static_cast<std::uint16_t>(port), std::min(std::max(dl.left_s(), 0.01), 2.0), why);
          if (fd < 0) {
            last = "rank 0's address " + why;
            continue;
          }
          Channel ch = Channel::adopt(fd);
          std::string code, refusal;
          try {
            refusal = member_hello(ch, li.rank, li.size, li.job_key, dl, code);
          } catch (const PeerError& e) {
            // Something answered that is not our rank 0 (a stale file's port reused), or rank 0 died or gave up.
            if (std::string(e.what()).find("ended the job") != std::string::npos) throw;
            last = c + ":" + std::to_string(port) + ": " + e.what();
            continue;
          }
          if (refusal.empty()) {
            Ranks r;
            r.rank_ = li.rank;
            r.size_ = li.size;
            r.timeout_s_ = opts.timeout_s;
            r.job_key_ = li.job_key;
            r.peers_.push_back(Peer{0, std::move(ch), host, int_of(f, "pid", 0)});
            return finish(std::move(r));
          }
          if (code != "job")
            throw UsageError("rank 0 at " + c + ":" + std::to_string(port) + " refused rank " + std::to_string(li.rank) + ": " +
                             refusal + " (launcher: " + li.variables + ")");
          last = c + ":" + std::to_string(port) + " is another job's rank 0";
        }
      }
    }
    ::poll(nullptr, 0, std::min(dl.poll_ms(), wait_ms));
    wait_ms = std::min(2 * wait_ms, 100);
  }
}

// --- collectives --------------------------------------------------------------------------------------------

void Ranks::throw_if_broken() const {
  if (!broken_.empty()) throw PeerError("the job has ended: " + broken_);
}

void Ranks::fail(const std::string& why, int dead_rank) {
  if (broken_.empty()) broken_ = why;
  if (rank_ == 0)
    for (auto& p : peers_)
      if (p.rank != dead_rank) send_quietly(p.ch, {{"op", "abort"}, {"reason", why}});
  throw PeerError(why);
}

void Ranks::abort(const std::string& reason) {
  if (broken_.empty()) broken_ = reason;
  const std::string why = "rank " + std::to_string(rank_) + " ended the job: " + reason;
  for (auto& p : peers_) send_quietly(p.ch, {{"op", "abort"}, {"reason", why}});
}

namespace {
std::string op_name(const std::string& op, std::uint64_t seq) { return op + " #" + std::to_string(seq); }
}  // namespace

json Ranks::root_gather(const char* op, const json& mine) {
  const std::string what = op_name(op, seq_);
  json all = json::array();
  all.push_back(mine);
  for (int k = 1; k < size_; ++k) all.push_back(nullptr);
  std::vector<int> pending;  // indices into peers_
  for (std::size_t i = 0; i < peers_.size(); ++i) pending.push_back(static_cast<int>(i));
  const Deadline dl(timeout_s_);
  try {
    while (!pending.empty()) {
      throw_if_interrupted();
      if (dl.passed()) {
        std::string late;
        for (int i : pending) late += (late.empty() ? "" : ", ") + std::to_string(peers_[static_cast<std::size_t>(i)].rank);
        fail("rank(s) " + late + " did not reach " + what + " within " + fmt_s(timeout_s_) +
                 " (alive but slow or stuck; raise the timeout if a rank legitimately works that long)",
             -1);
      }
      // One poll over every rank still missing: whichever dies first is noticed at once, whatever the order.
      std::vector<pollfd> fds;
      for (int i : pending) fds.push_back({peers_[static_cast<std::size_t>(i)].ch.fd(), POLLIN | POLLRDHUP, 0});
      const int pr = ::poll(fds.data(), fds.size(), dl.poll_ms());
      if (pr < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      if (pr <= 0) continue;
      std::vector<int> still;
      for (std::size_t j = 0; j < fds.size(); ++j) {
        auto& p = peers_[static_cast<std::size_t>(pending[j])];
        if (!fds[j].revents) {
          still.push_back(pending[j]);
          continue;
        }
        json m;
        try {
          m = p.ch.receive(dl.receive_s());
        } catch (const PeerError& e) {
          fail("rank " + std::to_string(p.rank) + " (" + p.host + " pid " + std::to_string(p.pid) + ") died during " + what + ": " +
                   e.what(),
               p.rank);
        }
        const std::string mop = str_of(m, "op");
        if (mop == "abort") fail(str_of(m, "reason", "rank " + std::to_string(p.rank) + " ended the job"), p.rank);
        if (mop != op || int_of(m, "seq", -1) != static_cast<long long>(seq_))
          fail("rank " + std::to_string(p.rank) + " is in " + op_name(mop, static_cast<std::uint64_t>(int_of(m, "seq", 0))) + " while rank 0 is in " +
                   what + ": the ranks call the collectives in different orders",
               -1);
        all[static_cast<std::size_t>(p.rank)] = m.contains("data") ? m["data"] : json();
      }
      pending.swap(still);
    }
  } catch (const Interrupted&) {
    abort("interrupted by signal");
    throw;
  }
  // Barrier answers carry no data: only the fact that everyone arrived.
  const json reply{{"op", op}, {"seq", seq_}, {"data", std::string(op) == "barrier" ? json() : all}};
  for (auto& p : peers_) {
    try {
      p.ch.send(reply);
    } catch (const PeerError& e) {
      fail("rank " + std::to_string(p.rank) + " (" + p.host + ") died during " + what + ": " + e.what(), p.rank);
    }
  }
  return all;
}

json Ranks::member_exchange(const char* op, const json& mine, bool expect_reply_only) {
  const std::string what = op_name(op, seq_);
  auto& root = peers_.front();
  try {
    if (!expect_reply_only) {
      try {
        root.ch.send({{"op", op}, {"seq", seq_}, {"data", mine}});
      } catch (const PeerError& e) {
        fail("rank 0 (" + root.host + ") died before " + what + ": " + e.what(), 0);
      }
    }
    json m;
    try {
      m = root.ch.receive(timeout_s_);
    } catch (const PeerError& e) {
      if (!root.ch.peer_alive()) fail("rank 0 (" + root.host + ") died during " + what + ": " + e.what(), 0);
      fail("rank 0 did not complete " + what + " within " + fmt_s(timeout_s_) +
               " (some rank slow or stuck? raise the timeout if a rank legitimately works that long)",
           -1);
    }
    const std::string mop = str_of(m, "op");
    if (mop == "abort") fail(str_of(m, "reason", std::string("rank 0 ended the job")), -1);
    if (mop != op || int_of(m, "seq", -1) != static_cast<long long>(seq_))
      fail("rank 0 is in " + op_name(mop, static_cast<std::uint64_t>(int_of(m, "seq", 0))) + " while rank " + std::to_string(rank_) + " is in " +
               what + ": the ranks call the collectives in different orders",
           -1);
    return m.contains("data") ? m["data"] : json();
  } catch (const Interrupted&) {
    abort("interrupted by signal");
    throw;
  }
}

json Ranks::allgather(const json& mine) {
  throw_if_broken();
  ++seq_;
  if (size_ == 1) return json::array({mine});
  return rank_ == 0 ? root_gather("allgather", mine) : member_exchange("allgather", mine, false);
}

void Ranks::barrier() {
  throw_if_broken();
  ++seq_;
  if (size_ == 1) return;
  if (rank_ == 0)
    root_gather("barrier", nullptr);
  else
    member_exchange("barrier", nullptr, false);
}

json Ranks::broadcast(const json& from_root) {
  throw_if_broken();
  ++seq_;
  if (size_ == 1) return from_root;
  if (rank_ != 0) return member_exchange("broadcast", nullptr, true);
  // A send to a closed socket may still succeed (the kernel buffers it), so look first: a dead member is
  // reported now, by rank, rather than at the next collective.
  for (int d : dead_ranks()) fail("rank " + std::to_string(d) + " died before " + op_name("broadcast", seq_), d);
  const json m{{"op", "broadcast"}, {"seq", seq_}, {"data", from_root}};
  for (auto& p : peers_) {
    try {
      p.ch.send(m);
    } catch (const PeerError& e) {
      fail("rank " + std::to_string(p.rank) + " (" + p.host + ") died during " + op_name("broadcast", seq_) + ": " + e.what(), p.rank);
    }
  }
  return from_root;
}

// --- liveness -------------------------------------------------------------------------------------------------

std::vector<int> Ranks::dead_ranks() const {
  std::vector<int> dead;
  if (peers_.empty()) return dead;
  std::vector<pollfd> fds;
  for (const auto& p : peers_) fds.push_back({p.ch.fd(), POLLIN | POLLRDHUP, 0});
  if (::poll(fds.data(), fds.size(), 0) <= 0) return dead;  // nothing happened on any: all open
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    // Readable alone may be an unread message (alive) or an end of stream (dead): peer_alive peeks.
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) || !peers_[i].ch.peer_alive()) dead.push_back(peers_[i].rank);
  }
  return dead;
}

bool Ranks::all_alive() const { return dead_ranks().empty(); }

// --- placement ------------------------------------------------------------------------------------------------

json Ranks::placement(int cpu) const {
  const int node = (cpu >= 0 && numa_available() >= 0) ? numa_node_of_cpu(cpu) : -1;
  return {{"rank", rank_},
          {"host", this_host()},
          {"pid", static_cast<long>(::getpid())},
          {"cpu", cpu < 0 ? -1 : cpu},
          {"numa_node", node},
          {"cpu_now", ::sched_getcpu()}};
}

}  // namespace logpb
