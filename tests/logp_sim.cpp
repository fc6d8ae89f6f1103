#include "tests/logp_sim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>

#include "methods/signature/loops.hpp"  // default_bursts: the real run's M grid

namespace logpb::sim {
namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();

// One host's CPU: advances its own clock through overheads, waits and interrupt stalls.
struct Cpu {
  const Noise* noise;
  std::mt19937_64* rng;
  double next_stall = std::numeric_limits<double>::infinity();

  void arm(double now) {
    if (noise->stall_every_ns > 0)
      next_stall = now + std::exponential_distribution<double>(1 / noise->stall_every_ns)(*rng);
  }
  double stall_len() { return std::uniform_real_distribution<double>(noise->stall_min_ns, noise->stall_max_ns)(*rng); }
  // Busy for d ns from t (an overhead or the compute delay): jitter, and any stall that falls inside.
  double busy(double t, double d) {
    if (d > 0 && noise->jitter > 0) d += std::exponential_distribution<double>(1 / (noise->jitter * d))(*rng);
    double end = t + d;
    while (next_stall < end) {
      end += stall_len();
      arm(std::max(next_stall, t));
    }
    return end;
  }
  // Polling from t until a message that arrives at a can be taken: max(t, a), unless a stall hits the
  // poller before it sees the message.
  double wait(double t, double a) {
    double ready = std::max(t, a);
    while (next_stall < ready) {
      ready = std::max(ready, next_stall + stall_len());
      arm(next_stall);
    }
    return ready;
  }
};

// The NI side of one host: departures g apart (sending), arrivals g apart (receiving).
struct Ni {
  double next_departure = kNever, last_arrival = kNever;
};

// Two hosts joined by the emulated network, on one continuous timeline.
class System {
 public:
  System(const Machine& m, const Noise& n) : m_(m), rng_(n.seed), client_{&n, &rng_}, server_{&n, &rng_}, noise_(n) {
    client_.arm(0);
    server_.arm(0);
  }

  double now() const { return t_; }

  // The client's request(): one poll, stall while the window is full, send.
  void request() {
    poll_once();
    while (static_cast<int>(replies_.size()) >= m_.window) take_reply();
    send_request();
  }
  void compute(double delta) {
    if (delta <= 0) return;
    const double t0 = t_;
    t_ = client_.busy(t_, delta);
    delay_spent_ += t_ - t0;
    ++delays_;
  }
  double delay_spent_ = 0;  // time the busy delays took inside bursts, and how many (for the in-burst mean)
  long delays_ = 0;
  void drain() {  // wait_all(): outside the timed phase
    while (!replies_.empty()) take_reply();
  }
  double achieved_delay(double delta) {  // one standalone busy delay, as the calibration times it
    const double t0 = t_;
    t_ = client_.busy(t_, delta);
    return t_ - t0;
  }

 private:
  void poll_once() {
    if (!replies_.empty() && replies_.front() <= t_) {
      replies_.pop_front();
      t_ = client_.busy(t_, m_.o_r);  // o_r padded from the poll that found it
    } else {
      t_ += noise_.empty_poll_ns;
    }
  }
  void take_reply() {
    t_ = client_.wait(t_, replies_.front());
    replies_.pop_front();
    t_ = client_.busy(t_, m_.o_r);
  }
  // Send (CPU: o_s from entry; the NI departs it at max(entry + o_s, previous + g)), then follow the
  // request through the server, whose handling depends only on earlier requests, to the moment its
  // reply may be taken at the client.
  void send_request() {
    const double vis = depart(client_ni_, t_) + m_.L;
    t_ = client_.busy(t_, m_.o_s);
    const double at_server = arrive(server_ni_, vis);
    double s = server_.wait(server_free_, at_server);  // the server polls from when it became free
    s = server_.busy(s, m_.o_r);
    const double reply_vis = depart(server_ni_, s) + m_.L;
    server_free_ = server_.busy(s, m_.o_s);
    replies_.push_back(arrive(client_ni_, reply_vis));
  }
  double depart(Ni& ni, double entry) const {
    const double dep = std::max(entry + m_.o_s, ni.next_departure);
    ni.next_departure = dep + m_.g;
    return dep;
  }
  double arrive(Ni& ni, double visible) const {
    ni.last_arrival = std::max(visible, ni.last_arrival + m_.g);
    return ni.last_arrival;
  }

