// An option whose value is one of a few words, each naming one value of an enum: one table per option
// gives both directions, the word a command line spells (parse_choice, a UsageError that lists the words for
// anything else) and the word the JSON records (choice_name), so the two can never drift apart.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/errors.hpp"

namespace logpb {

template <class E>
struct Choice {
  E value;
  const char* word;
};

// "a, b or c", the words in the table's order.
template <class E, std::size_t N>
std::string choice_words(const Choice<E> (&table)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) {
    if (i) s += i + 1 == N ? " or " : ", ";
    s += table[i].word;
  }
  return s;
}

// The value the word names; otherwise "OPTION must be a, b or c, not 'x'" (and `more`, where the words need
// a gloss) as a UsageError.
template <class E, std::size_t N>
E parse_choice(const std::string& word, const Choice<E> (&table)[N], const char* option, std::string_view more = {}) {
  for (const auto& c : table)
    if (word == c.word) return c.value;
  std::string m = std::string(option) + " must be " + choice_words(table);
  if (!more.empty()) m += " " + std::string(more);
  throw UsageError(m + ", not '" + word + "'");
}

// The word of a value; the table's first for a value it does not hold (an enum's default spelling).
template <class E, std::size_t N>
const char* choice_name(E value, const Choice<E> (&table)[N]) {
  for (const auto& c : table)
    if (c.value == value) return c.word;
  return table[0].word;
}

}  // namespace logpb
