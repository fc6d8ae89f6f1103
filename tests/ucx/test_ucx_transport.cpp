// What the two UCX datapaths share (ucx/transport.hpp), without UCX running: Ops numbers operations for
// local completion (completed() must never pass an operation still in flight, whatever order their
// callbacks come in), and Inbox::land takes a received message apart (frame, payload into the segment,
// a store's data message landed and never delivered, anything malformed counted and dropped).
// Built only where the UCX transport is (tests/CMakeLists.txt): the header includes ucs/type/status.h.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "ucx/transport.hpp"

using logpb::am::Frame;
using logpb::ucx::Inbox;
using logpb::ucx::kChunk;
using logpb::ucx::Ops;

namespace {

Frame frame(std::uint32_t seq, std::uint32_t bulk_len = 0, std::uint32_t bulk_off = 0) {
  Frame f{};
  f.seq = seq;
  f.magic = logpb::am::kMagic;
  f.bulk_len = bulk_len;
  f.bulk_off = bulk_off;
  f.args[0] = 0x1122334455667788ull + seq;
  return f;
}

std::vector<Frame> drain(Inbox& in) {
  std::vector<Frame> out;
  auto sink = [&](const void* p, std::size_t n) {
    REQUIRE(n == sizeof(Frame));
    Frame f;
    std::memcpy(&f, p, sizeof f);
    out.push_back(f);
  };
  in.drain(sink);
  return out;
}

}  // namespace

TEST_CASE("ucx Ops: operations completed in the call need no slot", "[ucx]") {
  Ops ops(4, 0);
  CHECK(ops.posted() == 0);
  CHECK(ops.completed() == 0);
  for (int i = 0; i < 10; ++i) ops.complete_now();  // more than there are slots: none is taken
  CHECK(ops.posted() == 10);
  CHECK(ops.completed() == 10);
  CHECK(ops.in_flight() == 0);
  CHECK(ops.room());
}

TEST_CASE("ucx Ops: a slot holds its operation until commit and every part is done", "[ucx]") {
  Ops ops(4, 0);
  ops.complete_now();          // 1
  Ops::Slot& s = ops.begin();  // 2
  CHECK(s.op == 2);
  CHECK(ops.posted() == 2);
  CHECK(ops.completed() == 1);
  Ops::add_part(s);  // a callback still due
  Ops::add_part(s);
  Ops::part_done(s);  // one fires inside the call, before commit: the slot must stay
  CHECK(ops.completed() == 1);
  ops.commit(s);
  CHECK(ops.completed() == 1);  // one callback still due
  CHECK(ops.in_flight() == 1);
  Ops::part_done(s);
  CHECK(ops.completed() == 2);
  CHECK(ops.in_flight() == 0);
}

TEST_CASE("ucx Ops: completed() stops at the oldest operation in flight, whatever order they complete in", "[ucx]") {
  Ops ops(8, 0);
  Ops::Slot& a = ops.begin();  // 1
  Ops::add_part(a);
  ops.commit(a);
  ops.complete_now();          // 2: complete, but behind 1
  Ops::Slot& b = ops.begin();  // 3
  Ops::add_part(b);
  ops.commit(b);
  Ops::Slot& c = ops.begin();  // 4
  ops.commit(c);               // no part due: complete at once, but behind 1 and 3
  CHECK(ops.posted() == 4);
  CHECK(ops.completed() == 0);
  Ops::part_done(b);  // 3 completes before 1
  CHECK(ops.completed() == 0);
  CHECK(ops.in_flight() == 3);
  Ops::part_done(a);  // 1 completes: 1..4 all are
  CHECK(ops.completed() == 4);
  CHECK(ops.in_flight() == 0);
  ops.complete_now();
  CHECK(ops.completed() == 5);
}

