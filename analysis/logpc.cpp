#include "analysis/logpc.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "analysis/results_json.hpp"

namespace logpb::analysis::logpc {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double channels_per_link(const Network& net) { return net.bidirectional ? 2.0 : 1.0; }
}  // namespace

double mesh_average_distance(int k) { return (double(k) * k - 1) / (3.0 * k); }

double torus_average_distance(int k, bool bidirectional) {
  if (!bidirectional) return (k - 1) / 2.0;
  return k % 2 == 0 ? k / 4.0 : (double(k) * k - 1) / (4.0 * k);
}

Network kary(int k, int n, bool torus, bool bidirectional) {
  if (k < 2) throw std::invalid_argument("a k-ary n-cube needs k >= 2");
  if (n < 1) throw std::invalid_argument("a k-ary n-cube needs n >= 1");
  if (!torus && !bidirectional)
    throw std::invalid_argument("a mesh without end-around connections needs bidirectional channels");
  Network net;
  net.topology = "kary";
  net.k = k;
  net.n = n;
  net.torus = torus;
  net.bidirectional = bidirectional;
  net.k_d = torus ? torus_average_distance(k, bidirectional) : mesh_average_distance(k);
  net.nodes = std::lround(std::pow(double(k), n));
  return net;
}

Network crossbar(long nodes) {
  Network net;
  net.topology = "crossbar";
  net.k = int(nodes);
  net.n = 1;
  net.k_d = 1;
  net.nodes = nodes;
  return net;
}

// Eq. 4.
double channel_utilisation(const Network& net, double m, double s) {
  return m * s * net.n * net.k_d / (channels_per_link(net) * net.n);
}

// Eq. 3 (eq. 5 once eq. 4 is substituted).
double switch_delay(const Network& net, double m, double s) {
  if (net.k_d <= 1 || m <= 0 || s <= 0) return 0;  // one hop (crossbar) or no traffic: nothing to wait for
  const double rho = channel_utilisation(net, m, s);
  if (rho >= 1) return kInf;
  return rho * s / (1 - rho) * (net.k_d - 1) / (net.k_d * net.k_d) * (1 + 1.0 / net.n);
}

// Eq. 6.
double network_contention(const Network& net, double m, double s) {
  const double w = switch_delay(net, m, s);
  return std::isinf(w) ? kInf : net.n * net.k_d * w;
}

double saturation_rate(const Network& net, double s) {
  if (net.k_d <= 1 || s <= 0) return kInf;
  return channels_per_link(net) / (s * net.k_d);
}

// Eq. 7 (generalised, see the header), by bisection on m in (0, min(q/T, m_sat)).
FixedPoint close_injection(const Network& net, double s, double T, double q, double c) {
  FixedPoint fp;
  if (!(T > 0) || !(q > 0) || !(c >= 0) || !(s >= 0)) {
    fp.m_c = fp.C_n = fp.rho = fp.T_c = kNaN;
    fp.note = "the model needs T > 0, q > 0, c >= 0 and s >= 0";
    return fp;
  }
  const double m_sat = saturation_rate(net, s);
  const double m_open = q / T;
  auto finish = [&](double m) {
    fp.m_c = m;
    fp.C_n = network_contention(net, m, s);
    fp.rho = channel_utilisation(net, m, s);
    fp.T_c = T + c * fp.C_n;
  };
  if (c == 0) {  // open: Agarwal's constant rate
    fp.iterations = 0;
    if (m_open >= m_sat) {
      fp.m_c = m_open;
      fp.rho = channel_utilisation(net, m_open, s);
      fp.C_n = fp.T_c = kInf;
      fp.saturated = true;
      fp.note = "the open model saturates: the injection rate drives the channel utilisation to " +
                std::to_string(fp.rho) + " >= 1, so no finite contention exists (senders block)";
      return fp;
    }
    finish(m_open);
    fp.converged = true;
    return fp;
  }
  // f(m) = m - q / (T + c C_n(m)) rises strictly from -q/T < 0; it is positive at min(q/T, m_sat).
  double lo = 0, hi = std::min(m_open, m_sat);
  auto f = [&](double m) {
    const double cn = network_contention(net, m, s);
    return std::isinf(cn) ? m : m - q / (T + c * cn);
  };
  if (f(hi) <= 0) {  // only when C_n(q/T) is exactly 0 (no switch contention): the open rate holds
    finish(hi);
    fp.converged = true;
    return fp;
  }
  for (fp.iterations = 0; fp.iterations < 200; ++fp.iterations) {
    const double mid = 0.5 * (lo + hi);
    if (f(mid) > 0)
      hi = mid;
    else
      lo = mid;
    if (hi - lo <= 1e-13 * hi) break;
  }
  finish(0.5 * (lo + hi));
  fp.converged = hi - lo <= 1e-12 * hi && std::isfinite(fp.C_n);
  if (!fp.converged) fp.note = "the bisection for eq. 7 did not converge in 200 steps";
  return fp;
}

