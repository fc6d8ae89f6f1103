#include "common/harness_cost.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/am.hpp"
#include "common/errors.hpp"
#include "common/null_transport.hpp"
#include "common/stats.hpp"

namespace logpb {
namespace {

using NullEndpoint = am::Endpoint<NullTransport>;
constexpr std::uint16_t kHandler = 1;
constexpr int kPeer = 1;

// What the handler saw: the proof that every timed frame was validated and dispatched.
struct Tally {
  std::uint64_t count = 0, sum = 0;
};
void count_frame(NullEndpoint& ep, const am::Frame& f) {
  auto* t = static_cast<Tally*>(ep.user);
  ++t->count;
  t->sum += f.args[0];
}

// Batch times (ns, timer cost taken off) to a per-operation figure. The median and its interval are
// taken over whole batches and then divided, so the clock's resolution floors the batch, not the operation.
CostFigure per_operation(const std::vector<double>& batch_ns, int batch) {
  const Summary s = summarize(batch_ns);
  return {s.median / batch, s.ci95_median / batch};
}

nlohmann::json figure_json(const CostFigure& c, const char* what) {
  if (std::isfinite(c.value_ns) && c.value_ns > 0) return {{"value_ns", c.value_ns}, {"ci95_ns", c.ci95_ns}};
  nlohmann::json j = {{"value_ns", nullptr},
                      {"error", std::string(what) + ": not resolved (below the clock's "
                                                    "resolution or not measured)"}};
  if (std::isfinite(c.ci95_ns) && c.ci95_ns > 0) j["upper_bound_ns"] = c.ci95_ns;
  return j;
}

void check_options(const HarnessCostOptions& opt) {
  // The ring holds a batch of one-way requests plus the credit frame their receipt returns.
  if (opt.batch < 1 || static_cast<std::uint32_t>(opt.batch) > NullTransport::kSlots / 2)
    throw UsageError("harness cost: batch must be 1.." + std::to_string(NullTransport::kSlots / 2));
  if (opt.batches < 1 || opt.warmup_batches < 0) throw UsageError("harness cost: batches must be at least 1");
}

am::EndpointOptions null_endpoint_options(const HarnessCostOptions& opt) {
  am::EndpointOptions eo;
  eo.session = 0x6e756c6c;  // any: both ends of the null NI are this endpoint
  eo.rank = 0;
  eo.size = 2;
  eo.window = opt.batch;       // a batch of requests never stalls on the window
  eo.stall_timeout_s = 1;      // a frame the endpoint refused to take would hang a wait: fail instead
  eo.credits = 2 * opt.batch;  // one credit frame per batch, as a flood returns one per C/2 messages
  return eo;
}

// The null NI alone sends and receives the frame the endpoint would: filled once, patched per send.
am::Frame null_ni_frame() {
  am::Frame bare{};
  bare.magic = am::kMagic;
  bare.version = am::kVersion;
  bare.kind = am::Kind::oneway;
  bare.dst = kPeer;
  return bare;
}

// The six phases' batch times (ns), and the sums that prove every timed frame went where it should.
struct BatchTimes {
  std::vector<double> send, recv, ow_send, ow_recv, ni_send, ni_recv;
  std::uint64_t expect_sum = 0, polled = 0, bare_sent = 0, bare_sum = 0;
};

BatchTimes time_batches(const Clock& clock, const HarnessCostOptions& opt, NullTransport& net, NullEndpoint& ep) {
  BatchTimes b;
  am::Frame bare = null_ni_frame();
  auto bare_sink = [&b](const void* p, std::size_t) { b.bare_sum += static_cast<const am::Frame*>(p)->args[0]; };
  const int B = opt.batch;
  const std::size_t keep = static_cast<std::size_t>(opt.batches);
  for (auto* v : {&b.send, &b.recv, &b.ow_send, &b.ow_recv, &b.ni_send, &b.ni_recv}) v->reserve(keep);
  const double timer = clock.timer_cost_cycles();
  auto ns = [&](std::uint64_t t0, std::uint64_t t1) { return clock.ns(static_cast<double>(t1 - t0) - timer); };
  // The phases alternate within each batch, so all six see the same state of the machine.
  for (int k = 0; k < opt.warmup_batches + opt.batches; ++k) {
    const std::uint64_t a = static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(B);
    net.hold(true);
    const std::uint64_t t0 = tsc::now();
    for (int i = 0; i < B; ++i) ep.request(kPeer, kHandler, a + static_cast<std::uint64_t>(i));
    const std::uint64_t t1 = tsc::now_end();
    net.hold(false);
    const std::uint64_t t2 = tsc::now();
    for (int i = 0; i < B; ++i) b.polled += static_cast<std::uint64_t>(ep.poll());
    const std::uint64_t t3 = tsc::now_end();

    net.hold(true);
    const std::uint64_t t4 = tsc::now();
    for (int i = 0; i < B; ++i) ep.oneway(kPeer, kHandler, a + static_cast<std::uint64_t>(i));
    const std::uint64_t t5 = tsc::now_end();
    net.hold(false);
    const std::uint64_t t6 = tsc::now();
    for (int i = 0; i < B; ++i) b.polled += static_cast<std::uint64_t>(ep.poll());
    const std::uint64_t t7 = tsc::now_end();
    while (net.queued() != 0) ep.poll();  // the credit frame, untimed: its cost is in the receive that sent it

    const std::uint64_t t8 = tsc::now();
    for (int i = 0; i < B; ++i) {
      bare.args[0] = a + static_cast<std::uint64_t>(i);
      b.bare_sent += net.try_send(bare) ? 1 : 0;
    }
    const std::uint64_t t9 = tsc::now();
    for (int i = 0; i < B; ++i) net.poll(bare_sink);
    const std::uint64_t t10 = tsc::now_end();

    const std::uint64_t s = static_cast<std::uint64_t>(B) * a + static_cast<std::uint64_t>(B) * (B - 1) / 2;
    b.expect_sum += s;
    if (k < opt.warmup_batches) continue;
    b.send.push_back(ns(t0, t1));
    b.recv.push_back(ns(t2, t3));
    b.ow_send.push_back(ns(t4, t5));
    b.ow_recv.push_back(ns(t6, t7));
    b.ni_send.push_back(ns(t8, t9));
    b.ni_recv.push_back(ns(t9, t10));
  }
  return b;
}

// Every timed frame must have gone through the endpoint's validation to the handler, none refused: what
// did not, in words ("" when all did).
std::string unbalanced(NullEndpoint& ep, const Tally& tally, const BatchTimes& b, const HarnessCostOptions& opt) {
  const std::uint64_t rounds = static_cast<std::uint64_t>(opt.warmup_batches + opt.batches);
  const std::uint64_t per_kind = rounds * static_cast<std::uint64_t>(opt.batch);
  const am::Counters c = ep.counters();
  if (c.rejected_total() != 0) return std::to_string(c.rejected_total()) + " frames rejected by the endpoint";
  if (tally.count != 2 * per_kind || tally.sum != 2 * b.expect_sum || b.polled != 2 * per_kind)
    return "the handler saw " + std::to_string(tally.count) + " frames of " + std::to_string(2 * per_kind);
  if (c.requests_sent != per_kind || c.oneway_sent != per_kind || c.oneway_received != per_kind ||
      ep.outstanding(kPeer) != 0 || c.credit_frames != c.credit_frames_sent)
    return "the endpoint's counters do not balance";
  if (b.bare_sent != per_kind || b.bare_sum != b.expect_sum) return "the null NI lost frames";
  return "";
}

}  // namespace

HarnessCost measure_harness_cost(const Clock& clock, const HarnessCostOptions& opt) {
  check_options(opt);
  HarnessCost h;
  h.options = opt;
  const auto t_start = std::chrono::steady_clock::now();

  auto net = std::make_unique<NullTransport>();
  NullEndpoint ep(*net, clock, null_endpoint_options(opt));
  Tally tally;
  ep.user = &tally;
  ep.on(kHandler, count_frame);

  const BatchTimes b = time_batches(clock, opt, *net, ep);
  h.error = unbalanced(ep, tally, b, opt);
  h.frames = tally.count;
  if (h.error.empty()) {
    const int B = opt.batch;
    h.send = per_operation(b.send, B);
    h.recv = per_operation(b.recv, B);
    h.oneway_send = per_operation(b.ow_send, B);
    h.oneway_recv = per_operation(b.ow_recv, B);
    h.ni_send = per_operation(b.ni_send, B);
    h.ni_recv = per_operation(b.ni_recv, B);
  }
  h.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return h;
}

nlohmann::json harness_cost_json(const HarnessCost& h) {
  nlohmann::json j = {
      {"send_ns", figure_json(h.send, "send")},
      {"recv_ns", figure_json(h.recv, "receive")},
      {"oneway_send_ns", figure_json(h.oneway_send, "one-way send")},
      {"oneway_recv_ns", figure_json(h.oneway_recv, "one-way receive")},
      {"null_ni",
       {{"send_ns", figure_json(h.ni_send, "null NI send")}, {"recv_ns", figure_json(h.ni_recv, "null NI receive")}}},
      {"method",
       "the AM layer (am::Endpoint) over a null NI in this process (common/null_transport.hpp): "
       "send_ns is request() with nothing to receive, recv_ns a poll() that validates and dispatches "
       "the reply the null NI hands back; oneway_* the same for one-way requests and their credits; "
       "null_ni the NI alone. Each the median over batches of a batch's TSC time (timer cost taken "
       "off) divided by the batch, with the distribution-free 95% interval of that median; measured "
       "on the core of the rank that writes this file, after pinning"},
      {"batch", h.options.batch},
      {"batches", h.options.batches},
      {"warmup_batches", h.options.warmup_batches},
      {"frames_dispatched", h.frames},
      {"seconds", h.seconds}};
  if (!h.error.empty()) j["error"] = h.error;
  return j;
}

}  // namespace logpb
