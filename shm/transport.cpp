// The shm transport's control path: the region's layout, creating and opening it, the ranks' pids and
// pidfds, building the rings of one rank, describe(). The datapath is all in transport.hpp.
#include "shm/transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <ctime>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "common/ranks.hpp"

namespace logpb::shm {
namespace {

constexpr std::uint64_t kShmMagic = 0x6c6f677062736d31ull;  // "logpbsm1"
constexpr std::uint32_t kShmVersion = 3;  // 2: N ranks, a ring per ordered pair; 3: a doorbell per rank
constexpr std::size_t kPage = 4096;

struct Control {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t ranks;
  std::uint32_t ring_slots;
  std::uint32_t segment_bytes;
};
// Then, from kPidsOff, one std::atomic<std::int32_t> per rank: its pid, 0 until it has attached; then,
// from bells_off(N), one 64-byte ShmBell per rank.
constexpr std::size_t kPidsOff = 64;
static_assert(sizeof(Control) <= kPidsOff);
static_assert(sizeof(ShmBell) == 64);

constexpr std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
constexpr std::size_t bells_off(std::size_t n) {
  return round_up(kPidsOff + n * sizeof(std::atomic<std::int32_t>), 64);
}

struct Layout {
  std::size_t ranks, control_bytes, ring_bytes, visible_bytes, pair_bytes, seg_bytes, seg_off, total;
  Layout(std::uint32_t n, std::uint32_t slots, std::uint32_t seg) : ranks(n) {
    control_bytes = round_up(bells_off(n) + n * sizeof(ShmBell), kPage);
    ring_bytes = static_cast<std::size_t>(slots) * sizeof(am::Frame);
    visible_bytes = round_up(slots * sizeof(std::uint64_t), 64);
    pair_bytes = round_up(ring_bytes + visible_bytes + 64, kPage);
    seg_bytes = round_up(seg, kPage);
    seg_off = control_bytes + ranks * (ranks - 1) * pair_bytes;
    total = seg_off + ranks * seg_bytes;
  }
  // Pairs are numbered src * (N-1) + (dst with src left out): no ring from a rank to itself.
  std::size_t pair(std::size_t src, std::size_t dst) const {
    return control_bytes + (src * (ranks - 1) + (dst < src ? dst : dst - 1)) * pair_bytes;
  }
  std::size_t seg(std::size_t rank) const { return seg_off + rank * seg_bytes; }
};

void check_options(int ranks, const ShmOptions& o) {
  if (ranks < 1 || ranks > am::kMaxRanks)
    throw UsageError("shm: a job of " + std::to_string(ranks) + " ranks (1 .. " + std::to_string(am::kMaxRanks) + ")");
  if (o.ring_slots < 8 || o.ring_slots > (1 << 20) || (o.ring_slots & (o.ring_slots - 1)))
    throw UsageError("shm ring size must be a power of two in [8, 1048576], not " + std::to_string(o.ring_slots));
  if (o.segment_bytes < 4096 || o.segment_bytes > (1u << 30)) throw UsageError("shm segment must be 4 KiB .. 1 GiB");
}

Layout layout(int ranks, const ShmOptions& o) {
  return Layout(static_cast<std::uint32_t>(ranks), static_cast<std::uint32_t>(o.ring_slots), o.segment_bytes);
}

void init_control(void* base, int ranks, const ShmOptions& o) {
  auto* c = static_cast<Control*>(base);  // the mapping is zero-filled: every pid reads 0
  c->magic = kShmMagic;
  c->version = kShmVersion;
  c->ranks = static_cast<std::uint32_t>(ranks);
  c->ring_slots = static_cast<std::uint32_t>(o.ring_slots);
  c->segment_bytes = o.segment_bytes;
}

std::string errno_text() { return std::strerror(errno); }

std::string mib(std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

std::string shape(int ranks, const ShmOptions& o) {
  return std::to_string(ranks) + " ranks: " + std::to_string(ranks * (ranks - 1)) + " rings of " +
         std::to_string(o.ring_slots) + " slots (--ring), a segment of " + std::to_string(o.segment_bytes) +
         " bytes (--segment) per rank";
}

const Control* control(const void* base) { return static_cast<const Control*>(base); }

}  // namespace

std::size_t ShmRegion::bytes_for(int ranks, const ShmOptions& opt) {
  check_options(ranks, opt);
  return layout(ranks, opt).total;
}

ShmRegion ShmRegion::create_anonymous(int ranks, const ShmOptions& opt) {
  const std::size_t total = bytes_for(ranks, opt);
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("mmap of the " + mib(total) + " shared region failed: " + errno_text() + " (" +
                             shape(ranks, opt) + ")");
  init_control(p, ranks, opt);
  return ShmRegion(p, total, "");
}

ShmRegion ShmRegion::create_named(const std::string& name, int ranks, const ShmOptions& opt) {
  const std::size_t total = bytes_for(ranks, opt);
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0 && static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize < total)
    throw UsageError("the shm region needs " + mib(total) + " in /dev/shm, which has " +
                     mib(static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize) + " free (" + shape(ranks, opt) +
                     "): lower --ring or --segment");
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw std::runtime_error("shm_open(" + name + ") failed: " + errno_text() + " (check /dev/shm)");
  if (ftruncate(fd, static_cast<off_t>(total)) != 0) {
    const std::string e = errno_text();
    close(fd);
    shm_unlink(name.c_str());
    throw std::runtime_error("ftruncate of " + name + " failed: " + e + " (is /dev/shm full?)");
  }
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    throw std::runtime_error("mmap of " + name + " failed: " + errno_text());
  }
  init_control(p, ranks, opt);
  return ShmRegion(p, total, name);
}