// Eqs. 13-14.
FixedPoint long_message_bound(const Network& net, double B, double G, double channel_per_byte) {
  return close_injection(net, B * channel_per_byte, 2 * G * B, 1, 1);
}

SyncAllToAll sync_all_to_all(const LogGP& p, const Network& net, double s) {
  SyncAllToAll r;
  r.logp = 2 * (p.o_s + p.L + p.o_r);
  r.C_r = p.o_r + p.o_s;
  r.lopc = r.logp + r.C_r;
  if (std::isnan(r.lopc)) {
    r.C_n = r.logpc = kNaN;
    return r;
  }
  r.fp = close_injection(net, s, r.lopc, 2, 2);
  r.C_n = r.fp.C_n;
  r.logpc = r.fp.converged ? r.lopc + 2 * r.C_n : kNaN;
  return r;
}

AsyncAllToAll async_all_to_all(const LogGP& p, const Network& net, double s) {
  AsyncAllToAll r;
  r.logp = std::max(p.g, p.o_s + p.o_r);
  if (std::isnan(p.g) || std::isnan(p.o_s + p.o_r)) r.logp = kNaN;
  if (std::isnan(r.logp)) {
    r.logpc = r.C_n = kNaN;
    return r;
  }
  r.open = close_injection(net, s, r.logp, 1, 0);
  r.saturated = r.open.saturated;
  if (!r.saturated) {
    r.C_n = r.open.C_n;
    r.logpc = r.logp;
  } else {
    r.closed = close_injection(net, s, r.logp, 1, 1);
    r.C_n = r.closed.C_n;
    r.logpc = r.closed.converged ? r.closed.T_c : kNaN;
  }
  return r;
}

LongAllToAll long_all_to_all(const LogGP& p, const Network& net, double B, double channel_per_byte) {
  LongAllToAll r;
  r.T = 2 * B * p.G;
  if (!(r.T > 0) || !(channel_per_byte >= 0)) {
    r.T_c = r.ratio = kNaN;
    return r;
  }
  r.fp = long_message_bound(net, B, p.G, channel_per_byte);
  r.T_c = r.fp.converged ? r.fp.T_c : kNaN;
  r.ratio = r.T_c / r.T;
  return r;
}

KToOne k_to_one(const LogGP& p, int K) {
  KToOne r;
  r.k = K;
  r.replier_cost = std::max(p.g, p.o_r + p.o_s);
  r.g1 = std::max(p.g, p.o_s + p.o_r);
  if (std::isnan(p.g) || std::isnan(p.o_s + p.o_r)) r.replier_cost = r.g1 = kNaN;
  r.g_k = std::max(r.g1, K * r.replier_cost);
  if (std::isnan(r.g1)) r.g_k = kNaN;
  r.ratio = r.g_k / r.g1;
  r.replier_bound = K * r.replier_cost >= r.g1;
  r.queueing = (K - 1) * r.replier_cost;
  return r;
}

OneToK one_to_k(const LogGP& p, int K) {
  OneToK r;
  r.k = K;
  r.g_k = std::max(p.g, p.o_s + p.o_r);
  if (std::isnan(p.g) || std::isnan(p.o_s + p.o_r)) r.g_k = kNaN;
  r.gain = r.g_k / r.g_k;
  return r;
}

// ---- a measured run's predictions ----------------------------------------------------------------------

