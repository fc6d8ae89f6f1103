// The bootstrap's refusals (faults): the framing refuses another version, a declared length
// beyond its limit and nesting beyond its depth; rank 0 refuses a connection of another framing, a hello
// of another job (the job key is the bootstrap's session) and a hello with oversized fields, and still
// forms its job; a member refuses a welcome from another job's rank 0. And an rkey goes only to the
// bootstrapped peer: strays that were refused never see a byte of a collective, and a member sends a
// rank 0 it refuses nothing but its hello. Real sockets on 127.0.0.1 and socketpairs, threads for the
// ranks; no timing assertions beyond generous deadlines.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "common/bootstrap.hpp"
#include "common/errors.hpp"
#include "common/ranks.hpp"

using namespace logpb;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

// The framing as bootstrap.cpp writes it: magic "LPBS", version, reserved, body length (host order).
std::string header(std::uint16_t version, std::uint32_t length, std::uint32_t magic = 0x4c504253) {
  std::string h(12, '\0');
  std::memcpy(h.data(), &magic, 4);
  std::memcpy(h.data() + 4, &version, 2);
  std::memcpy(h.data() + 8, &length, 4);
  return h;
}
std::string framed(const std::string& body, std::uint16_t version = kBootstrapVersion) {
  return header(version, static_cast<std::uint32_t>(body.size())) + body;
}

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t r = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (r <= 0) return;  // the other side closed: what it refused, it need not read
    done += static_cast<std::size_t>(r);
  }
}

// Everything the other side sends until it closes (or 20 s pass).
std::string read_to_end(int fd) {
  std::string out;
  char buf[4096];
  for (int waited = 0; waited < 20000;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) == 0) {
      waited += 100;
      continue;
    }
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

