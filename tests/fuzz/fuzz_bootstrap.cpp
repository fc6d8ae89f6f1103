// libFuzzer target: the bootstrap messages a rank accepts (common/bootstrap.cpp, common/ranks.cpp): the
// framing (magic, version, declared length, JSON body), rank 0's judgement of a member's hello, a member's
// reading of rank 0's answer, and a collective's data as rank 0 relays it.
//
// The bytes travel over a real socket (a socketpair): the fuzzer's input is what the other end wrote
// before closing, so Channel::receive reads it exactly as it would read a peer's. The first input byte
// picks who reads:
//   0: rank 0 of a 4-rank job "job-F", rank 2 already joined, reading a connection's hello;
//   1: member rank 1 of that job, having sent its hello, reading rank 0's answer;
//   2: rank 0 reading a member's part of a collective and relaying it (json::dump), as root_gather does.
//
// What must hold (a failure aborts, reported by libFuzzer as a crash): any refusal is a PeerError (ours,
// with a reason), never a json type_error, length_error or bad_alloc from inside; a hello judged
// welcome names a rank rank 0 can take (1..3, not 2); a member welcomed read this job's key and size.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "common/bootstrap.hpp"
#include "common/errors.hpp"
#include "common/ranks.hpp"

using namespace logpb;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_bootstrap: %s\n", what.c_str());
  std::abort();
}

// Writes everything, then closes the writing side: the reader sees the bytes, then the end of stream.
void write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) fail("the harness could not write its input into the socket");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  ::shutdown(fd, SHUT_WR);
}

// The bytes Channel::send puts on the wire for m.
std::string framed(const nlohmann::json& m) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail("socketpair");
  Channel(Channel::adopt(sv[0])).send(m);  // closes its end
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::recv(sv[1], buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(r));
  ::close(sv[1]);
  return out;
}

// Seeds (tests/fuzz/corpus/bootstrap): a member's real hello (member_hello sends it, and gives up on an
// answer that never comes), rank 0's answers as tcp_root frames them (welcome, refused, abort), and a
// member's part of an allgather carrying a verbs address. Written when LOGPB_FUZZ_SEEDS names a
// directory, before any fuzzing.
void write_seeds(const std::string& dir) {
  auto save = [&](const std::string& name, int mode, const std::string& bytes) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    const std::string all = std::string(1, static_cast<char>(mode)) + bytes;
    if (!f || std::fwrite(all.data(), 1, all.size(), f) != all.size()) fail("cannot write " + dir + "/" + name);
    std::fclose(f);
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail("socketpair");
  {
    Channel member = Channel::adopt(sv[0]);
    std::string code;
    ::shutdown(sv[1], SHUT_WR);  // no answer: member_hello sends its hello and throws
    try {
      detail::member_hello(member, 1, 4, "job-F", 0.01, code);
    } catch (const PeerError&) {
    }
  }
  std::string hello;
  char buf[4096];
  for (ssize_t r; (r = ::recv(sv[1], buf, sizeof buf, 0)) > 0;) hello.append(buf, static_cast<std::size_t>(r));
  ::close(sv[1]);
  save("hello", 0, hello);
  save("welcome", 1, framed({{"op", "welcome"}, {"size", 4}, {"job", "job-F"}}));
  save("refused", 1,
       framed({{"op", "refused"}, {"code", "job"}, {"reason", "job key 'job-F' is not this job's 'job-G'"}}));
  save("abort", 1, framed({{"op", "abort"}, {"reason", "rank 3 died"}}));
  save("allgather", 2,
       framed({{"op", "allgather"},
               {"seq", 1},
               {"data",
                {{"verbs",
                  {{"ud", false},
                   {"to", nlohmann::json::array({{{"qpn", 17},
                                                  {"psn", 4242},
                                                  {"lid", 0},
                                                  {"gid", "fe800000000000000000000000000001"},
                                                  {"segment_addr", 140737352413184ull},
                                                  {"segment_rkey", 1234},
                                                  {"segment_bytes", 1048576},
                                                  {"mtu", 3}}})}}}}}}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("LOGPB_FUZZ_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 200000) return 0;  // the socket buffer holds what one write leaves there
  const int mode = data[0] % 3;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail("socketpair");
  Channel ch = Channel::adopt(sv[0]);
  write_all(sv[1], data + 1, size - 1);
  const std::string key = "job-F";
  try {
    if (mode == 0) {
      const nlohmann::json h = ch.receive(5, kMaxHelloBytes);
      std::vector<std::string> joined(4);
      joined[2] = "host pid 1 from 127.0.0.1:1";
      std::string code;
      const std::string why = detail::judge_hello(h, 4, key, joined, code);
      if (why.empty()) {
        const int r = h.at("rank").get<int>();  // what tcp_root does with a welcome hello
        if (r < 1 || r > 3 || r == 2) fail("a hello of rank " + std::to_string(r) + " was welcome");
        if (h.at("job").get<std::string>() != key) fail("a hello of another job was welcome");
      } else if (code.empty()) {
        fail("a refusal without a code: " + why);
      }
    } else if (mode == 1) {
      std::string code;
      const std::string why = detail::member_hello(ch, 1, 4, key, 5, code);
      if (why.empty()) {
        // Welcomed: the answer must have named this job; the bytes the fuzzer wrote hold the key.
        const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
        if (in.find("\"" + key + "\"") == std::string::npos) fail("welcomed by an answer that does not name this job");
      }
    } else {
      const nlohmann::json m = ch.receive(5);
      const nlohmann::json all = nlohmann::json::array({nullptr, m.contains("data") ? m["data"] : nlohmann::json()});
      const std::string relayed = nlohmann::json{{"op", "allgather"}, {"seq", 1}, {"data", all}}.dump();
      if (relayed.size() < 2) fail("relay");
    }
  } catch (const PeerError&) {
    // A refusal: ours, with its reason.
  } catch (const std::exception& e) {
    ::close(sv[1]);
    fail(std::string("an error that is not a refusal escaped: ") + e.what());
  }
  ::close(sv[1]);
  return 0;
}
