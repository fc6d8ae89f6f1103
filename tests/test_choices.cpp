// common/choices.hpp: one table per word-valued option gives the parse and the recorded name.
#include <catch2/catch.hpp>

#include <string>

#include "common/choices.hpp"

using namespace logpb;

namespace {
enum class Mode { first, second, third, unlisted };
constexpr Choice<Mode> kModes[] = {{Mode::first, "one"}, {Mode::second, "two"}, {Mode::third, "three"}};
constexpr Choice<Mode> kPair[] = {{Mode::first, "one"}, {Mode::second, "two"}};
}  // namespace

TEST_CASE("a word-valued option parses each of its words and names each value back") {
  for (const auto& c : kModes) {
    CHECK(parse_choice(c.word, kModes, "--mode") == c.value);
    CHECK(std::string(choice_name(c.value, kModes)) == c.word);
  }
  CHECK(std::string(choice_name(Mode::unlisted, kModes)) == "one");  // the table's first: the default spelling
}

TEST_CASE("any other word is a UsageError that names the option and lists its words") {
  auto message = [](const std::string& w, std::string_view more = {}) {
    try {
      parse_choice(w, kModes, "--mode", more);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("four") == "--mode must be one, two or three, not 'four'");
  CHECK(message("") == "--mode must be one, two or three, not ''");
  CHECK(message("One") == "--mode must be one, two or three, not 'One'");  // words are exact
  CHECK(message("x", "(one: the first)") == "--mode must be one, two or three (one: the first), not 'x'");
  CHECK(choice_words(kPair) == "one or two");
}
