#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "shm/emulation.hpp"
#include "shm/transport.hpp"

using namespace logpb;

TEST_CASE("emulation spec with units") {
  const shm::Emulation e = shm::parse_emulation("os=1.4us,or=2200ns,g=7.6us,L=0.0063ms,C=16");
  CHECK(e.enabled);
  CHECK(e.o_s_ns == Approx(1400));
  CHECK(e.o_r_ns == Approx(2200));
  CHECK(e.g_ns == Approx(7600));
  CHECK(e.L_ns == Approx(6300));
  CHECK(e.capacity == 16);
}

TEST_CASE("bulk emulation keys") {
  const shm::Emulation e = shm::parse_emulation("os=1us,or=1us,g=2us,L=1us,os_per_byte=0.5ns,G=0.25ns");
  CHECK(e.o_s_per_byte_ns == Approx(0.5));
  CHECK(e.G_ns == Approx(0.25));
}

TEST_CASE("today's NIs, g below the overheads, are machines the emulator accepts") {
  // A ConnectX-6 injects every ~5 ns against software overheads of hundreds of ns: the processor is the
  // bottleneck, which the methods must say, not a configuration to refuse.
  const shm::Emulation e = shm::parse_emulation("os=300ns,or=250ns,g=5ns,L=1us");
  CHECK(e.g_ns == Approx(5));
  CHECK(e.o_s_ns == Approx(300));
}

TEST_CASE("impossible or malformed emulations are refused with a reason") {
  CHECK_THROWS_WITH(shm::parse_emulation("os=-1us,g=2us"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(shm::parse_emulation("os=1,g=2us"), Catch::Contains("unit"));
  CHECK_THROWS_WITH(shm::parse_emulation("x=1us"), Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(shm::parse_emulation("os"), Catch::Contains("key=value"));
  CHECK_THROWS_WITH(shm::parse_emulation("g=1us,C=0"), Catch::Contains("capacity"));
  CHECK_THROWS_WITH(shm::parse_emulation(""), Catch::Contains("empty"));
  CHECK_THROWS_AS(shm::parse_emulation("g=abc"), UsageError);
}

TEST_CASE("durations") {
  CHECK(shm::parse_duration_ns("0") == 0);
  CHECK(shm::parse_duration_ns("2s") == Approx(2e9));
  CHECK_THROWS(shm::parse_duration_ns("5 us"));
  CHECK_THROWS(shm::parse_duration_ns("inf us"));
}

// ---- LogP per NI, not per pair (emulation.hpp: "departures from one NI, and arrivals at one NI, are at
// least g apart"). Three ranks over one region, all driven from this thread once attached: the bursts
// are posted in microseconds, then the receivers polled. o and L are 0, so g alone paces the messages.
// Each check is a lower bound the emulator guarantees whatever the load; a per-pair g would finish
// at (M-1) g, half of it, unless this thread lost the core for M g = 20 ms.

namespace {

using Emu = shm::ShmTransport<shm::EmulatedNI>;
constexpr int kBurst = 20;  // messages per sender or per destination (the rings hold them all)
constexpr double kGapNs = 1e6;

const Clock& emu_clock() {
  static const Clock c;
  return c;
}

struct Trio {
  shm::ShmRegion region = shm::ShmRegion::create_anonymous(3, {64, 1 << 16});
  std::unique_ptr<Emu> t[3];
  explicit Trio(const shm::Emulation& e) {
    auto f1 = std::async(std::launch::async,
                         [&] { return std::make_unique<Emu>(region, 1, emu_clock(), e, shm::ShmOptions{}, 5); });
    auto f2 = std::async(std::launch::async,
                         [&] { return std::make_unique<Emu>(region, 2, emu_clock(), e, shm::ShmOptions{}, 5); });
    t[0] = std::make_unique<Emu>(region, 0, emu_clock(), e, shm::ShmOptions{}, 5);
    t[1] = f1.get();
    t[2] = f2.get();
  }
};

void send(Emu& t, int src, int dst, std::uint64_t k) {
  am::Frame f{};
  f.src = static_cast<std::uint16_t>(src);
  f.dst = static_cast<std::uint16_t>(dst);
  f.args[0] = k;
  REQUIRE(t.try_send(f));
}

// Polls until `count` frames came; returns the TSC at the last one and checks each sender's order.
std::uint64_t receive(Emu& t, int count, std::vector<std::uint64_t>& next_from) {
  std::uint64_t last = 0;
  bool in_order = true;
  for (int got = 0; got < count;) {
    got += t.poll([&](const void* p, std::size_t) {
      const auto& f = *static_cast<const am::Frame*>(p);
      in_order = in_order && f.args[0] == next_from[f.src]++;
      last = __rdtsc();
    });
  }
  CHECK(in_order);
  return last;
}

}  // namespace

TEST_CASE("emulated receiver g is per NI: two senders to one receiver arrive at 1/g in all, not 2/g") {
  Trio trio(shm::parse_emulation("g=1ms"));
  const std::uint64_t g = emu_clock().cycles(kGapNs);
  const std::uint64_t t0 = __rdtsc();  // before the first departure
  for (int src : {0, 1})
    for (int k = 0; k < kBurst; ++k) send(*trio.t[src], src, 2, static_cast<std::uint64_t>(k));
  std::vector<std::uint64_t> next(3, 0);
  const std::uint64_t last = receive(*trio.t[2], 2 * kBurst, next);
  CHECK(next[0] == kBurst);
  CHECK(next[1] == kBurst);
  // 2M arrivals at one NI: the last no sooner than (2M - 1) g after the first could depart.
  INFO("last arrival after " << emu_clock().ns(last - t0) / kGapNs << " g");
  CHECK(last - t0 >= (2 * kBurst - 1) * g);
}

TEST_CASE("emulated sender g is per NI: one sender to two receivers departs at 1/g in all, not 2/g") {
  Trio trio(shm::parse_emulation("g=1ms"));
  const std::uint64_t g = emu_clock().cycles(kGapNs);
  const std::uint64_t t0 = __rdtsc();
  for (int k = 0; k < kBurst; ++k)
    for (int dst : {1, 2}) send(*trio.t[0], 0, dst, static_cast<std::uint64_t>(k));
  std::uint64_t last = 0;
  for (int r : {1, 2}) {
    std::vector<std::uint64_t> next(3, 0);
    last = std::max(last, receive(*trio.t[r], kBurst, next));
    CHECK(next[0] == kBurst);
  }
  // 2M departures from one NI, alternating between two rings: the last leaves (2M - 1) g after the first.
  INFO("last arrival after " << emu_clock().ns(last - t0) / kGapNs << " g");
  CHECK(last - t0 >= (2 * kBurst - 1) * g);
}
