#include "app/modes_common.hpp"

#include <numa.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace logpb::app {
LocalPeer::LocalPeer(const char* who, const std::function<void(Channel&)>& body) : channel_(Channel::adopt(-1)) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair failed");
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) {
    ::close(sv[0]);
    int code = 0;
    try {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // the peer never outlives its client
      Channel ch = Channel::adopt(sv[1]);
      body(ch);
    } catch (const Interrupted&) {
      code = 130;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "logpbench (%s): %s\n", who, e.what());
      code = dynamic_cast<const PeerError*>(&e) ? 3 : (dynamic_cast<const UsageError*>(&e) ? 2 : 1);
    }
    std::fflush(stderr);
    _exit(code);
  }
  ::close(sv[1]);
  channel_ = Channel::adopt(sv[0]);
}

LocalPeer::~LocalPeer() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
}

void LocalPeer::run(const std::function<void()>& client) {
  try {
    client();
  } catch (const PeerError&) {
    int status = 0;
    pid_t r = 0;
    for (int i = 0; i < 100 && (r = waitpid(pid_, &status, WNOHANG)) == 0; ++i) usleep(10000);
    reaped_ = r == pid_;
    if (reaped_ && WIFEXITED(status) && WEXITSTATUS(status) == 2)
      throw UsageError("the peer process refused its configuration (its message is above)");
    throw;
  }
  if (!reaped_) throw std::logic_error("LocalPeer::run: the client did not call finish()");
  if (!WIFEXITED(status_) || WEXITSTATUS(status_) != 0)
    throw PeerError("the local peer ended abnormally (status " + std::to_string(status_) + ")");
}

void LocalPeer::finish(double timeout_s) {
  const int polls = static_cast<int>(timeout_s * 1000);
  pid_t r = 0;
  for (int i = 0; i <= polls && (r = waitpid(pid_, &status_, WNOHANG)) == 0; ++i) usleep(1000);
  if (r != pid_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
    throw PeerError("the local peer did not stop within " + std::to_string(timeout_s) + " s of the quit request");
  }
  reaped_ = true;
}

Channel accept_client(const Options& o, const std::string& transport, nlohmann::json& hello) {
  std::fprintf(stderr, "logpbench server: %s, waiting for a client on TCP port %u\n", transport.c_str(), o.port);
  Channel ch = Channel::accept_one(o.port, 0);
  hello = ch.receive(o.connect_timeout_s);
  if (hello.value("transport", "") != transport)
    throw PeerError("the client asked for transport '" + hello.value("transport", "?") + "', this server runs " + transport);
  return ch;
}

am::EndpointOptions endpoint_options(const Options& o, std::uint32_t session, std::size_t segment_bytes, bool server,
                                     double loss_timeout_s) {
  am::EndpointOptions e;
  e.session = session;
  e.rank = server ? 1 : 0;  // a pair: the client is rank 0, the server rank 1
  e.size = 2;
  e.window = o.window;
  e.credits = o.credits;
  e.stall_timeout_s = server ? 0 : o.timeout_s;
  e.segment_bytes = static_cast<std::uint32_t>(segment_bytes);
  e.loss_timeout_s = o.loss_timeout_s >= 0 ? o.loss_timeout_s : loss_timeout_s;
  return e;
}

std::uint32_t new_session() {
  std::random_device rd;
  std::uint32_t s = 0;
  while (s == 0) s = rd();
  return s;
}

nlohmann::json numa_placement(int cpu, int nic_node) {
  const int cpu_node = numa_available() >= 0 ? numa_node_of_cpu(cpu) : -1;
  if (nic_node >= 0 && cpu_node >= 0 && cpu_node != nic_node)
    std::fprintf(stderr, "logpbench: warning: core %d is on NUMA node %d but the NIC is on node %d: every message "
                         "crosses the interconnect; choose a core of node %d with --cpu\n", cpu, cpu_node, nic_node, nic_node);
  return {{"cpu", cpu}, {"cpu_numa_node", cpu_node}, {"nic_numa_node", nic_node},
          {"local", nic_node < 0 || cpu_node < 0 || cpu_node == nic_node}};
}

}  // namespace logpb::app