TEST_CASE("ucx Ops: a full ring has no room; slots are reused once reclaimed", "[ucx]") {
  Ops ops(4, 16);
  std::vector<Ops::Slot*> held;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(ops.room());
    Ops::Slot& s = ops.begin();
    Ops::add_part(s);
    ops.commit(s);
    held.push_back(&s);
  }
  CHECK_FALSE(ops.room());
  CHECK(ops.in_flight() == 4);
  // Each slot owns its own share of the payload buffer.
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) CHECK(std::abs(held[i]->payload - held[j]->payload) >= 16);
  Ops::part_done(*held[1]);  // not the oldest: nothing is freed
  CHECK_FALSE(ops.room());
  Ops::part_done(*held[0]);  // the two oldest go
  CHECK(ops.in_flight() == 2);
  CHECK(ops.completed() == 2);
  // Around the ring many times, operations completing out of order in pairs.
  for (std::uint64_t round = 0; round < 100; ++round) {
    Ops::part_done(*held[3]);
    Ops::part_done(*held[2]);
    REQUIRE(ops.in_flight() == 0);
    REQUIRE(ops.completed() == ops.posted());
    held.clear();
    for (int i = 0; i < 4; ++i) {
      Ops::Slot& s = ops.begin();
      REQUIRE(s.op == ops.posted());
      Ops::add_part(s);
      ops.commit(s);
      held.push_back(&s);
    }
    Ops::part_done(*held[1]);
    Ops::part_done(*held[0]);
    REQUIRE(ops.completed() == ops.posted() - 2);
  }
}

TEST_CASE("ucx Ops: the slot count must be a power of two; no payload buffer when none is asked", "[ucx]") {
  CHECK_THROWS_AS(Ops(0, 0), std::logic_error);
  CHECK_THROWS_AS(Ops(3, 0), std::logic_error);
  Ops ops(2, 0);
  CHECK(ops.slots() == 2);
  CHECK(ops.begin().payload == nullptr);
}

TEST_CASE("ucx Inbox: a frame is queued; a short message is counted and dropped", "[ucx]") {
  std::vector<std::byte> seg(256);
  Inbox in(seg.data(), static_cast<std::uint32_t>(seg.size()));
  const Frame f = frame(5);
  in.land(&f, sizeof f - 1, nullptr, 0);
  in.land(&f, 0, nullptr, 0);
  CHECK(in.empty());
  CHECK(in.counters().short_or_bad == 2);
  CHECK(in.counters().messages == 2);
  in.land(&f, sizeof f, nullptr, 0);
  auto got = drain(in);
  REQUIRE(got.size() == 1);
  CHECK(std::memcmp(&got[0], &f, sizeof f) == 0);
  // A frame whose bytes came some other way (a put before it) carries bulk_len with no payload: queued.
  const Frame after_put = frame(6, 100, 0);
  in.land(&after_put, sizeof after_put, nullptr, 0);
  got = drain(in);
  REQUIRE(got.size() == 1);
  CHECK(got[0].bulk_len == 100);
  CHECK(in.counters().short_or_bad == 2);
}

TEST_CASE("ucx Inbox: a store's payload lands at bulk_off; one whose length is not bulk_len is dropped", "[ucx]") {
  std::vector<std::byte> seg(256, std::byte{0});
  Inbox in(seg.data(), static_cast<std::uint32_t>(seg.size()));
  std::vector<std::byte> data(40);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i + 1);
  const Frame f = frame(1, 40, 16);
  in.land(&f, sizeof f, data.data(), data.size());
  CHECK(std::memcmp(seg.data() + 16, data.data(), 40) == 0);
  CHECK(seg[15] == std::byte{0});
  CHECK(seg[56] == std::byte{0});
  REQUIRE(drain(in).size() == 1);

  std::fill(seg.begin(), seg.end(), std::byte{0});
  const Frame longer = frame(2, 41, 16);  // says 41 bytes, 40 came
  in.land(&longer, sizeof longer, data.data(), data.size());
  const Frame shorter = frame(3, 39, 16);
  in.land(&shorter, sizeof shorter, data.data(), data.size());
  CHECK(in.empty());
  CHECK(in.counters().short_or_bad == 2);
  CHECK(std::all_of(seg.begin(), seg.end(), [](std::byte b) { return b == std::byte{0}; }));
}

