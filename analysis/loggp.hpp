// Fits over message size for the methods beyond the signature: Bell et al.'s g and G with the
// 'large message' crossover, Culler et al.'s naive T_0 + n / R_inf bulk model, and Kielmann et al.'s
// parameterized LogP converted to LogP/LogGP by their Table 1.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/signature_fit.hpp"

namespace logpb::analysis {

struct GapFit {
  Param g, G;                       // G in ns per byte
  Param crossover;                  // bytes where G*n equals g (Bell's 'large message' size), in value_ns as bytes
  std::vector<double> large_sizes;  // the sizes the G fit used
};
// sizes ascending; gap[i] the per-message time at sizes[i] (ns); ci[i] its half-width (may be NaN).
GapFit fit_gap(const std::vector<double>& sizes, const std::vector<double>& gap, const std::vector<double>& ci);

// Which stage a one-way flood saw (Bell et al. 4.2-4.3): its time per message is max(g_NI, o_s, o_r)
// (+ G n), so with the overheads from the overlap test of the same size it says which one it was. The
// NI's own gap is reported only when neither overhead reaches the flood's time; otherwise it is hidden
// and bounded by it.
struct Bottleneck {
  std::string stage;  // "network interface", "send overhead", "receive overhead", or "" (unknown)
  Param ni;           // the NI's gap at this size: valid, or hidden with upper_bound
};
// What else can hold a flood back besides g, o_s and o_r: its queue of q sends waiting for local
// completion (Bell et al. 4.2), and the AM layer's one-way credits, returned once per half of them
// after a round trip. Unknown fields (0, NaN) leave that stage untested.
struct FloodLimits {
  bool queue_limited = false;  // the time per message still fell when q was doubled at the deepest q tried
  bool queue_adapted = false;  // q was doubled until it stopped limiting (then only queue_limited names it)
  int queue_depth = 0;
  double completion_ns = NAN;  // one send's local completion time
  int credits = 0;             // one-way credits (the AM layer's C)
  double rtt_ns = NAN;         // the round trip a credit frame takes back
  // The flood's mean rate with the hosts' interruptions left out (credit_pace_ns), where measured. The
  // overheads it is held against are medians over blocks of a stream, which leave interruptions out; the
  // total / N does not, and on a shared core one run in three read 5-30% above its steady rate
  // (replier-bound emulation, o_r 555 ns: total / N 552-1812 against 541-551). Held against the total, a
  // receive overhead that sets the pace then fails to "reach" it and the NI is named instead. (The median
  // of the credit intervals would not do: it reads a jittery NI's rate low, 2210 for the cloud's 2400.)
  double pace_ns = NAN;
};
Bottleneck classify_flood(double gap, double gap_ci, const Param& o_s, const Param& o_r, const FloodLimits& lim = {});
inline constexpr const char* kStageNI = "network interface";
inline constexpr const char* kStageSend = "send overhead";
inline constexpr const char* kStageRecv = "receive overhead";
inline constexpr const char* kStageQueue = "send queue (q waiting for local completion)";
inline constexpr const char* kStageCredits = "credits (one-way flow control)";

struct NaiveBulk {
  Param T0, R_inf;  // T0 ns; R_inf in bytes per ns (= GB/s)
  std::string warning;
};
NaiveBulk fit_naive_bulk(const std::vector<double>& sizes, const std::vector<double>& T);

// Kielmann et al.'s parameterized LogP at one size, as their method measures it (section 3): the round
// trip RTT(m) (m bytes out, 0 back), the send overhead o_s(m) and the receive overhead o_r(m).
struct PLogPPoint {
  double rtt = NAN, rtt_ci = NAN, o_s = NAN, o_s_ci = NAN, o_r = NAN, o_r_ci = NAN;
};
// Their Table 1, from the points at m, 0 and 1 byte and g(0) by saturation:
//   g(m) = RTT(m) - RTT(0) + g(0), G = g(m) / m, PLogP's L = (RTT(0) - 2 g(0)) / 2, and
//   LogP's L = L + g(1) - o_s(1) - o_r(1); intervals added in quadrature.
// Without a converged g(0) (NaN) every one is invalid and says so; a negative L is never reported bare.
struct LogGPFromPLogP {
  Param g, G, L_plogp, L;
  // g(m) below zero beyond its interval: the round trips contradict each other (not merely too close to 0).
  bool g_contradicts = false;
};
LogGPFromPLogP plogp_to_loggp(std::uint32_t m, const PLogPPoint& at_m, const PLogPPoint& at_0, const PLogPPoint* at_1,
                              double g0, double g0_ci);

}  // namespace logpb::analysis