using json = nlohmann::json;

double Setting::occupancy(double b) const { return std::ceil(b / flit_bytes) * flit_bytes * channel; }
double Setting::s() const { return channel_known() ? occupancy(bytes) : kNaN; }

json predicted(const RunParameters& in, const std::function<double(const LogGP&)>& f, double scale) {
  const double v = f(in.loggp());
  if (!std::isfinite(v)) {
    std::string why;
    for (int i = 0; i < 5; ++i)  // the missing ones this prediction depends on
      if (std::isnan(in.v[i])) {
        RunParameters probe = in;
        probe.v[i] = 1;  // any finite value: does the prediction exist then?
        if (std::isfinite(f(probe.loggp())))
          why += std::string(why.empty() ? "" : ", ") + kParameterKeys[i] + " missing (" + in.why[i] + ")";
      }
    if (why.empty()) why = std::isinf(v) ? "saturated: no finite value" : "needs parameters this run lacks";
    return {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", why}};
  }
  double sum = 0;
  bool partial = false;
  for (int i = 0; i < 5; ++i) {
    if (std::isnan(in.v[i])) continue;
    if (std::isnan(in.ci[i])) {
      RunParameters probe = in;
      probe.v[i] *= 1.001;
      if (f(probe.loggp()) != v) partial = true;
      continue;
    }
    RunParameters probe = in;
    probe.v[i] += in.ci[i];
    const double d = f(probe.loggp()) - v;
    if (std::isfinite(d)) sum += d * d;
  }
  json j = {{"value_ns", v * scale}, {"ci95_ns", std::sqrt(sum) * scale}};
  if (partial) j["ci_note"] = "omits a parameter given without an interval";
  return j;
}

namespace {
json synchronous(const RunParameters& in, const Setting& st) {
  const double sv = st.s();
  auto sync = [&](const LogGP& p) { return sync_all_to_all(p, st.net, sv); };
  const auto r = sync(in.loggp());
  json j = {{"logp", predicted(in, [&](const LogGP& p) { return sync(p).logp; })},
            {"C_r", predicted(in, [&](const LogGP& p) { return sync(p).C_r; })},
            {"lopc", predicted(in, [&](const LogGP& p) { return sync(p).lopc; })},
            {"C_n", predicted(in, [&](const LogGP& p) { return sync(p).C_n; })},
            {"logpc", predicted(in, [&](const LogGP& p) { return sync(p).logpc; })},
            {"injection_per_us", std::isfinite(r.fp.m_c) ? json(r.fp.m_c * 1e3) : json(nullptr)},
            {"rho", finite_or_null(r.fp.rho)},
            {"converged", r.fp.converged},
            {"iterations", r.fp.iterations},
            {"formula",
             "LogP 2(o_s+L+o_r); LoPC + C_r, C_r = o_r+o_s (the paper's approximation of LoPC, no MVA); "
             "LoGPC + 2 C_n, C_n from eq. 7 closed with 2 messages and 2 C_n per iteration"}};
  if (!r.fp.note.empty()) j["note"] = r.fp.note;
  return j;
}

json asynchronous(const RunParameters& in, const Setting& st) {
  const double sv = st.s();
  auto async = [&](const LogGP& p) { return async_all_to_all(p, st.net, sv); };
  const auto r = async(in.loggp());
  json j = {{"logp", predicted(in, [&](const LogGP& p) { return async(p).logp; })},
            {"logpc", predicted(in, [&](const LogGP& p) { return async(p).logpc; })},
            {"C_n", predicted(in, [&](const LogGP& p) { return async(p).C_n; })},
            {"saturated", r.saturated},
            {"rho", finite_or_null(r.open.rho)},
            {"formula",
             "LogP max(g, o_s+o_r) per message; LoGPC the same, C_n (open model, m = 1/that) is added latency, "
             "unless the open rate saturates the network: then the closed fixed point, sends block"}};
  if (r.saturated) j["note"] = r.open.note;
  return j;
}

json long_messages(const RunParameters& in, const Setting& st) {
  auto lng = [&](const LogGP& p) {
    return long_all_to_all(p, st.net, st.bytes, st.channel_known() ? st.channel : kNaN);
  };
  const auto r = lng(in.loggp());
  return {{"bytes", st.bytes},
          {"T", predicted(in, [&](const LogGP& p) { return lng(p).T; })},
          {"T_c", predicted(in, [&](const LogGP& p) { return lng(p).T_c; })},
          {"ratio", finite_or_null(r.ratio)},
          {"formula", "T = 2 B G (section 5.1.3); T_c = 1/m_c of eq. 13; T_c/T is eq. 14's bound"}};
}
}  // namespace

json all_to_all_predictions(const RunParameters& in, const Setting& st) {
  return {{"synchronous", synchronous(in, st)},
          {"asynchronous", asynchronous(in, st)},
          {"long_message", long_messages(in, st)}};
}

json k_to_one_predictions(const RunParameters& in, int kmax) {
  json kto = json::array();
  for (int K = 1; K <= kmax; ++K) {
    const auto r = k_to_one(in.loggp(), K);
    kto.push_back({{"k", K},
                   {"logp",
                    {{"g", predicted(in, [&](const LogGP& p) { return k_to_one(p, K).g_k; })},
                     {"ratio", finite_or_null(r.ratio)},
                     {"replier_bound", r.replier_bound}}},
                   {"logpc",
                    {{"g", predicted(in, [&](const LogGP& p) { return k_to_one(p, K).g_k; })},
                     {"queueing", predicted(in, [&](const LogGP& p) { return k_to_one(p, K).queueing; })}}}});
  }
  return kto;
}

json one_to_k_predictions(const RunParameters& in, int kmax) {
  json otk = json::array();
  for (int K = 1; K <= kmax; ++K)
    otk.push_back({{"k", K},
                   {"g", predicted(in, [&](const LogGP& p) { return one_to_k(p, K).g_k; })},
                   {"gain", std::isfinite(one_to_k(in.loggp(), K).gain) ? json(1.0) : json(nullptr)}});
  return otk;
}

const char* const kKToOneFormula =
    "LogP: g(K) = max(g1, K max(g, o_r+o_s)), g1 = max(g, o_s+o_r): ratio K once the replier binds (Culler 3.5). "
    "LoGPC adds no gap (an endpoint hot spot, not uniform network traffic); it adds queueing latency (K-1) max(g, "
    "o_r+o_s)";

json all_to_all_by_bytes(const RunParameters& in, const Setting& st) {
  json curve = json::array();
  for (double b = 8; b <= 65536; b *= 2) {
    const double sb = st.channel_known() ? st.occupancy(b) : kNaN;
    const auto sy = sync_all_to_all(in.loggp(), st.net, sb);
    const auto as = async_all_to_all(in.loggp(), st.net, sb);
    const auto lg = long_all_to_all(in.loggp(), st.net, b, st.channel_known() ? st.channel : kNaN);
    curve.push_back({{"bytes", b},
                     {"sync_logp_ns", finite_or_null(sy.logp)},
                     {"sync_lopc_ns", finite_or_null(sy.lopc)},
                     {"sync_logpc_ns", finite_or_null(sy.logpc)},
                     {"async_logp_ns", finite_or_null(as.logp)},
                     {"async_logpc_ns", finite_or_null(as.logpc)},
                     {"long_T_ns", finite_or_null(lg.T)},
                     {"long_T_c_ns", finite_or_null(lg.T_c)}});
  }
  return curve;
}

void predict_k_to_one_row(const RunParameters& in, int K, json& row) {
  row["predicted_g"] = predicted(in, [&](const LogGP& q) { return k_to_one(q, K).g_k; });
  const json& g = row["predicted_g"];
  const bool has = g.is_object() && g.contains("value_ns") && !g["value_ns"].is_null();
  row["predicted_ratio"] = has ? json(k_to_one(in.loggp(), K).ratio) : json(nullptr);
  row["expected_ratio_logp"] = K;
}

void predict_one_to_k_row(const RunParameters& in, int K, json& row) {
  row["predicted_g"] = predicted(in, [&](const LogGP& q) { return one_to_k(q, K).g_k; });
  row["predicted_gain"] = 1.0;
}

}  // namespace logpb::analysis::logpc
