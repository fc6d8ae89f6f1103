// How a launched job finds itself (common/ranks.hpp): rank and size from the environment mpirun, srun or a
// PMI launcher sets, and rank 0's address from a HOST:PORT or from the rendezvous file it writes into a
// directory every rank shares.
#include "common/ranks.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "common/errors.hpp"
#include "common/ranks_impl.hpp"

namespace logpb {
namespace {

using json = nlohmann::json;
using namespace ranks_impl;

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

// Adds each set variable of `names` to li.variables, for the error messages.
void note(LauncherInfo& li, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = env(n)) li.variables += (li.variables.empty() ? "" : " ") + std::string(n) + "=" + v;
}

void read_open_mpi(LauncherInfo& li, const char* rank, const char* pmix_rank) {
  li.launcher = "mpirun";
  note(li, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid",
            "OMPI_MCA_ess_base_jobid"});
  const char* s = env("OMPI_COMM_WORLD_SIZE");
  if (!s)
    throw UsageError("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not (" + li.variables +
                     "): run under Open MPI's mpirun");
  li.rank = env_int("OMPI_COMM_WORLD_RANK", rank);
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
}

void read_slurm(LauncherInfo& li, const char* rank, const char* pmix_rank, std::string& cluster) {
  li.launcher = "srun";
  note(li, {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_JOB_ID", "SLURM_JOBID",
            "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_CLUSTER_NAME", "PMIX_RANK"});
  // A step's own task count first: `srun -n 4` inside `sbatch -n 8` has 4 tasks.
  const char* sname = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS"
                      : env("SLURM_NTASKS")       ? "SLURM_NTASKS"
                                                  : "SLURM_NPROCS";
  const char* s = env(sname);
  if (!s)
    throw UsageError("SLURM_PROCID is set but none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS, SLURM_NPROCS (" +
                     li.variables + "): run under srun");
  li.rank = env_int("SLURM_PROCID", rank);
  li.size = env_int(sname, s);
  if (pmix_rank && env_int("PMIX_RANK", pmix_rank) != li.rank)
    throw UsageError("SLURM_PROCID and PMIX_RANK disagree (" + li.variables + ")");
  const char* job = env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : env("SLURM_JOBID");
  if (!job) throw UsageError("SLURM_PROCID is set but SLURM_JOB_ID is not (" + li.variables + "): run under srun");
  const char* step = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
  li.job_id = std::string(job) + "." + (step ? step : "batch");
  // Job ids restart per cluster; two clusters sharing a home directory can both have job 1234.
  if (const char* c = env("SLURM_CLUSTER_NAME")) cluster = c;
}

// A generic PMI launcher's environment names no job: the caller supplies one (LaunchOptions::job_id).
void read_pmi(LauncherInfo& li, const char* rank) {
  li.launcher = "pmi";
  note(li, {"PMI_RANK", "PMI_SIZE"});
  const char* s = env("PMI_SIZE");
  if (!s) throw UsageError("PMI_RANK is set but PMI_SIZE is not (" + li.variables + ")");
  li.rank = env_int("PMI_RANK", rank);
  li.size = env_int("PMI_SIZE", s);
}