ShmRegion ShmRegion::open_named(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0)
    throw std::runtime_error("shm_open(" + name + ") failed: " + errno_text() +
                             " (every rank of --transport shm must run on one host and see the same /dev/shm)");
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < kPage) {
    close(fd);
    throw std::runtime_error("shared region " + name + " is too small to be a logpbench region");
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throw std::runtime_error("mmap of " + name + " failed: " + errno_text());
  const auto* c = control(p);
  if (c->magic != kShmMagic || c->version != kShmVersion || c->ranks < 1 ||
      Layout(c->ranks, c->ring_slots, c->segment_bytes).total != bytes) {
    munmap(p, bytes);
    throw std::runtime_error("shared region " + name + " has a foreign format or version");
  }
  return ShmRegion(p, bytes, "");
}

ShmRegion::ShmRegion(ShmRegion&& o) noexcept : base_(o.base_), bytes_(o.bytes_), name_(std::move(o.name_)) {
  o.base_ = nullptr;
  o.name_.clear();
}

ShmRegion::~ShmRegion() {
  unlink();
  if (base_) munmap(base_, bytes_);
}

void ShmRegion::unlink() {
  if (!name_.empty()) shm_unlink(name_.c_str());
  name_.clear();
}

int ShmRegion::ranks() const { return static_cast<int>(control(base_)->ranks); }
std::uint32_t ShmRegion::ring_slots() const { return control(base_)->ring_slots; }
std::uint32_t ShmRegion::segment_bytes() const { return control(base_)->segment_bytes; }

ShmRegion::Ring ShmRegion::ring(int src, int dst) const {
  const auto* c = control(base_);
  const Layout l(c->ranks, c->ring_slots, c->segment_bytes);
  if (src < 0 || dst < 0 || src >= ranks() || dst >= ranks() || src == dst)
    throw std::invalid_argument("shm: no ring from rank " + std::to_string(src) + " to " + std::to_string(dst));
  auto* p = static_cast<std::byte*>(base_) + l.pair(static_cast<std::size_t>(src), static_cast<std::size_t>(dst));
  return {reinterpret_cast<am::Frame*>(p), reinterpret_cast<std::uint64_t*>(p + l.ring_bytes),
          reinterpret_cast<std::atomic<std::uint64_t>*>(p + l.ring_bytes + l.visible_bytes)};
}

