// One link, one LogP table: the signature (Culler et al. 3), Kielmann et al.'s parameterized LogP (3), Bell
// et al.'s overlap test (4.3) and Doerfler & Brightwell's availability loop (2), measured on one link, give
// several quantities that an older table called by two names. Each quantity here has one name and one
// definition, is taken from the method that defines it, and is held against a second method:
//   o_s            the send call alone                              kielmann; signature's o_s >= it
//   o_s_completion the send up to local completion                  availability; overlap's send side
//   o_r            one receive of a message already there           kielmann; availability
//   o_r_stream     per message of a saturated stream                overlap's receive side; <= o_r
//   o_s_plus_o_r   the requester's cost per request/reply pair      signature; kielmann's o_s + o_r
//   g              the one-way gap, g(0) by saturation              kielmann; signature's g >= it
//   rtt, L                                                          signature; kielmann
// Where two methods time the same thing, a difference beyond the tolerance (and beyond both intervals) is a
// failed check with its cause; where the relation is an inequality (a stream amortises its polls, so
// o_r_stream <= o_r), breaking it is. A method whose own checks failed on the figure is "unjudged" there.
#pragma once

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace logpb::methods {

// Figures agree when the pair differs by at most this share of the larger one; they fail when they differ
// by more even once both 95% intervals are taken off; in between (intervals wide enough to cover the
// difference) the run cannot tell ("inconclusive"). floor_ns is taken off every difference first: the cost
// of reading the timer (meta.tsc.timer_cost_ns), below which two figures of a few ticks (raw shm: 10 against
// 30 ns on a TSC that steps by 10 ns) cannot be told apart.
inline constexpr double kAgreeTolerance = 0.10;

// The methods agree runs, in the order it runs them.
inline constexpr const char* kAgreeMethods[] = {"signature", "kielmann", "overlap", "availability", "poll"};
// The quantities of the table, in its order.
inline constexpr const char* kSharedParameters[] = {"o_s",          "o_s_completion", "o_r", "o_r_stream",
                                                    "o_s_plus_o_r", "g",              "rtt", "L"};

// records: each method's record by its --bench name (kAgreeMethods), each with "parameters" ({value_ns,
// ci95_ns} or null with upper_bound_ns and error) and "checks" ([{name, ok, detail[, about]}]: a check with
// "about" concerns only those parameter keys); a method that is absent is left out. transport: the
// transport's describe() (its local_completion says what o_s_completion includes). Returns, per quantity:
//   {meaning, defined_by: {method, key}, cross_check: {method, key, relation}, methods: {NAME: {key, value_ns,
//    ci95_ns[, upper_bound_ns, error][, failed_checks]}}, verdict, max_rel_diff, max_rel_diff_beyond_ci95,
//    explanation, definitions: {NAME: text}}
// verdict: "agree" (the relation holds within the tolerance), "fail" (it is broken beyond the tolerance and
// both intervals; the explanation gives the cause), "inconclusive" (broken, but not beyond the intervals),
// "unjudged" (a method's own checks on the figure failed: they are named), or "not compared" (fewer than two
// figures: which could not be observed, and their bounds). Plus "tolerance" and "floor_ns".
// step_ns: the clock's step (meta.tsc.resolution_ns); a figure within one step of zero is a bound there
// (analysis::within_step), whichever method timed it.
nlohmann::json agreement(const nlohmann::json& records, const nlohmann::json& transport, double floor_ns,
                         double tolerance = kAgreeTolerance, double step_ns = NAN);

// The one table's figures: per quantity, the defining method's figure; where that method could not give a
// value, the cross-check's, named as such. Each has "source" ("kielmann o_r") and "cross_check" (the verdict).
nlohmann::json agreed_parameters(const nlohmann::json& records, const nlohmann::json& agreement_result = {},
                                 double step_ns = NAN);

}  // namespace logpb::methods