TEST_CASE("ucx Inbox: a payload beyond the segment is not copied; the frame goes up to be refused", "[ucx]") {
  std::vector<std::byte> seg(256, std::byte{0});
  Inbox in(seg.data(), static_cast<std::uint32_t>(seg.size()));
  std::vector<std::byte> data(16, std::byte{0xab});
  const Frame edge = frame(1, 16, 240);  // exactly to the end: fits
  in.land(&edge, sizeof edge, data.data(), data.size());
  CHECK(seg[255] == std::byte{0xab});
  CHECK(in.counters().bad_bulk == 0);
  std::fill(seg.begin(), seg.end(), std::byte{0});
  const Frame over = frame(2, 16, 241);             // one byte past the end
  const Frame far = frame(3, 16, 0xfffffff8u);      // off + n wraps around 32 bits
  const Frame chunk_over = frame(kChunk, 16, 250);  // a data message past the end
  in.land(&over, sizeof over, data.data(), data.size());
  in.land(&far, sizeof far, data.data(), data.size());
  in.land(&chunk_over, sizeof chunk_over, data.data(), data.size());
  CHECK(in.counters().bad_bulk == 3);
  CHECK(std::all_of(seg.begin(), seg.end(), [](std::byte b) { return b == std::byte{0}; }));
  const auto got = drain(in);
  REQUIRE(got.size() == 3);  // the edge store and the two bad ones (the AM layer refuses those)
  CHECK(got[1].seq == 2);
  CHECK(got[2].seq == 3);
  CHECK(in.counters().chunks == 1);  // the data message is counted, never queued
}

TEST_CASE("ucx Inbox: a store's data messages land and are never delivered; the frame after them is", "[ucx]") {
  std::vector<std::byte> seg(1024, std::byte{0});
  Inbox in(seg.data(), static_cast<std::uint32_t>(seg.size()));
  std::vector<std::byte> data(600);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7 + 3);
  for (std::uint32_t off = 0; off < 600; off += 200) {
    const Frame c = frame(kChunk, 200, 100 + off);
    in.land(&c, sizeof c, data.data() + off, 200);
  }
  CHECK(in.empty());
  CHECK(in.counters().chunks == 3);
  const Frame f = frame(9, 600, 100);
  in.land(&f, sizeof f, nullptr, 0);  // the frame alone: its bytes came as the data messages
  const auto got = drain(in);
  REQUIRE(got.size() == 1);
  CHECK(got[0].seq == 9);
  CHECK(std::memcmp(seg.data() + 100, data.data(), 600) == 0);
  // A data message without its payload, or with the wrong amount, is malformed.
  const Frame empty_chunk = frame(kChunk, 8, 0);
  in.land(&empty_chunk, sizeof empty_chunk, nullptr, 0);
  in.land(&empty_chunk, sizeof empty_chunk, data.data(), 7);
  CHECK(in.counters().short_or_bad == 2);
  CHECK(in.counters().chunks == 3);
  CHECK(in.empty());
}

TEST_CASE("ucx Inbox: the queue grows when a progress call brings more than it holds, in order", "[ucx]") {
  std::vector<std::byte> seg(64);
  Inbox in(seg.data(), static_cast<std::uint32_t>(seg.size()));
  std::uint32_t next_in = 0, next_out = 0;
  // Drained once first, so the ring's indices stand at 200 of 256 when it fills again: it wraps, then grows.
  for (int i = 0; i < 200; ++i, ++next_in) {
    const Frame f = frame(next_in);
    in.land(&f, sizeof f, nullptr, 0);
  }
  std::vector<Frame> got;
  auto sink = [&](const void* p, std::size_t) {
    Frame f;
    std::memcpy(&f, p, sizeof f);
    got.push_back(f);
  };
  CHECK(in.drain(sink) == 200);
  for (const Frame& f : got) CHECK(f.seq == next_out++);
  got.clear();
  for (int i = 0; i < 1000; ++i, ++next_in) {
    if (i == 500) {
      const Frame local = frame(0xabcd0000u);  // a get's completion, queued behind what arrived
      in.push(local);
    }
    const Frame f = frame(next_in);
    in.land(&f, sizeof f, nullptr, 0);
  }
  CHECK(in.counters().queue_grown == 2);  // 256 -> 512 -> 1024
  in.drain(sink);
  REQUIRE(got.size() == 1001);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (i == 500) {
      CHECK(got[i].seq == 0xabcd0000u);
      continue;
    }
    CHECK(got[i].seq == next_out++);
    CHECK(got[i].args[0] == 0x1122334455667788ull + got[i].seq);
  }
  CHECK(in.empty());
}
