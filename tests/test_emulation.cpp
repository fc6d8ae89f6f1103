#include <catch2/catch.hpp>

#include "common/emulation.hpp"
#include "common/errors.hpp"

using namespace logpb;

TEST_CASE("emulation spec with units") {
  const Emulation e = parse_emulation("os=1.4us,or=2200ns,g=7.6us,L=0.0063ms,C=16");
  CHECK(e.enabled);
  CHECK(e.o_s_ns == Approx(1400));
  CHECK(e.o_r_ns == Approx(2200));
  CHECK(e.g_ns == Approx(7600));
  CHECK(e.L_ns == Approx(6300));
  CHECK(e.capacity == 16);
}

TEST_CASE("bulk emulation keys") {
  const Emulation e = parse_emulation("os=1us,or=1us,g=2us,L=1us,os_per_byte=0.5ns,G=0.25ns");
  CHECK(e.o_s_per_byte_ns == Approx(0.5));
  CHECK(e.G_ns == Approx(0.25));
}

TEST_CASE("today's NIs, g below the overheads, are machines the emulator accepts") {
  // A ConnectX-6 injects every ~5 ns against software overheads of hundreds of ns: the processor is the
  // bottleneck, which the methods must say, not a configuration to refuse.
  const Emulation e = parse_emulation("os=300ns,or=250ns,g=5ns,L=1us");
  CHECK(e.g_ns == Approx(5));
  CHECK(e.o_s_ns == Approx(300));
}

TEST_CASE("impossible or malformed emulations are refused with a reason") {
  CHECK_THROWS_WITH(parse_emulation("os=-1us,g=2us"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_emulation("os=1,g=2us"), Catch::Contains("unit"));
  CHECK_THROWS_WITH(parse_emulation("x=1us"), Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(parse_emulation("os"), Catch::Contains("key=value"));
  CHECK_THROWS_WITH(parse_emulation("g=1us,C=0"), Catch::Contains("capacity"));
  CHECK_THROWS_WITH(parse_emulation(""), Catch::Contains("empty"));
  CHECK_THROWS_AS(parse_emulation("g=abc"), UsageError);
}

TEST_CASE("durations") {
  CHECK(parse_duration_ns("0") == 0);
  CHECK(parse_duration_ns("2s") == Approx(2e9));
  CHECK_THROWS(parse_duration_ns("5 us"));
  CHECK_THROWS(parse_duration_ns("inf us"));
}
