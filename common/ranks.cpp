// The star on rank 0 (common/ranks.hpp): collectives, liveness and placement, whichever backend built it
// (common/rank_sockets.cpp: local and TCP; common/launcher.cpp: mpirun, srun and PMI launchers).
#include "common/ranks.hpp"

#include <numa.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/ranks_impl.hpp"

namespace logpb {

using json = nlohmann::json;
using namespace ranks_impl;

namespace ranks_impl {

std::string str_of(const json& j, const char* key, const std::string& def) {
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

void send_quietly(Channel& ch, const json& m) {
  try {
    ch.send(m);
  } catch (...) {
  }
}

}  // namespace ranks_impl

// --- construction -------------------------------------------------------------------------------------------

Ranks::Ranks(Ranks&&) noexcept = default;
Ranks& Ranks::operator=(Ranks&&) noexcept = default;
Ranks::~Ranks() = default;

Ranks Ranks::single() {
  Ranks r;
  r.launcher_ = "local";
  return r;
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
        for (int i : pending)
          late += (late.empty() ? "" : ", ") + std::to_string(peers_[static_cast<std::size_t>(i)].rank);
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
          fail("rank " + std::to_string(p.rank) + " (" + p.host + " pid " + std::to_string(p.pid) + ") died during " +
                   what + ": " + e.what(),
               p.rank);
        }
        const std::string mop = str_of(m, "op");
        if (mop == "abort") fail(str_of(m, "reason", "rank " + std::to_string(p.rank) + " ended the job"), p.rank);
        if (mop != op || int_of(m, "seq", -1) != static_cast<long long>(seq_))
          fail("rank " + std::to_string(p.rank) + " is in " +
                   op_name(mop, static_cast<std::uint64_t>(int_of(m, "seq", 0))) + " while rank 0 is in " + what +
                   ": the ranks call the collectives in different orders",
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
      fail("rank 0 is in " + op_name(mop, static_cast<std::uint64_t>(int_of(m, "seq", 0))) + " while rank " +
               std::to_string(rank_) + " is in " + what + ": the ranks call the collectives in different orders",
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
      fail("rank " + std::to_string(p.rank) + " (" + p.host + ") died during " + op_name("broadcast", seq_) + ": " +
               e.what(),
           p.rank);
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
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) || !peers_[i].ch.peer_alive())
      dead.push_back(peers_[i].rank);
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
          {"tid", static_cast<long>(::gettid())},  // the measuring thread, whose core the requester watches
          {"cpu", cpu < 0 ? -1 : cpu},
          {"numa_node", node},
          {"cpu_now", ::sched_getcpu()}};
}

}  // namespace logpb