// --- the rendezvous file ------------------------------------------------------------------------------------

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
// one, never half of it (rename is atomic within a file system, NFS included). No fsync: the file lives for
// one launch, which a machine's crash ends anyway, and NFS's close-to-open consistency already hands the
// data to the server on close; the fsync cost every launch 4 ms before its members could join (ext4, 2-core VM).
void write_rendezvous(const std::filesystem::path& path, const json& body) {
  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const std::string text = body.dump() + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
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

LauncherInfo launcher_or_throw(const LaunchOptions& opts) {
  auto found = detect_launcher();
  if (!found)
    throw UsageError(
        "no launcher found: none of OMPI_COMM_WORLD_RANK/SIZE (mpirun), SLURM_PROCID/SLURM_NTASKS (srun), "
        "PMI_RANK/PMI_SIZE is set; run under mpirun or srun, or use local -N, server or client");
  LauncherInfo li = *found;
  if (!opts.job_id.empty()) {
    li.job_id = opts.job_id;
    li.job_key = li.launcher + "||" + li.job_id + "|" + std::to_string(li.size);
  }
  return li;
}

struct RendezvousFile {
  std::filesystem::path dir, path;
  std::string where;  // " (rendezvous file PATH)", for error messages
};

// Why a file and not PMIx: logpbench stays free of a PMIx (or MPI) dependency, and runs the same under any
// launcher that sets rank and size; on a real cluster the submit directory is on the shared file system every
// node mounts; on one host any directory works.
RendezvousFile rendezvous_file(const LauncherInfo& li, const LaunchOptions& opts) {
  if (li.job_id.empty())
    throw UsageError("launched by a PMI launcher (" + li.variables +
                     ") whose environment names no job: give a job id "
                     "(the same on every rank) or the rendezvous HOST:PORT");
  RendezvousFile rv;
  rv.dir = opts.rendezvous_dir;
  if (rv.dir.empty()) {
    const char* submit = env("SLURM_SUBMIT_DIR");
    rv.dir = submit ? std::filesystem::path(submit) : std::filesystem::current_path();
  }
  rv.path = rv.dir / ("logpbench-rendezvous-" + sanitize(li.launcher + "-" + li.job_id) + ".json");
  rv.where = " (rendezvous file " + rv.path.string() + ")";
  return rv;
}

// Rank 0: listens, says where in the file, and takes the members in.
Ranks root_by_file(const LauncherInfo& li, const LaunchOptions& opts, const RendezvousFile& rv) {
  RanksListener listener(opts.port);
  json body{{"job", li.job_key},
            {"proto", kRanksProtocol},
            {"port", listener.port()},
            {"pid", static_cast<long>(::getpid())}};
  if (!opts.advertise.empty()) {
    body["host"] = opts.advertise;
    body["addrs"] = json::array();
  } else {
    body["host"] = this_host();
    body["addrs"] = interface_addresses();
  }
  write_rendezvous(rv.path, body);
  // Removed once the job has assembled (no member needs it any more) or failed to: a crashed job's file may
  // still be left behind, which is why members check the job key inside.
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{rv.path};
  try {
    return Ranks::tcp_root(std::move(listener), li.size, opts.timeout_s, li.job_key);
  } catch (const PeerError& e) {
    throw PeerError(std::string(e.what()) + rv.where + " (the members look for it there: is " + rv.dir.string() +
                    " shared by every node? launcher: " + li.variables + ")");
  }
}

// Rank 0 as a member reached it: the welcomed channel, and rank 0's host and pid from the file.
struct Rank0 {
  Channel ch;
  std::string host;
  long long pid = 0;
};

// Where the file says rank 0 listens, nearest first; none when it names no valid port.
std::vector<std::string> rank0_addresses(const json& f, const std::string& me) {
  std::vector<std::string> candidates;
  const std::string host = str_of(f, "host");
  if (host == me) candidates.push_back("127.0.0.1");  // same host: loopback always works
  if (!host.empty()) candidates.push_back(host);
  if (f.contains("addrs") && f["addrs"].is_array())
    for (const auto& a : f["addrs"])
      if (a.is_string()) candidates.push_back(a.get<std::string>());
  return candidates;
}

// One address of rank 0: the welcomed channel, or nothing with `last` saying why. Throws when rank 0 ended
// the job, or refused this member for a reason other than being another job's rank 0.
std::optional<Channel> join_rank0_at(const std::string& c, std::uint16_t port, const LauncherInfo& li,
                                     const Deadline& dl, std::string& last) {
  std::string why;
  const int fd = connect_bounded(c, port, std::min(std::max(dl.left_s(), 0.01), 2.0), why);
  if (fd < 0) {
    last = "rank 0's address " + why;
    return std::nullopt;
  }
  Channel ch = Channel::adopt(fd);
  std::string code, refusal;
  try {
    refusal = member_hello(ch, li.rank, li.size, li.job_key, dl, code);
  } catch (const PeerError& e) {
    // Something answered that is not our rank 0 (a stale file's port reused), or rank 0 died or gave up.
    if (std::string(e.what()).find("ended the job") != std::string::npos) throw;
    last = c + ":" + std::to_string(port) + ": " + e.what();
    return std::nullopt;
  }
  if (refusal.empty()) return ch;
  if (code != "job")
    throw UsageError("rank 0 at " + c + ":" + std::to_string(port) + " refused rank " + std::to_string(li.rank) + ": " +
                     refusal + " (launcher: " + li.variables + ")");
  last = c + ":" + std::to_string(port) + " is another job's rank 0";
  return std::nullopt;
}

// One look at the file: rank 0 joined, or nothing yet with `last` saying why.
std::optional<Rank0> try_rendezvous(const RendezvousFile& rv, const LauncherInfo& li, const Deadline& dl,
                                    const std::string& me, std::string& last) {
  std::error_code ec;
  if (!std::filesystem::exists(rv.path, ec)) return std::nullopt;
  const json f = json::parse(slurp(rv.path), nullptr, false);
  if (f.is_discarded() || !f.is_object()) {
    last = "the rendezvous file is not valid JSON (not written by logpbench?)";
    return std::nullopt;
  }
  if (str_of(f, "job") != li.job_key) {
    last = "the rendezvous file belongs to job '" + str_of(f, "job", std::string("?")) + "', not this job '" +
           li.job_key + "' (stale, from an earlier job?): not trusted";
    return std::nullopt;
  }
  const long long port = int_of(f, "port", 0);
  if (port < 1 || port > 65535) {
    last = "the rendezvous file names no valid port";
    return std::nullopt;
  }
  for (const auto& c : rank0_addresses(f, me))
    if (auto ch = join_rank0_at(c, static_cast<std::uint16_t>(port), li, dl, last))
      return Rank0{std::move(*ch), str_of(f, "host"), int_of(f, "pid", 0)};
  return std::nullopt;
}

// Members: wait for the file of this job, then try rank 0's addresses. Anything that fails (no file yet, a
// file from another job, an address that does not answer, another job's rank 0 on that port) means "try
// again shortly" until the deadline: rank 0 may simply not have started yet.
Rank0 find_rank0(const LauncherInfo& li, const LaunchOptions& opts, const RendezvousFile& rv) {
  const Deadline dl(opts.timeout_s);
  std::string last = "no rendezvous file yet";
  const std::string me = this_host();
  // Looks again after an eighth of the time waited so far (1 ms at least, 100 ms at most): the ranks of one
  // launch start together and rank 0 writes its file tens of ms in (after its clock calibration), so a member
  // finds it at most an eighth later than it appeared. Doubling from 1 ms looked at 1, 3, 7, 15, 31 ms: a file
  // written at 16 ms was found at 31 (in a 2-rank launch on a 2-core VM, 7-34 ms from calibration to the job).
  // A rank 0 that is slow to come is still not polled hard.
  const auto t_start = std::chrono::steady_clock::now();
  for (;;) {
    throw_if_interrupted();
    if (dl.passed())
      throw PeerError("rank " + std::to_string(li.rank) + " found no rank 0 of this job within " +
                      fmt_s(opts.timeout_s) + rv.where + ": " + last + ". Is rank 0 running, and is " +
                      rv.dir.string() + " the same shared directory on every node? (or give the rendezvous HOST:PORT)");
    if (auto found = try_rendezvous(rv, li, dl, me, last)) return std::move(*found);
    const auto waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t_start).count();
    ::poll(nullptr, 0, std::min(dl.poll_ms(), static_cast<int>(std::clamp<long long>(waited_ms / 8, 1, 100))));
  }
}

}  // namespace

