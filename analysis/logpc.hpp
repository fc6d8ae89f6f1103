// LoGPC (Moritz & Frank, seed 001_…): network contention on top of LogP/LogGP. Agarwal's open model of a
// wormhole-routed k-ary n-cube (section 3, eqs. 3-6), closed by feeding the contention back into the
// injection rate (eq. 7, and its long-message bound eqs. 13-14); LoPC's endpoint contention C_r (section
// 5.1.1); and the predictions the paper and Culler et al. (seed 000_…, section 3.5) make for all-to-all
// remaps and K-to-1 / 1-to-K request floods.
//
// Units: the library is unit-free. Every time (overheads, L, g, T, C_n, the channel occupancy s of one
// message) is in one unit (ns in logpbench, cycles in the paper's tests); rates are per that unit.
// The paper's B ("message size in bytes") enters Agarwal's equations only as the time a message holds a
// channel, its length in flits times one flit's channel time; here that is `s`, so the flit width and the
// cycle, which the paper leaves unstated, are the caller's choice and are recorded by it.
#pragma once

#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace logpb::analysis::logpc {

// ---- the network ------------------------------------------------------------------------------------
struct Network {
  std::string topology;       // "crossbar" or "kary"
  int k = 0, n = 1;           // radix and dimension (crossbar: nodes, 1)
  bool torus = false;         // end-around connections
  bool bidirectional = true;  // two physical channels per link, one per direction (eq. 4's factor 2)
  double k_d = 1;             // average distance travelled in each dimension
  long nodes = 0;
};

// Eq. 11, per dimension: a no-end-around mesh with random destinations (self included): (k^2 - 1) / (3k).
double mesh_average_distance(int k);
// Section 4 and Agarwal [1]: with end-around connections, unidirectional channels give (k - 1) / 2;
// bidirectional ones half the ring at most, k / 4 for even k and (k^2 - 1) / (4k) for odd k.
double torus_average_distance(int k, bool bidirectional);
// A k-ary n-cube (k >= 2, n >= 1). A mesh needs bidirectional channels; throws std::invalid_argument else.
Network kary(int k, int n, bool torus, bool bidirectional);
// The full crossbar, the degenerate topology: one switch, k_d = 1, so Agarwal's (k_d - 1) factor makes
// the switch contention zero and all the contention that remains is at the endpoints (LoPC's C_r, the
// K-to-1 receiver).
Network crossbar(long nodes);

// Eq. 4: rho, the probability that a message arrives at an incoming channel in one unit of time, for a
// per-node injection rate m and channel occupancy s: rho = m s n k_d / (c n) with c = 2 channels per
// link for bidirectional links (the paper's case, rho = m s k_d / 2), c = 1 for unidirectional.
double channel_utilisation(const Network& net, double m, double s);
// Eqs. 3 and 5: w_b, the average contention delay at one switch (M/G/1 queue with Agarwal's
// correction): rho s / (1 - rho) * (k_d - 1) / k_d^2 * (1 + 1/n). +infinity once rho >= 1 (saturated).
double switch_delay(const Network& net, double m, double s);
// Eq. 6: C_n = n k_d w_b, the contention delay of one message over its n k_d hops. Its closed form is
// eq. 9's term (n + 1)(k_d - 1) m s^2 / 2 / (1 - m s k_d / 2). +infinity when saturated.
double network_contention(const Network& net, double m, double s);
// The injection rate at which rho reaches 1 (+infinity when the network cannot saturate: crossbar, s 0).
double saturation_rate(const Network& net, double s);

// ---- closing the model (eq. 7) ------------------------------------------------------------------------
// Eq. 7 generalised to an iteration of contention-free length T in which a node injects q messages and
// waits for c of them: m_c = q / (T + c C_n(m_c)). (The paper's eq. 7 is q = c = 1; synchronous
// all-to-all is q = c = 2, a request and a reply each way.) The right side falls from q/T to 0 as m_c
// rises to the saturation rate, so there is exactly one root below min(q/T, m_sat), found by bisection.
// With c = 0 the model is open (Agarwal's constant rate m = q/T): saturated if that rate reaches m_sat.
struct FixedPoint {
  double m_c = 0;  // injection rate with contention
  double C_n = 0;  // contention per message at m_c (eq. 6)
  double rho = 0;  // channel utilisation at m_c (eq. 4)
  double T_c = 0;  // the iteration with contention, T + c C_n (= q / m_c)
  bool converged = false;
  bool saturated = false;  // open model only: the rate q/T drives rho to 1, no finite C_n exists
  int iterations = 0;
  std::string note;  // in words, when not converged or saturated
};
FixedPoint close_injection(const Network& net, double s, double T, double q, double c);

// Eqs. 13-14: the upper bound on contention for long messages sent back to back. Without contention a
// node sends one B-byte message and receives one per iteration, T = 2 G B (section 5.1.3); with it
// 1/m_c = 2 G B + C_n(m_c), the channel holding each message for B * channel_per_byte. Returns the fixed
// point; T_c / T is eq. 14's F(k_d, G) / 2G (Alewife: 2.17, the paper's "2.2" / "2.22").
FixedPoint long_message_bound(const Network& net, double B, double G, double channel_per_byte);

// ---- predictions ------------------------------------------------------------------------------------
// A missing parameter is NaN, and every prediction that needs it is NaN (callers report it as missing).
struct LogGP {
  double o_s, o_r, L, g, G;
};