// A TCP connection to 127.0.0.1:port, as a stray (not a Channel: it may send anything).
int dial(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

std::string hello_body(const std::string& job, const std::string& host = "h") {
  return json{{"op", "hello"}, {"proto", kRanksProtocol}, {"rank", 1}, {"size", 2}, {"job", job}, {"host", host},
              {"pid", 1}}
      .dump();
}

// A socketpair whose one end holds `bytes` and then the end of stream; the other end is a Channel.
struct Fed {
  int sv[2];
  Channel ch;
  explicit Fed(const std::string& bytes, bool close_after = true) : ch(make(bytes, close_after)) {}
  Channel make(const std::string& bytes, bool close_after) {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    write_all(sv[1], bytes);
    if (close_after) ::shutdown(sv[1], SHUT_WR);
    return Channel::adopt(sv[0]);
  }
  ~Fed() { ::close(sv[1]); }
};

std::string refusal_of(Channel& ch, double timeout = 5, std::uint32_t max = kBootstrapMaxBody) {
  try {
    ch.receive(timeout, max);
    return "accepted";
  } catch (const PeerError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("the bootstrap framing refuses another version, an oversized length and deep nesting", "[bootstrap]") {
  {
    Fed f(framed(R"({"op":"hello"})"));
    CHECK(f.ch.receive(5).at("op") == "hello");
  }
  {
    Fed f(framed(R"({"op":"hello"})", kBootstrapVersion + 1));
    CHECK_THAT(refusal_of(f.ch), Contains("protocol version 2") && Contains("same logpbench version"));
  }
  {
    Fed f(header(kBootstrapVersion, 8, 0x12345678) + "{}      ");
    CHECK_THAT(refusal_of(f.ch), Contains("not logpbench"));
  }
  {
    // The length is refused from the header alone: the body is never waited for (the sender keeps the
    // connection open and sends none, so waiting would end in the 30 s deadline's error instead).
    Fed f(header(kBootstrapVersion, kBootstrapMaxBody + 1), false);
    CHECK_THAT(refusal_of(f.ch, 30), Contains("1048577 bytes refused"));
    Fed g(header(kBootstrapVersion, kMaxHelloBytes + 1), false);
    CHECK_THAT(refusal_of(g.ch, 30, kMaxHelloBytes), Contains("refused") && Contains("at most 4096"));
  }
  {
    const std::string deep = std::string(kBootstrapMaxDepth + 1, '[') + std::string(kBootstrapMaxDepth + 1, ']');
    Fed f(framed(R"({"data":)" + deep + "}"));
    CHECK_THAT(refusal_of(f.ch), Contains("nested deeper"));
    const std::string ok = std::string(kBootstrapMaxDepth - 1, '[') + std::string(kBootstrapMaxDepth - 1, ']');
    Fed g(framed(R"({"data":)" + ok + "}"));
    CHECK(g.ch.receive(5).contains("data"));
  }
}

TEST_CASE("rank 0 refuses another framing, another job's hello and oversized fields; its rkey reaches only its member",
          "[bootstrap]") {
  RanksListener listener(0);
  const std::uint16_t port = listener.port();
  auto root =
      std::async(std::launch::async, [&listener] { return Ranks::tcp_root(std::move(listener), 2, 20, "job-R"); });
  struct Stray {
    const char* what;
    std::string bytes;
    const char* answer;  // in what rank 0 sends back before closing ("" : nothing at all)
  };
  const std::vector<Stray> strays = {
      {"another framing version", framed(hello_body("job-R"), kBootstrapVersion + 1), ""},
      {"another job (session)", framed(hello_body("job-Q")), "job key 'job-Q'"},
      {"an oversized host field", framed(hello_body("job-R", std::string(kMaxHelloField + 1, 'h'))),
       "'host' is 513 bytes"},
      {"an oversized job field", framed(hello_body(std::string(kMaxHelloField + 1, 'j'))), "'job' is 513 bytes"},
      {"a hello longer than a hello", framed(hello_body("job-R", std::string(kMaxHelloBytes, 'h'))), ""},
      {"a declared length beyond any message", header(kBootstrapVersion, 0xffffffffu), ""},
  };
  std::vector<std::string> seen;
  for (const auto& s : strays) {
    const int fd = dial(port);
    write_all(fd, s.bytes);
    seen.push_back(read_to_end(fd));  // rank 0 closes a refused connection
    ::close(fd);
  }
  // The real member joins; the job exchanges an address with an rkey, as verbs' connect does.
  const std::string rkey = "segment_rkey_0x5ec7e7";
  auto member =
      std::async(std::launch::async, [port] { return Ranks::tcp_member("127.0.0.1", port, 1, 2, 20, "job-R"); });
  Ranks zero = root.get();
  Ranks one = member.get();
  auto g1 = std::async(std::launch::async, [&one] { return one.allgather(json{{"rank", 1}}); });
  const json all = zero.allgather(json{{"addr", rkey}});
  CHECK(g1.get().at(0).at("addr") == rkey);
  CHECK(all.at(1).at("rank") == 1);
  for (std::size_t i = 0; i < strays.size(); ++i) {
    INFO(strays[i].what << ": rank 0 sent '" << seen[i] << "'");
    CHECK(seen[i].find(rkey) == std::string::npos);
    if (*strays[i].answer) {
      CHECK_THAT(seen[i], Contains("refused") && Contains(strays[i].answer));
    } else {
      CHECK(seen[i].empty());
    }
  }
}

TEST_CASE("a member refuses a rank 0 of another job or framing, and sends it nothing but its hello", "[bootstrap]") {
  struct Fake {
    const char* what;
    std::string answer;   // what the fake rank 0 answers the hello with
    const char* refusal;  // in the member's error
  };
  const std::vector<Fake> fakes = {
      {"a welcome into another job", framed(json{{"op", "welcome"}, {"size", 2}, {"job", "job-Z"}}.dump()),
       "welcome for job 'job-Z'"},
      {"a welcome without a job", framed(json{{"op", "welcome"}, {"size", 2}}.dump()), "welcome for job ''"},
      {"another framing version",
       framed(json{{"op", "welcome"}, {"size", 2}, {"job", "job-M"}}.dump(), kBootstrapVersion + 1),
       "protocol version 2"},
      {"an oversized answer", header(kBootstrapVersion, kMaxHelloBytes + 1), "refused"},
  };
  for (const auto& f : fakes) {
    INFO(f.what);
    RanksListener listener(0);
    const std::uint16_t port = listener.port();
    auto fake = std::async(std::launch::async, [&listener, &f] {
      pollfd p{listener.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1) return std::string("no member connected");
      const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      Channel ch = Channel::adopt(fd);
      const json hello = ch.receive(10);
      write_all(fd, f.answer);
      // Whatever else the member sends before it gives up and closes.
      return hello.dump() + "\n" + read_to_end(fd);
    });
    std::string error;
    try {
      Ranks r = Ranks::tcp_member("127.0.0.1", port, 1, 2, 20, "job-M");
      error = "joined";
    } catch (const std::exception& e) {
      error = e.what();
    }
    CHECK_THAT(error, Contains(f.refusal));
    const std::string sent = fake.get();
    CHECK_THAT(sent, Contains("\"op\":\"hello\""));
    CHECK(sent.substr(sent.find('\n') + 1).empty());  // nothing after the hello
  }
}