std::optional<LauncherInfo> detect_launcher() {
  LauncherInfo li;
  const char* pmix_rank = env("PMIX_RANK");
  std::string cluster;
  if (const char* r = env("OMPI_COMM_WORLD_RANK"))
    read_open_mpi(li, r, pmix_rank);
  else if (const char* r = env("SLURM_PROCID"))
    read_slurm(li, r, pmix_rank, cluster);
  else if (const char* r = env("PMI_RANK"))
    read_pmi(li, r);
  else if (pmix_rank)
    throw UsageError(
        "PMIX_RANK=" + std::string(pmix_rank) +
        " is set but no size (OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or PMI_SIZE): logpbench reads rank and size "
        "from the launcher's environment and has no PMIx client");
  else
    return std::nullopt;
  if (li.size < 1 || li.rank >= li.size)
    throw UsageError("the launcher says rank " + std::to_string(li.rank) + " of " + std::to_string(li.size) + " (" +
                     li.variables + "): the rank must be below the size");
  li.job_key = li.launcher + "|" + cluster + "|" + li.job_id + "|" + std::to_string(li.size);
  return li;
}

Ranks Ranks::from_launcher(const LaunchOptions& opts) {
  const LauncherInfo li = launcher_or_throw(opts);
  Ranks r;
  if (li.size == 1) {
    r = single();
    r.timeout_s_ = opts.timeout_s;
    r.job_key_ = li.job_key;
  } else if (!opts.rendezvous.empty()) {
    const auto [host, port] = split_host_port(opts.rendezvous);
    r = li.rank == 0 ? tcp_root(port, li.size, opts.timeout_s, li.job_key)
                     : tcp_member(host, port, li.rank, li.size, opts.timeout_s, li.job_key);
  } else if (const RendezvousFile rv = rendezvous_file(li, opts); li.rank == 0) {
    r = root_by_file(li, opts, rv);
  } else {
    Rank0 found = find_rank0(li, opts, rv);
    r = joined_member(std::move(found.ch), found.host, static_cast<long>(found.pid), li.rank, li.size, opts.timeout_s,
                      li.job_key);
  }
  r.launcher_ = li.launcher;
  return r;
}

}  // namespace logpb
