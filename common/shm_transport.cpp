#include "shm_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "errors.hpp"

namespace logpb {
namespace {

constexpr std::uint64_t kShmMagic = 0x6c6f677062736d31ull;  // "logpbsm1"
constexpr std::uint32_t kShmVersion = 1;
constexpr std::size_t kPage = 4096;

struct Control {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t ring_slots;
  std::uint32_t segment_bytes;
  std::uint32_t pad0;
  std::atomic<std::int32_t> pid[2];  // 0 until that side has attached
};
static_assert(sizeof(Control) <= kPage);

constexpr std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

struct Layout {
  std::size_t ring_bytes, visible_bytes, dir_bytes, seg_off, total;
  Layout(std::uint32_t slots, std::uint32_t seg) {
    ring_bytes = slots * sizeof(am::Frame);
    visible_bytes = round_up(slots * sizeof(std::uint64_t), 64);
    dir_bytes = round_up(ring_bytes + visible_bytes + 64, kPage);
    seg_off = kPage + 2 * dir_bytes;
    total = seg_off + 2 * round_up(seg, kPage);
  }
  std::size_t dir(int d) const { return kPage + static_cast<std::size_t>(d) * dir_bytes; }
  std::size_t seg(int side, std::uint32_t seg) const {
    return seg_off + static_cast<std::size_t>(side) * round_up(seg, kPage);
  }
};

void check_options(const ShmOptions& o) {
  if (o.ring_slots < 8 || o.ring_slots > (1 << 20) || (o.ring_slots & (o.ring_slots - 1)))
    throw UsageError("shm ring size must be a power of two in [8, 1048576], not " + std::to_string(o.ring_slots));
  if (o.segment_bytes < 4096 || o.segment_bytes > (1u << 30))
    throw UsageError("shm segment must be 4 KiB .. 1 GiB");
}

void init_control(void* base, const ShmOptions& o) {
  auto* c = new (base) Control{};
  c->magic = kShmMagic;
  c->version = kShmVersion;
  c->ring_slots = static_cast<std::uint32_t>(o.ring_slots);
  c->segment_bytes = o.segment_bytes;
  c->pid[0].store(0);
  c->pid[1].store(0);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

ShmRegion ShmRegion::create_anonymous(const ShmOptions& opt) {
  check_options(opt);
  const Layout l(static_cast<std::uint32_t>(opt.ring_slots), opt.segment_bytes);
  void* p = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap of the shared region failed: " + errno_text());
  init_control(p, opt);
  return ShmRegion(p, l.total, "");
}

ShmRegion ShmRegion::create_named(const std::string& name, const ShmOptions& opt) {
  check_options(opt);
  const Layout l(static_cast<std::uint32_t>(opt.ring_slots), opt.segment_bytes);
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw std::runtime_error("shm_open(" + name + ") failed: " + errno_text() + " (check /dev/shm)");
  if (ftruncate(fd, static_cast<off_t>(l.total)) != 0) {
    const std::string e = errno_text();
    close(fd);
    shm_unlink(name.c_str());
    throw std::runtime_error("ftruncate of " + name + " failed: " + e + " (is /dev/shm full?)");
  }
  void* p = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    throw std::runtime_error("mmap of " + name + " failed: " + errno_text());
  }
  init_control(p, opt);
  return ShmRegion(p, l.total, name);
}

ShmRegion ShmRegion::open_named(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) throw std::runtime_error("shm_open(" + name + ") failed: " + errno_text() +
                                       " (server and client must run on the same host for --transport shm)");
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < kPage) {
    close(fd);
    throw std::runtime_error("shared region " + name + " is too small to be a logpbench region");
  }
  void* p = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throw std::runtime_error("mmap of " + name + " failed: " + errno_text());
  const auto* c = static_cast<const Control*>(p);
  const Layout l(c->ring_slots, c->segment_bytes);
  if (c->magic != kShmMagic || c->version != kShmVersion || l.total != static_cast<std::size_t>(st.st_size)) {
    munmap(p, static_cast<std::size_t>(st.st_size));
    throw std::runtime_error("shared region " + name + " has a foreign format or version");
  }
  return ShmRegion(p, static_cast<std::size_t>(st.st_size), "");
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

ShmTransport::ShmTransport(const ShmRegion& region, int side, const Clock& clock, const Emulation& emu,
                           double attach_timeout_s)
    : side_(side), emu_(emu) {
  if (side != 0 && side != 1) throw std::invalid_argument("shm side must be 0 or 1");
  auto* base = static_cast<std::byte*>(region.base());
  auto* c = reinterpret_cast<Control*>(base);
  const Layout l(c->ring_slots, c->segment_bytes);
  slots_ = c->ring_slots;
  mask_ = slots_ - 1;
  publish_mask_ = slots_ / 4 - 1;
  segment_bytes_ = c->segment_bytes;
  auto dir = [&](int d) { return base + l.dir(d); };
  tx_slots_ = reinterpret_cast<am::Frame*>(dir(side));
  tx_visible_ = reinterpret_cast<std::uint64_t*>(dir(side) + l.ring_bytes);
  tx_consumed_ = reinterpret_cast<std::atomic<std::uint64_t>*>(dir(side) + l.ring_bytes + l.visible_bytes);
  rx_slots_ = reinterpret_cast<const am::Frame*>(dir(1 - side));
  rx_visible_ = reinterpret_cast<const std::uint64_t*>(dir(1 - side) + l.ring_bytes);
  rx_consumed_ = reinterpret_cast<std::atomic<std::uint64_t>*>(dir(1 - side) + l.ring_bytes + l.visible_bytes);
  my_segment_ = base + l.seg(side, segment_bytes_);
  peer_segment_ = base + l.seg(1 - side, segment_bytes_);

  tx_done_at_.assign(slots_, 0);
  if (emu.enabled) {
    emulated_ = true;
    os_cycles_ = clock.cycles(emu.o_s_ns);
    or_cycles_ = clock.cycles(emu.o_r_ns);
    g_cycles_ = clock.cycles(emu.g_ns);
    L_cycles_ = clock.cycles(emu.L_ns);
    os_per_byte_cycles_ = emu.o_s_per_byte_ns * clock.hz() * 1e-9;
    or_per_byte_cycles_ = emu.o_r_per_byte_ns * clock.hz() * 1e-9;
    G_cycles_ = emu.G_ns * clock.hz() * 1e-9;
  }

  c->pid[side].store(static_cast<std::int32_t>(getpid()), std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(attach_timeout_s);
  while ((peer_pid_ = c->pid[1 - side].load(std::memory_order_acquire)) == 0) {
    throw_if_interrupted();
    if (std::chrono::steady_clock::now() > deadline)
      throw PeerError("the peer did not attach to the shared region within " + std::to_string(attach_timeout_s) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // A pidfd turns readable when the peer exits, zombie or not, whoever its parent is.
  peer_pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, peer_pid_, 0));
}

ShmTransport::~ShmTransport() {
  if (peer_pidfd_ >= 0) close(peer_pidfd_);
}

bool ShmTransport::peer_alive() const {
  if (peer_pidfd_ >= 0) {
    pollfd p{peer_pidfd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }
  return kill(peer_pid_, 0) == 0 || errno == EPERM;
}

nlohmann::json ShmTransport::describe() const {
  nlohmann::json j = {{"kind", "shm"},
                      {"ring_slots", slots_},
                      {"local_completion", emulated_ ? "emulated: the NI has sent the last byte (departure + G*n)"
                                                     : "the slot is written (the receiver reads it in place)"},
                      {"medium_max_bytes", segment_bytes_},
                      {"small_path", "one 64-byte slot; a store is one copy into the peer's segment and one slot"},
                      {"segment_bytes", segment_bytes_},
                      {"side", side_},
                      {"peer_pid", peer_pid_}};
  j["emulation"] = emu_;
  return j;
}

}  // namespace logpb
