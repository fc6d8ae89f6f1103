// The job's out-of-band runtime: who am I (rank), how many are we (size), and a few collectives
// (allgather, barrier, broadcast) to agree on parameters and addresses before and around a
// measurement. Never on a timed path: every operation is a JSON message over a socket.
//
// Shape (after ucx_perftest's runtime-environment table): a star on rank 0. Rank 0 holds one
// bootstrap Channel (framed, versioned, length-checked JSON, see bootstrap.hpp) per member; each
// member holds one Channel to rank 0. A collective is "everyone sends to rank 0, rank 0 answers
// everyone", so N ranks cost 2(N-1) messages; fine for a bootstrap of tens or hundreds of ranks.
//
// Failure model: every wait has a deadline (timeout() seconds; 0 = no deadline) and wakes at least
// every 200 ms to notice SIGINT/SIGTERM (throw_if_interrupted). A rank that dies closes its socket,
// which rank 0 sees at once while it waits for that rank: rank 0 then throws PeerError naming the
// rank, and first tells every surviving member why ("abort" message), so they throw PeerError with
// the same reason instead of waiting for their deadline. A member whose rank 0 dies sees its one
// socket close and throws PeerError naming rank 0. After any such error the Ranks object is
// "broken": further collectives throw at once with the first reason.
//
// Backends:
//  - single():            size 1, no sockets; collectives are identities.
//  - local(K, timeout):   rank 0 forks K-1 children joined to it by socketpairs (see local()).
//  - tcp_root/tcp_member: rank 0 listens on a TCP port, members connect (`server` / `client HOST`,
//                         or any N-rank job with an explicit address).
//  - from_launcher(opts): rank and size from mpirun / srun / a PMI launcher's environment; the members
//                         find rank 0 through a rendezvous rank 0 announces (see LaunchOptions).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bootstrap.hpp"