std::byte* ShmRegion::segment(int rank) const {
  const auto* c = control(base_);
  return static_cast<std::byte*>(base_) +
         Layout(c->ranks, c->ring_slots, c->segment_bytes).seg(static_cast<std::size_t>(rank));
}

std::atomic<std::int32_t>& ShmRegion::pid(int rank) const {
  return reinterpret_cast<std::atomic<std::int32_t>*>(static_cast<std::byte*>(base_) + kPidsOff)[rank];
}

ShmBell& ShmRegion::bell(int rank) const {
  return reinterpret_cast<ShmBell*>(static_cast<std::byte*>(base_) + bells_off(control(base_)->ranks))[rank];
}

// ---- peers ----

ShmPeers::ShmPeers(const ShmRegion& region, int rank) : region_(region), rank_(rank) {
  if (rank < 0 || rank >= region.ranks())
    throw std::invalid_argument("shm: rank " + std::to_string(rank) + " in a region of " +
                                std::to_string(region.ranks()));
  region.pid(rank).store(static_cast<std::int32_t>(getpid()), std::memory_order_release);
}

ShmPeers::~ShmPeers() {
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
}

void ShmPeers::wait(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int r = 0; r < region_.ranks(); ++r) {
    while (region_.pid(r).load(std::memory_order_acquire) == 0) {
      throw_if_interrupted();
      if (std::chrono::steady_clock::now() > deadline)
        throw PeerError("rank " + std::to_string(r) + " did not attach to the shared region within " +
                        std::to_string(timeout_s) + " s");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  open_pidfds();
}

void ShmPeers::open() {
  for (int r = 0; r < region_.ranks(); ++r)
    if (region_.pid(r).load(std::memory_order_acquire) == 0)
      throw PeerError("rank " + std::to_string(r) + " passed the barrier without attaching to the shared region");
  open_pidfds();
}

void ShmPeers::open_pidfds() {
  const int n = region_.ranks();
  pids_.assign(static_cast<std::size_t>(n), 0);
  pidfds_.assign(static_cast<std::size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    pids_[static_cast<std::size_t>(r)] = region_.pid(r).load(std::memory_order_acquire);
    // Ranks that are threads of this process share its pid: nothing to watch.
    if (r != rank_ && pids_[static_cast<std::size_t>(r)] != getpid())
      pidfds_[static_cast<std::size_t>(r)] =
          static_cast<int>(syscall(SYS_pidfd_open, pids_[static_cast<std::size_t>(r)], 0));
  }
}

bool ShmPeers::all_alive() const {
  std::vector<pollfd> fds;
  fds.reserve(pidfds_.size());
  for (std::size_t r = 0; r < pidfds_.size(); ++r) {
    if (pidfds_[r] >= 0) {
      fds.push_back({pidfds_[r], POLLIN, 0});
    } else if (static_cast<int>(r) != rank_ && pids_[r] != getpid()) {
      // No pidfd (a kernel before 5.3): ask whether the pid still exists.
      if (kill(pids_[r], 0) != 0 && errno != EPERM) return false;
    }
  }
  return fds.empty() || ::poll(fds.data(), fds.size(), 0) == 0;
}

// ---- the NIs ----

nlohmann::json Wire::describe() const {
  return {{"ni", "wire"}, {"local_completion", "the slot is written (the receiver reads it in place)"}};
}

EmulatedNI::EmulatedNI(const Clock& clock, const Emulation& e, std::size_t max_in_flight, int rank) : emu_(e) {
  os_ = clock.cycles(e.o_s_ns);
  or_ = clock.cycles(e.o_r_ns);
  g_ = clock.cycles(e.g_ns);
  L_ = clock.cycles(e.L_ns);
  os_per_byte_ = e.o_s_per_byte_ns * clock.hz() * 1e-9;
  or_per_byte_ = e.o_r_per_byte_ns * clock.hz() * 1e-9;
  G_ = e.G_ns * clock.hz() * 1e-9;
  h_ = clock.cycles(e.handler_ns);
  cap_g_ = static_cast<std::uint64_t>(e.capacity) * g_;
  ns_per_cycle_ = 1e9 / clock.hz();
  // Sleeping, nothing in sight: wake at least this often (a dead peer, a signal); a frame's arrival wakes
  // the receiver through its doorbell anyway.
  max_sleep_ = clock.cycles(5e6);
  spin_margin_ = clock.cycles(1e5);
  // Every send not yet complete still holds its ring slot (its receiver consumes it only after it is
  // visible, which is after it completed), so the ring slots of all peers bound them.
  done_at_.assign(std::bit_ceil(std::max<std::size_t>(max_in_flight, 1)), 0);
  signalled_.assign(done_at_.size(), false);
  done_mask_ = done_at_.size() - 1;
  cq_ = clock.cycles(e.cq_ns);
  signal_every_ = static_cast<std::uint64_t>(std::max(1, e.signal_every));
  signal_tracked_ = e.signal_tracked;
  batch_ = std::max(1, e.batch);
  if (e.jitter_ns > 0 && e.L_ns > 0) {
    jitter_L_ = e.jitter_ns * clock.hz() * 1e-9;
    jitter_g_ = jitter_L_ * e.g_ns / e.L_ns;
  }
  // Each rank draws its own sequence from the one seed, so two ranks do not jitter in lockstep.
  rng_ = e.seed * 0x2545f4914f6cdd1dull + static_cast<std::uint64_t>(rank) * 0x9e3779b97f4a7c15ull;
  stall_period_ = clock.cycles(e.stall_period_ns);
  stall_ = clock.cycles(e.stall_ns);
  stall_epoch_ = __rdtsc();
}

void EmulatedNI::set_waiting(bool ranks_share_cores) {
  sleep_ = emu_.waiting == "sleep" || (emu_.waiting == "auto" && ranks_share_cores);
  // A sleep asked for must end on time, not within the default 50 us timer slack.
  if (sleep_) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

void EmulatedNI::sleep_until(std::uint64_t deadline) const noexcept {
  // Sleep to within spin_margin_ of the deadline, then spin: waking up takes tens of microseconds here,
  // which would lengthen every emulated time; the spin costs the core 0.1 ms per wait, against
  // parameters of milliseconds.
  for (;;) {
    const std::uint64_t now = __rdtsc();
    if (now + spin_margin_ >= deadline) break;
    const double ns = static_cast<double>(deadline - spin_margin_ - now) * ns_per_cycle_;
    timespec ts{static_cast<time_t>(ns * 1e-9), static_cast<long>(std::fmod(ns, 1e9))};
    nanosleep(&ts, nullptr);  // a signal ends it early: the loop sleeps the rest
  }
  tsc::spin_until(deadline);
}

void ShmBell::wait(std::uint32_t seen, std::uint64_t cycles, double ns_per_cycle) noexcept {
  const double ns = static_cast<double>(cycles) * ns_per_cycle;
  timespec ts{static_cast<time_t>(ns * 1e-9), static_cast<long>(std::fmod(ns, 1e9))};
  // Not FUTEX_PRIVATE: the word is in a mapping shared between processes.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void ShmBell::ring() noexcept {
  seq.fetch_add(1, std::memory_order_relaxed);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

nlohmann::json EmulatedNI::describe() const {
  return {
      {"ni", "emulated"},
      {"local_completion", "emulated: the NI has sent the last byte (departure + G*n)"},
      {"gap_scope", "per NI: one g for all of a rank's departures and one for all its arrivals"},
      {"waiting",
       sleep_ ? "sleep: the emulated overheads are slept (nanosleep, 1 ns timer slack, the last 100 us spun) and "
                "an idle rank sleeps on a futex doorbell its senders ring, until 100 us before its next "
                "arrival is due; the core is free meanwhile, so ranks share cores honestly at "
                "millisecond-scale parameters"
              : "spin: overheads and waits busy-poll the TSC"},
      {"handler_ns", emu_.handler_ns},
      {"completion",
       {{"latency_ns", emu_.cq_ns},
        {"reported", emu_.signal_every <= 1
                         ? "every send"
                         : "every " + std::to_string(emu_.signal_every) + "th send" +
                               (emu_.signal_tracked ? " and every send the caller tracks (selective signalling)"
                                                    : ", tracked or not (a PMD's tx_rs_thresh)")},
        {"semantics", emu_.cq_ns > 0 ? "after the peer's ACK (emulated: the last byte left + cq)"
                                     : "the NI has sent the last byte"}}},
      {"rx_batch", emu_.batch},
      {"send_queue", emu_.capacity > 0 ? "a send stalls while C messages wait to depart (LogP's capacity constraint)"
                                       : "unbounded (no C given)"}};
}

// ---- the transport's control path ----

template <class NI>
ShmTransport<NI>::ShmTransport(Publish, const ShmRegion& region, int rank, const Clock& clock, const Emulation& emu,
                               const ShmOptions& opt)
    : ni_(clock, emu, static_cast<std::size_t>(std::max(region.ranks() - 1, 1)) * region.ring_slots(), rank),
      peers_(region, rank) {
  if (NI::emulated != emu.enabled)
    throw std::logic_error(std::string("shm: an ") +
                           (NI::emulated ? "emulated NI without an emulation" : "emulation on the real NI"));
  rank_ = rank;
  size_ = region.ranks();
  slots_ = region.ring_slots();
  mask_ = slots_ - 1;
  publish_mask_ = slots_ / 4 - 1;
  segment_bytes_ = region.segment_bytes();
  yield_when_idle_ = opt.yield_when_idle;
  if constexpr (NI::emulated) ni_.set_waiting(opt.yield_when_idle);
  my_bell_ = &region.bell(rank);
  my_segment_ = region.segment(rank);
  tx_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    if (r == rank) continue;
    const auto out = region.ring(rank, r), in = region.ring(r, rank);
    auto& t = tx_[static_cast<std::size_t>(r)];
    t.slots = out.slots;
    t.visible = out.visible;
    t.consumed = out.consumed;
    t.segment = region.segment(r);
    t.bell = &region.bell(r);
    rx_.push_back({in.slots, in.visible, in.consumed, 0, static_cast<std::uint16_t>(r)});
  }
  n_rx_ = static_cast<int>(rx_.size());
}

template <class NI>
ShmTransport<NI>::ShmTransport(const ShmRegion& region, Ranks& ranks, const Clock& clock, const Emulation& emu,
                               const ShmOptions& opt)
    : ShmTransport(Publish{}, region, ranks.rank(), clock, emu, opt) {
  if (ranks.size() != region.ranks())
    throw std::logic_error("shm: a region of " + std::to_string(region.ranks()) + " ranks for a job of " +
                           std::to_string(ranks.size()));
  ranks.barrier();  // every rank has published its pid
  peers_.open();
}

template <class NI>
void ShmTransport<NI>::bad_rank(unsigned dst) const {
  throw std::logic_error("shm: a frame for rank " + std::to_string(dst) + ", not a peer of rank " +
                         std::to_string(rank_) + " in a job of " + std::to_string(size_));
}

template <class NI>
nlohmann::json ShmTransport<NI>::describe() const {
  nlohmann::json j = {{"kind", "shm"},
                      {"ranks", size_},
                      {"rank", rank_},
                      {"rings", "one single-producer/single-consumer ring per ordered pair of ranks"},
                      {"ring_slots", slots_},
                      {"medium_max_bytes", segment_bytes_},
                      {"small_path", "one 64-byte slot; a store is one copy into the peer's segment and one slot"},
                      {"segment_bytes", segment_bytes_},
                      {"yield_when_idle", yield_when_idle_},
                      {"peer_pids", peers_.pids()},
                      {"source_check", "a frame is taken only from the ring of the rank it names as its source"},
                      {"counters", {{"forged_src", forged_src_}}}};
  j.update(ni_.describe());
  j["emulation"] = nullptr;
  if constexpr (NI::emulated) j["emulation"] = ni_.emulation();
  return j;
}

template class ShmTransport<Wire>;
template class ShmTransport<EmulatedNI>;

}  // namespace logpb::shm
