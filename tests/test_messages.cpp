// The credit rate every one-way method reads its pace off (methods/messages.hpp, credit_rate_ns: the pace
// of the bottleneck stage), on synthetic credit logs whose answer is known.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/clock.hpp"
#include "methods/messages.hpp"

using namespace logpb;
using methods::credit_rate_ns;

namespace {

const Clock& clock_once() {
  static const Clock c(Clock::Options{20, true});
  return c;
}

// What credit_rate_ns reads of an endpoint: its log of credit frames (when, and the credits returned so far).
struct Mark {
  std::uint64_t tsc, returned;
};
struct FakeEndpoint {
  std::vector<Mark> log;
  const std::vector<Mark>& credit_log() const { return log; }
  // A credit frame `after_ns` after the previous one, returning `credits` more.
  FakeEndpoint& frame(double after_ns, std::uint64_t credits) {
    const std::uint64_t t = log.empty() ? 1000000 : log.back().tsc + clock_once().cycles(after_ns);
    const std::uint64_t r = log.empty() ? credits : log.back().returned + credits;
    log.push_back({t, r});
    return *this;
  }
};

}  // namespace

TEST_CASE("credit rate: the bottleneck's pace per message, whatever the credits per frame") {
  const double per_msg = 1000;
  FakeEndpoint ep;
  ep.frame(0, 32);  // the start-up burst: the first window's worth, returned at once
  for (int i = 0; i < 20; ++i) ep.frame(4 * per_msg, 4);
  CHECK(credit_rate_ns(ep, clock_once()) == Approx(per_msg).epsilon(0.01));

  FakeEndpoint mixed;  // 2, then 6 credits per frame at the same pace
  for (int i = 0; i < 10; ++i) mixed.frame(2 * per_msg, 2).frame(6 * per_msg, 6);
  CHECK(credit_rate_ns(mixed, clock_once()) == Approx(per_msg).epsilon(0.01));
}

TEST_CASE("credit rate: an interruption and frames that return nothing stay out") {
  FakeEndpoint ep;
  ep.frame(0, 4);
  for (int i = 0; i < 9; ++i) ep.frame(4000, 4);
  ep.frame(40000, 4);  // the receiver lost its core for 36 us
  ep.frame(100, 0);    // a frame that returned no credit (a repeat): no interval to divide
  for (int i = 0; i < 9; ++i) ep.frame(4000, 4);
  CHECK(credit_rate_ns(ep, clock_once()) == Approx(1000).epsilon(0.01));
}

TEST_CASE("credit rate: NaN with fewer than three intervals that returned credits") {
  FakeEndpoint none;
  CHECK(std::isnan(credit_rate_ns(none, clock_once())));
  FakeEndpoint two;
  two.frame(0, 4).frame(4000, 4).frame(4000, 4);
  CHECK(std::isnan(credit_rate_ns(two, clock_once())));
  FakeEndpoint repeats = two;
  repeats.frame(500, 0).frame(500, 0);  // more frames, but no more credits
  CHECK(std::isnan(credit_rate_ns(repeats, clock_once())));
  FakeEndpoint three = two;
  three.frame(4000, 4);
  CHECK(credit_rate_ns(three, clock_once()) == Approx(1000).epsilon(0.01));
}