namespace logpb {

// The Ranks protocol on top of the Channel framing. Bumped when a message's meaning changes; a member
// and a rank 0 of different versions refuse each other in the hello.
inline constexpr int kRanksProtocol = 1;
// The job key of tcp_root/tcp_member when the caller gives none (`server`/`client` by hand).
inline constexpr const char* kDefaultJobKey = "logpbench";
// A hello and its answer are small: rank 0 reads a connection's first message with this limit (a stray
// connection cannot make it allocate a collective's worth), and refuses a hello whose job key or host
// name is longer than kMaxHelloField.
inline constexpr std::uint32_t kMaxHelloBytes = 4096;
inline constexpr std::size_t kMaxHelloField = 512;

// What a launcher's environment says about this process. Rank and size come from the launcher; the
// job id names the rendezvous file and goes into the job key, so two jobs never join each other.
struct LauncherInfo {
  std::string launcher;  // "mpirun" (Open MPI), "srun" (Slurm), "pmi" (a generic PMI launcher)
  int rank = 0;
  int size = 1;
  std::string job_id;     // Slurm "JOBID.STEPID"; Open MPI's PMIX_NAMESPACE or orte jobid; may be empty for "pmi"
  std::string job_key;    // launcher + cluster + job id + size: what the hello and the rendezvous file carry
  std::string variables;  // which variables were read, for error messages ("SLURM_PROCID=2 SLURM_NTASKS=4 …")
};
// Reads the environment. Precedence: Open MPI (OMPI_COMM_WORLD_RANK/SIZE, PMIX_RANK) before Slurm
// (SLURM_PROCID/SLURM_STEP_NUM_TASKS or SLURM_NTASKS), because `mpirun` inside a Slurm allocation
// inherits the allocation's SLURM_* variables; then PMI_RANK/PMI_SIZE. nullopt when none is set;
// UsageError naming the variables when they are malformed or inconsistent (rank outside 0..size-1,
// a rank without a size, OMPI_COMM_WORLD_RANK and PMIX_RANK disagreeing).
std::optional<LauncherInfo> detect_launcher();

// The rendezvous file, when no HOST:PORT is given: rank 0 listens (port 0: any free port), then writes
// DIR/logpbench-rendezvous-<launcher>-<job id>.json = {job: key, proto, host, addrs: [...], port, pid} under a
// temporary name and renames it (readers never see half a file), and removes it once every member has joined
// (or the job failed to assemble). Members poll for it every 100 ms and try 127.0.0.1 (same host), the host
// name, then each address. Why a file: no PMIx (or MPI) dependency, so any launcher that sets rank and size
// works; on a real cluster the submit directory is on the file system every node shares; on one host any
// directory does. A file left by a crashed job is not trusted: its job key (launcher, Slurm cluster, job id and
// step or Open MPI namespace, size) must be this job's, and even then the hello carries the key, so another
// job's rank 0 that happens to own the port refuses the member, which then keeps waiting for the real file.
struct LaunchOptions {
  // "HOST:PORT" (or "[V6ADDR]:PORT"): rank 0 listens on PORT, members connect to HOST:PORT. Empty: the
  // rendezvous file below.
  std::string rendezvous;
  // The directory, shared by all ranks, for the rendezvous file. Empty: $SLURM_SUBMIT_DIR if set, else the
  // current directory (on a cluster that is normally the shared home or project directory).
  std::string rendezvous_dir;
  // Rank 0's listening port with the rendezvous file; 0 picks a free one (the file says which).
  std::uint16_t port = 0;
  // The host name or address rank 0 writes into the file for members to reach it. Empty: its host name
  // and every non-loopback address of its interfaces; members try them in turn.
  std::string advertise;
  // Overrides the launcher's job id: needed for a bare PMI launcher, whose environment names no job.
  std::string job_id;
  // Deadline for the whole job to assemble, and the default deadline of every collective afterwards.
  double timeout_s = 60;
};

// A TCP listener for rank 0, opened before rank 0 waits for members, so that its port (0 = any free
// port) is known and can be given to members first (a test, a rendezvous file, a forked child).
class RanksListener {
 public:
  // Listens on all addresses (IPv6 dual stack) on `port`; UsageError naming the port when it is taken.
  explicit RanksListener(std::uint16_t port);
  RanksListener(RanksListener&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }
  RanksListener& operator=(RanksListener&& o) noexcept;
  RanksListener(const RanksListener&) = delete;
  ~RanksListener();
  std::uint16_t port() const { return port_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

class Ranks {
 public:
  // Size 1: nothing to connect; allgather returns [mine], barrier returns, broadcast returns its argument.
  static Ranks single();

  // `local -N K`: forks K-1 children and returns in every process, like fork(): rank 0 in the caller,
  // rank r (1..K-1) in child r. Each child is joined to rank 0 by a socketpair (no port, no address, no
  // race for a free port; a child that dies closes its end, which rank 0 sees at once). Call it before
  // starting threads (fork copies only the calling thread). stdio is flushed first so buffered output is
  // not printed twice. Rank 0 must reap the children (child_pids(), waitpid); a child must end with
  // _exit/exit, never return into the caller's rank-0 code path. A child whose rank 0 dies sees its
  // socket close (PeerError) at its next collective or all_alive().
  static Ranks local(int size, double timeout_s);

  // Rank 0 of a TCP job: accepts size-1 members within timeout_s, each announcing (rank, size, job key,
  // protocol) in its hello. Refuses, with the reason sent to that member, a hello from another job (job
  // key), of another protocol, with another size, a rank out of range or a rank already joined; a refusal
  // does not end the job (a stray client or another job's member must not break it), but if the job is
  // still incomplete at the deadline the error lists the refusals. The listening socket is closed once
  // everyone joined.
  static Ranks tcp_root(RanksListener listener, int size, double timeout_s,
                        const std::string& job_key = kDefaultJobKey);
  static Ranks tcp_root(std::uint16_t port, int size, double timeout_s, const std::string& job_key = kDefaultJobKey);
  // A member: connects (retrying while rank 0 is not yet listening), says hello and waits until rank 0 has
  // every member (or refuses it: UsageError with rank 0's reason).
  static Ranks tcp_member(const std::string& host, std::uint16_t port, int rank, int size, double timeout_s,
                          const std::string& job_key = kDefaultJobKey);

  // Launched by mpirun / srun / PMI: see detect_launcher() and LaunchOptions. UsageError when no launcher
  // variables are set.
  static Ranks from_launcher(const LaunchOptions& opts = {});

  Ranks(Ranks&&) noexcept;
  Ranks& operator=(Ranks&&) noexcept;
  Ranks(const Ranks&) = delete;
  ~Ranks();

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string launcher() const { return launcher_; }  // "local", "tcp", "mpirun", "srun", "pmi"
  const std::string& job_key() const { return job_key_; }

  // Deadline of each collective in seconds (0: none, but still aware of deaths and signals). Defaults to
  // the timeout the job was built with. Raise it around a long measurement that ranks wait out in barrier().
  double timeout() const { return timeout_s_; }
  void set_timeout(double s) { timeout_s_ = s; }

  // Entry r of the result is rank r's `mine`; every rank gets the same array of size() entries.
  nlohmann::json allgather(const nlohmann::json& mine);
  void barrier();
  // Rank 0's argument, returned on every rank (members' arguments are ignored).
  nlohmann::json broadcast(const nlohmann::json& from_root);

  // Liveness, non-blocking (one poll() over the sockets), cheap enough to call every few ms. Rank 0: every
  // member's connection is open; a member: rank 0's is. A rank that ended normally after the last
  // collective also counts as gone: end a job with barrier() before ranks exit.
  bool all_alive() const;
  // The ranks whose connection is closed (rank 0: any member; a member: {0} or {}), to say "rank 3 died".
  std::vector<int> dead_ranks() const;

  // Ends the job from this rank with a reason, telling the others (best effort): rank 0 sends it to every
  // member; a member sends it to rank 0, which relays it at its next collective. The others throw
  // PeerError("rank R ended the job: reason"). This object is broken afterwards. Collectives call it when
  // interrupted by a signal (then rethrow Interrupted). A member that had already sent its part of a
  // collective lets rank 0 complete that one; rank 0 reads the abort at its next collective.
  void abort(const std::string& reason);

  // Rank 0 of local(): the children's pids in rank order (index 0 is rank 1). Empty otherwise.
  const std::vector<pid_t>& child_pids() const { return children_; }

  // This rank's placement record for meta.ranks: {rank, host, pid, cpu, numa_node}. cpu < 0 means "not
  // pinned": cpu and numa_node are then -1 and "cpu_now" says where the process runs at this moment.
  // numa_node is libnuma's numa_node_of_cpu (-1 when NUMA is unavailable). Rank 0 builds meta.ranks with
  // allgather(placement(cpu)).
  nlohmann::json placement(int cpu) const;

 private:
  Ranks() = default;
  struct Peer {
    int rank = -1;
    Channel ch;
    std::string host;  // as the peer announced itself, for error messages
    long pid = 0;
  };
  // Rank 0 collects one message of `op` from every member and answers all; a member sends its part (unless
  // expect_reply_only: broadcast) and waits for rank 0's answer. fail() marks the object broken, tells the
  // members (rank 0) and throws PeerError.
  nlohmann::json root_gather(const char* op, const nlohmann::json& mine);
  nlohmann::json member_exchange(const char* op, const nlohmann::json& mine, bool expect_reply_only);
  [[noreturn]] void fail(const std::string& why, int dead_rank);
  void throw_if_broken() const;
  // A member whose hello rank 0 (at `host`, process `pid`) welcomed over `ch`: tcp_member, from_launcher.
  static Ranks joined_member(Channel ch, const std::string& host, long pid, int rank, int size, double timeout_s,
                             const std::string& job_key);

  int rank_ = 0;
  int size_ = 1;
  std::string launcher_ = "local";
  std::string job_key_ = kDefaultJobKey;
  double timeout_s_ = 60;
  std::uint64_t seq_ = 0;    // collectives so far, the same on every rank (checked)
  std::vector<Peer> peers_;  // rank 0: members in rank order; a member: rank 0 alone
  std::vector<pid_t> children_;
  std::string broken_;  // the first failure's reason, once broken
};

// The two judgements of the hello, apart from the sockets around them (tests/fuzz drives them with
// arbitrary messages). judge_hello: rank 0's verdict on a member's hello, "" when welcome, else the
// reason and `code` (protocol, job, size, rank, duplicate); joined_from[r] is non-empty once rank r
// joined. member_hello: a member's side on a connected channel: sends its hello, reads rank 0's answer
// (up to timeout_s), returns "" when welcomed into this job, else the reason and `code`; PeerError when
// rank 0 goes silent, away, or speaks another framing.
namespace detail {
std::string judge_hello(const nlohmann::json& hello, int size, const std::string& key,
                        const std::vector<std::string>& joined_from, std::string& code);
std::string member_hello(Channel& ch, int rank, int size, const std::string& key, double timeout_s, std::string& code);
}  // namespace detail

}  // namespace logpb