  Machine m_;
  std::mt19937_64 rng_;
  Cpu client_, server_;
  Noise noise_;
  Ni client_ni_, server_ni_;
  double t_ = 0, server_free_ = 0;
  std::deque<double> replies_;  // arrival times at the client of the outstanding requests' replies, FIFO
};

// signature_curve's sample(): t0; M x {request; Delta}; t1; drain untimed.
double burst(System& s, int M, double delta) {
  const double t0 = s.now();
  for (int i = 0; i < M; ++i) {
    s.request();
    s.compute(delta);
  }
  const double cost = (s.now() - t0) / M;
  s.drain();
  return cost;
}

// One point: M requests with Delta between them, repeated to the stop rule (measure_point, as the real
// run), appended to c.
void add_point(System& s, analysis::Curve& c, int M, double delta, const Options& opt) {
  burst(s, M, delta);  // the untimed warm-up burst
  const double start = s.now();
  const Point p = measure_point(
      opt.rule, [&] { return burst(s, M, delta); }, [&] { return s.now() - start; });
  c.M.push_back(M);
  c.cost_ns.push_back(p.value);
  c.ci95_ns.push_back(std::isfinite(p.ci95) ? p.ci95 : 0);
}

analysis::Curve curve(System& s, const Machine& m, double delta, const Options& opt) {
  analysis::Curve c;
  c.max_burst_ns = opt.max_burst_ns;
  // The Delta subtracted by the fit: the median of standalone busy delays (the real run's calibration).
  if (delta > 0) {
    std::vector<double> d;
    for (int i = 0; i < 1001; ++i) d.push_back(s.achieved_delay(delta));
    c.delta_ns = summarize(d).median;
  }
  s.delay_spent_ = 0;
  s.delays_ = 0;
  const std::vector<int> bursts = methods::default_bursts(opt.max_burst);
  for (std::size_t k = 0; k < bursts.size(); ++k) {
    const int M = bursts[k];
    // The real run's cap (signature_curve), plus: never before M reaches min_window_multiple windows,
    // so the window has filled and emptied several times inside the measured bursts.
    if (static_cast<int>(k) >= opt.min_points && M > opt.min_window_multiple * m.window && !c.cost_ns.empty() &&
        c.cost_ns.back() * M > opt.max_burst_ns)
      break;
    add_point(s, c, M, delta, opt);
  }
  if (delta > 0 && opt.delta_report == Options::DeltaReport::in_burst_mean) c.delta_ns = s.delay_spent_ / s.delays_;
  return c;
}

// Ping-pong: request, the server's o_r and reply o_s, the client's o_r; timed from request entry.
analysis::Param round_trip(System& s, int iterations) {
  std::vector<double> rtt;
  for (int i = 0; i < iterations; ++i) {
    const double t0 = s.now();
    s.request();
    s.drain();
    rtt.push_back(s.now() - t0);
  }
  const Summary sum = summarize(rtt);
  analysis::Param p;
  p.value = p.raw = sum.median;
  p.ci95 = std::isfinite(sum.ci95_median) ? sum.ci95_median : 0;
  p.valid = true;
  p.note = "median round trip (simulated)";
  return p;
}

// The simulation's own steady-state cost of a curve: the slope of T(M) = M cost(M) between its last two
// points (independent of the extractor's fit).
double tail_slope(const analysis::Curve& c) {
  const std::size_t n = c.M.size();
  if (n < 2) return c.cost_ns.back();
  return (c.M[n - 1] * c.cost_ns[n - 1] - c.M[n - 2] * c.cost_ns[n - 2]) / (c.M[n - 1] - c.M[n - 2]);
}

}  // namespace

double simulate_burst(const Machine& m, int M, double delta_ns, const Noise& noise) {
  System s(m, noise);
  return burst(s, M, delta_ns);
}

Result simulate(const Machine& m, const Noise& noise, const Options& opt) {
  System s(m, noise);
  Result r;
  r.rtt = round_trip(s, noise.jitter > 0 || noise.stall_every_ns > 0 ? opt.rtt_iterations : 11);
  r.curves.push_back(curve(s, m, 0, opt));
  r.steady0 = tail_slope(r.curves.front());
  r.requested_deltas = opt.deltas_ns.empty() ? analysis::auto_deltas(r.steady0, opt.factors) : opt.deltas_ns;
  for (double d : r.requested_deltas) r.curves.push_back(curve(s, m, d, opt));
  // As methods/signature/loops.hpp does once every curve is in: while the fit finds the Delta = 0 curve
  // still in its transition (its slope below the o_s + o_r the Delta curves read), longer bursts.
  for (int k = 0; k < opt.extend_first; ++k) {
    if (!analysis::fit_signature(r.curves, r.rtt, 1.2, m.window).g_in_transition) break;
    add_point(s, r.curves.front(), static_cast<int>(r.curves.front().M.back()) * 3 / 2 + 1, 0, opt);
  }
  return r;
}

}  // namespace logpb::sim
