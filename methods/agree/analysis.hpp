// Agreement between methods where there is no ground truth: the parameters that the signature (Culler et
// al. 3), Kielmann et al.'s parameterized LogP (3), Bell et al.'s overlap test (4.3) and Doerfler &
// Brightwell's availability loop (2) share, measured on one link, set side by side. Each paper defines its
// figure by what it waits for, so two figures that part are named by those definitions, not averaged:
// the signature's g is a request/reply steady state, Kielmann's g(0) a one-way saturation; an overhead
// that waits for local completion holds what local completion costs on the transport.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace logpb::analysis {

// The default tolerance: figures agree when every pair differs by at most this share of the larger; they
// differ when a pair differs by more even once both 95% intervals are taken off the difference; in between
// (intervals wide enough to cover the difference) the run cannot tell. floor_ns is taken off every
// difference first: the cost of reading the timer (meta.tsc.timer_cost_ns), below which two figures of a
// few ticks (raw shm: 10 against 30 ns on a TSC that steps by 10 ns) cannot be told apart.
inline constexpr double kAgreeTolerance = 0.10;

// The methods agree runs, in the order it runs them and sets their figures side by side; each says which
// figures it shares and how its paper defines them (SharedFigure in methods/descriptor.hpp).
inline constexpr const char* kAgreeMethods[] = {"signature", "kielmann", "overlap", "availability"};
// The parameters they share.
inline constexpr const char* kSharedParameters[] = {"o_s", "o_r", "g", "rtt", "L"};

// records: each method's record by its --bench name (kAgreeMethods),
// each with a "parameters" object ({value_ns, ci95_ns} or null with upper_bound_ns and error); a method
// that is absent is left out. transport: the transport's describe() (its local_completion says what an
// overhead that waits for it includes). Returns, per shared parameter (o_s, o_r, g, rtt, L):
//   {methods: {NAME: {key, value_ns, ci95_ns[, upper_bound_ns, error]}}, verdict, max_rel_diff,
//    max_rel_diff_beyond_ci95, explanation, definitions: {NAME: text}}
// verdict: "agree" (every pair within tolerance), "differ" (beyond it after the intervals; the explanation
// names the definitions that make them differ), "inconclusive" (beyond it, but within it once the
// intervals are taken off: the explanation names the intervals, then the definitions), or "not compared"
// (fewer than two methods observed it; the explanation says which could not and their bounds). Plus
// "tolerance" and "floor_ns".
nlohmann::json agreement(const nlohmann::json& records, const nlohmann::json& transport, double floor_ns,
                         double tolerance = kAgreeTolerance);

// One figure per parameter for the usual table (each with "source" naming the method and key it came
// from), by the methods' table_rank: the signature's o_s, o_r, L and rtt; Kielmann's g(0) for g (the
// one-way gap, nearer LogP's g than a request/reply steady state), else the signature's g.
nlohmann::json agreed_parameters(const nlohmann::json& records);

}  // namespace logpb::analysis