// Section 5.1.1, Table 4, synchronous all-to-all remap (request/reply to a random destination):
//   LogP   2 (o_s + L + o_r)
//   LoPC   + C_r, with C_r ~= o_r + o_s: the paper's statement of LoPC's empirical result for this pattern
//          (the reply handler a request finds running). LoPC's own MVA is not implemented here.
//   LoGPC  + 2 C_n, C_n from eq. 7 closed with q = c = 2 over the LoPC iteration.
struct SyncAllToAll {
  double logp = 0, C_r = 0, lopc = 0, C_n = 0, logpc = 0;
  FixedPoint fp;
};
SyncAllToAll sync_all_to_all(const LogGP& p, const Network& net, double s);

// Section 5.1.2: asynchronous all-to-all, per message sent: LogP o_s + o_r (a send and a receive per
// iteration; max with g, which LogP also imposes and which binds on modern NICs, g < o_s + o_r is the
// paper's case). The injection rate is m = 1 / that (open, as the paper computes it); C_n is then extra
// latency each message sees, not time the sender spends, so LoGPC's cost equals LogP's (137 / 137 in
// Table 4) unless the open rate saturates the network: then sends block (section 3.1), and the closed
// fixed point (q = c = 1) is the estimate, flagged `saturated`.
struct AsyncAllToAll {
  double logp = 0, logpc = 0, C_n = 0;  // C_n: added latency per message (infinite when saturated)
  bool saturated = false;
  FixedPoint open, closed;
};
AsyncAllToAll async_all_to_all(const LogGP& p, const Network& net, double s);

// Section 5.1.3: long-message all-to-all, per message: T = 2 B G without contention, T_c with (eq. 13).
struct LongAllToAll {
  double T = 0, T_c = 0, ratio = 0;
  FixedPoint fp;
};
LongAllToAll long_all_to_all(const LogGP& p, const Network& net, double B, double channel_per_byte);

// Culler et al. section 3.5, K requesters flooding one replier. The replier spends max(g, o_r + o_s) on
// each request (receive it, send the reply; its NI no faster than g); a lone requester's gap is
// g1 = max(g, o_s + o_r) (it sends the request and handles the reply). LogP: each sender's gap is
// max(g1, K * replier cost), ratio g(K)/g(1) = K once the replier binds (Table 4's expectation).
// LoGPC adds nothing to the gap: the bottleneck is an endpoint, and Agarwal's uniform-traffic model does
// not describe a hot spot (LoGPC section 5.3). What contention adds is latency: with every sender
// saturating, a request finds the other K - 1 requests queued at the replier (LoPC's C_r for this
// pattern), `queueing` = (K - 1) * replier cost.
struct KToOne {
  int k = 0;
  double replier_cost = 0, g1 = 0, g_k = 0, ratio = 0, queueing = 0;
  bool replier_bound = false;
};
KToOne k_to_one(const LogGP& p, int K);

// Culler et al. section 3.5, one requester round-robin over K repliers: LogP asserts the same gap as with
// one replier (g(K) = g1, gain 1): requester and replier each spend o_s + o_r per request. A measured
// gain above 1 says the replier's turn-around was the bottleneck (Myrinet and Paragon: about 1.4).
struct OneToK {
  int k = 0;
  double g_k = 0, gain = 0;
};
OneToK one_to_k(const LogGP& p, int K);

// ---- a measured run's predictions (logpbench model) -----------------------------------------------------
// The run's LogGP parameters in kParameterKeys' order, each with its 95% half-width; NaN when the run lacks
// the parameter (why[] says why) or gives no interval.
inline constexpr const char* kParameterKeys[5] = {"o_s", "o_r", "L", "g", "G"};
struct RunParameters {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double v[5] = {kNaN, kNaN, kNaN, kNaN, kNaN};
  double ci[5] = {kNaN, kNaN, kNaN, kNaN, kNaN};
  std::string why[5];
  LogGP loggp() const { return {v[0], v[1], v[2], v[3], v[4]}; }
};

// The network and the message the model assumes: P ranks, B-byte messages cut into flits, and the time a
// byte holds a channel (`channel`, meaningful when have_channel; a crossbar never needs one).
struct Setting {
  Network net;
  int ranks = 0;
  double bytes = 0, flit_bytes = 1, channel = 0;
  bool have_channel = false;
  bool channel_known() const { return have_channel || net.topology == "crossbar"; }
  // The channel time of a b-byte message in whole flits (the paper's s).
  double occupancy(double b) const;
  // occupancy(bytes), NaN without a channel time.
  double s() const;
};

// A prediction as {value_ns, ci95_ns}: the parameters' 95% half-widths propagated one at a time (finite
// differences, in quadrature: the parameters come from different fits); null with the reason when a
// parameter it needs is missing.
nlohmann::json predicted(const RunParameters& in, const std::function<double(const LogGP&)>& f, double scale = 1);

// Sections 5.1.1-5.1.3 for the setting: {synchronous, asynchronous, long_message}.
nlohmann::json all_to_all_predictions(const RunParameters& in, const Setting& st);
// Culler et al. 3.5 for K = 1 .. kmax.
nlohmann::json k_to_one_predictions(const RunParameters& in, int kmax);
nlohmann::json one_to_k_predictions(const RunParameters& in, int kmax);
extern const char* const kKToOneFormula;
// The all-to-all costs over message sizes 8 B .. 64 KiB (the paper's Figs. 6 and 9 draw against size).
nlohmann::json all_to_all_by_bytes(const RunParameters& in, const Setting& st);
// A measured K's row of a k-to-one or one-to-k run gets the prediction for that K.
void predict_k_to_one_row(const RunParameters& in, int K, nlohmann::json& row);
void predict_one_to_k_row(const RunParameters& in, int K, nlohmann::json& row);

}  // namespace logpb::analysis::logpc
