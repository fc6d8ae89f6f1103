// The Active Message layer: GAM-like request/reply over any Transport (Culler et al. section 2.2).
//
// request() polls and runs arriving replies itself and stalls, still polling, while the outstanding
// window (the network capacity) is full; that stall is what produces the transition and steady-state
// regimes of the signature (section 3.1). Replies are sent from inside request handlers. Every frame
// is validated before anything is dispatched; a bad one is counted by reason and dropped.
//
// One-way requests (oneway(), oneway_store()) get no reply: a flood of them measures how fast messages
// can be injected, not a round trip (Bell et al. 4.2, Kielmann et al. 3). Flow control is by credits,
// as in later AM specifications (AM-II): each one-way request spends one; the sender marks a request
// "return credits" once it holds half or fewer, and the receiver answers that mark, after running the
// handler, with one credit frame for everything consumed since its last. One credit frame per about
// C/2 messages: a cost of o/(C/2) per message on either side, recorded with C in meta.am.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/errors.hpp"
#include "common/frame.hpp"
#include "common/stats.hpp"
#include "common/transport.hpp"

namespace logpb::am {

struct Counters {
  std::uint64_t requests_sent = 0, replies_sent = 0, received = 0;
  std::uint64_t oneway_sent = 0, oneway_received = 0, credit_frames = 0, credit_frames_sent = 0;
  // Of requests_sent, the gets: the peer's NI serves them, not its AM layer, and their completion comes
  // back as a reply from the peer that its AM layer never sent (the job's frame balance counts them so).
  std::uint64_t gets_sent = 0;
  std::array<std::uint64_t, static_cast<int>(Reject::count_)> rejected{};
  std::uint64_t rejected_total() const {
    std::uint64_t s = 0;
    for (auto r : rejected) s += r;
    return s;
  }
};
inline void to_json(nlohmann::json& j, const Counters& c) {
  nlohmann::json rej = nlohmann::json::object();
  for (int i = 0; i < static_cast<int>(Reject::count_); ++i)
    if (c.rejected[i]) rej[to_string(static_cast<Reject>(i))] = c.rejected[i];
  j = {{"requests_sent", c.requests_sent},
       {"replies_sent", c.replies_sent},
       {"received", c.received},
       {"oneway_sent", c.oneway_sent},
       {"oneway_received", c.oneway_received},
       {"credit_frames_received", c.credit_frames},
       {"credit_frames_sent", c.credit_frames_sent},
       {"gets_sent", c.gets_sent},
       {"rejected", rej}};
}

struct EndpointOptions {
  std::uint32_t session = 0;
  int rank = 0;  // this endpoint's rank in the job, and the job's size: frames carry both ends' ranks
  int size = 2;
  int window = 32;                  // outstanding requests allowed per peer: the network capacity the layer enforces
  double stall_timeout_s = 10;      // no progress for this long while waiting: the peer is declared lost (0: never)
  std::uint32_t segment_bytes = 0;  // bulk lengths are checked against the receiver's segment
  // On a lossy NI (Ethernet): with requests outstanding and nothing arriving for this long, they are
  // declared lost, the window is emptied and replies still in flight become stale (0: never, for NIs
  // that do not lose messages). Methods see it through loss_events() and re-measure.
  double loss_timeout_s = 0;
  int credits = 256;  // one-way requests in flight per peer; the transport's queues may allow fewer (max_credits)
};

// The requester's loss epoch lives in the low 15 bits of Frame::flags; the top bit of a one-way request
// asks its receiver to return credits.
inline constexpr std::uint16_t kEpochMask = 0x7fff;
inline constexpr std::uint16_t kCreditAsk = 0x8000;

// An endpoint of an N-rank job. Every operation names its destination rank; frames carry the source,
// and handlers see it (f.src), so a reply goes back to whoever asked. Flow control is per peer: each
// peer has its own request window, one-way credits, loss epoch and counters, as an NI's per-connection
// state would be. One poll() serves every peer (the transport multiplexes them).
template <Transport T>
class Endpoint {
 public:
  using Handler = void (*)(Endpoint&, const Frame&);
  // The pace at which a peer consumes our one-way requests: each credit frame's arrival time and the
  // credits returned so far (see log_credits).
  struct CreditMark {
    std::uint64_t tsc, returned;
  };

  Endpoint(T& net, const Clock& clock, const EndpointOptions& opt)
      : net_(net),
        options_(opt),
        window_(opt.window),
        rank_(opt.rank),
        size_(opt.size),
        segment_bytes_(opt.segment_bytes),
        session_(opt.session) {
    if (window_ < 1) throw UsageError("AM window must be at least 1");
    if (size_ < 1 || size_ > kMaxRanks || rank_ < 0 || rank_ >= size_)
      throw UsageError("AM endpoint: rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                       " is not a rank of the job");
    // Work requests are built once and only patched per send; requests and replies have their own, since
    // a reply is built inside a handler while a request may be waiting to be retried.
    Frame base{};
    base.magic = kMagic;
    base.version = kVersion;
    base.session = opt.session;
    base.src = static_cast<std::uint16_t>(rank_);
    req_ = rep_ = ow_ = cred_ = base;
    req_.kind = Kind::request;
    rep_.kind = Kind::reply;
    ow_.kind = Kind::oneway;
    cred_.kind = Kind::credit;
    credit_limit_ = opt.credits;
    if constexpr (CreditLimited<T>) credit_limit_ = std::min(credit_limit_, static_cast<int>(net.max_credits(window_)));
    if (credit_limit_ < 2) {
      // Never a negative count (--ring 64 once said "room for -18"): what is left, and the largest window
      // these queues would take.
      std::string left = credit_limit_ > 0 ? "room for only " + std::to_string(credit_limit_) : "no room";
      std::string shrink = "shrink --window";
      if constexpr (CreditLimited<T>) {
        int fits = window_ - 1;
        while (fits >= 1 && net.max_credits(fits) < 2) --fits;
        shrink = fits >= 1 ? "set --window " + std::to_string(fits) + " or less" : "";
      }
      throw UsageError("the NI's queues leave " + left + " for one-way messages beside the window of " +
                       std::to_string(window_) +
                       " (at least 2 are needed): enlarge the queues (--ring, --rq-depth, "
                       "--rx-ring)" +
                       (shrink.empty() ? "" : " or " + shrink));
    }
    peers_.resize(static_cast<std::size_t>(size_));
    for (auto& p : peers_) p.credits = credit_limit_;
    timeout_cycles_ = opt.stall_timeout_s > 0 ? clock.cycles(opt.stall_timeout_s * 1e9) : 0;
    loss_cycles_ = opt.loss_timeout_s > 0 ? clock.cycles(opt.loss_timeout_s * 1e9) : 0;
    check_interval_cycles_ = clock.cycles(1e6);  // 1 ms between liveness checks while stalled
    ns_per_cycle_ = clock.ns(std::uint64_t{1000}) / 1000;
    handlers_.fill(nullptr);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  void on(std::uint16_t id, Handler h) {
    if (id == 0 || id >= kMaxHandlers) throw UsageError("handler id out of range");
    handlers_[id] = h;
  }

  // Whether request() and store() poll once before sending (on by default, as GAM's am_request does; see
  // request()). Kielmann et al.'s o_s is the time inside an MPI send call, which polls for nothing, so
  // their method turns it off for its timed round trips.
  void poll_before_send(bool on) { poll_before_send_ = on; }
  bool polls_before_send() const { return poll_before_send_; }

  // Issue a request to rank dst. Stalls (polling, running replies) while dst's window is full or the NI
  // is busy.
  void request(int dst, std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
               std::uint64_t a3 = 0, std::uint32_t token = 0) {
    // Like GAM's am_request, poll the network once, running a reply that has arrived (its o_r is spent
    // here: this is what bends the signature out of its send-only regime), then stall while the window
    // is full. One poll, not a drain loop: in the steady state each request meets one reply, and a
    // trailing empty poll would charge every request a cache miss on the next, still-unwritten slot.
    Peer& p = peer(dst);
    if (poll_before_send_) poll();
    while (p.outstanding >= window_) progress();
    fill(req_, dst, handler, token, a0, a1, a2, a3);
    req_.flags = p.epoch;
    while (!net_.try_send(req_)) progress();
    ++p.outstanding;
    ++p.counters.requests_sent;
  }

  // Bulk store (Culler et al. section 4): n bytes from src land at remote_off in dst's segment, then
  // dst's request handler runs with f.bulk_off/bulk_len naming them (and replies).
  void store(int dst, std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
             std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
             std::uint64_t a3 = 0) requires BulkTransport<T> {
    check_bulk(n, remote_off, "store");
    Peer& p = peer(dst);
    if (poll_before_send_) poll();
    while (p.outstanding >= window_) progress();
    fill(req_, dst, handler, 0, a0, a1, a2, a3, n, remote_off);
    req_.flags = p.epoch;
    while (!net_.try_store(req_, src, n, remote_off)) progress();
    ++p.outstanding;
    ++p.counters.requests_sent;
  }

  // Bulk get: n bytes at remote_off of rank dst's segment are copied to local_off of this side's
  // segment, then `handler` runs here as a reply from dst. No handler runs on dst. The transport is
  // handed the completion as it will be delivered: from dst (f.src, whose segment it reads) to us.
  void get(int dst, std::uint16_t handler, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off,
           std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
           std::uint64_t a3 = 0) requires BulkTransport<T> {
    check_bulk(n, remote_off, "get");
    check_bulk(n, local_off, "get");
    Peer& p = peer(dst);
    poll();
    while (p.outstanding >= window_) progress();
    Frame f = rep_;
    fill(f, rank_, handler, 0, a0, a1, a2, a3, n, local_off);
    f.src = static_cast<std::uint16_t>(dst);
    f.flags = p.epoch;  // the completion is a reply of the current epoch
    while (!net_.try_get(f, remote_off, n, local_off)) progress();
    ++p.outstanding;
    ++p.counters.requests_sent;
    ++p.counters.gets_sent;
  }

  // Reply to `req` (to its source) from inside its handler. Replies take no window slot; if the NI is
  // momentarily full we wait for it without dispatching, so handlers never nest.
  void reply(const Frame& req, std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
             std::uint64_t a3 = 0) {
    if (req.kind != Kind::request)
      throw std::logic_error("AM reply to a frame that is not a request (one-way requests get none)");
    fill(rep_, req.src, handler, req.token, a0, a1, a2, a3);
    rep_.flags = req.flags;
    while (!net_.try_send(rep_)) stall_check();
    ++peers_[req.src].counters.replies_sent;
  }

  // Reply with n bytes of data from inside a request handler: they land at remote_off in the
  // requester's segment before its reply handler runs (a bulk reply, as a get's data returns).
  void reply_store(const Frame& req, std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
                   std::uint64_t a0 = 0, std::uint64_t a1 = 0) requires BulkTransport<T> {
    check_bulk(n, remote_off, "reply");
    if (req.kind != Kind::request)
      throw std::logic_error("AM reply to a frame that is not a request (one-way requests get none)");
    fill(rep_, req.src, handler, req.token, a0, a1, 0, 0, n, remote_off);
    rep_.flags = req.flags;
    while (!net_.try_store(rep_, src, n, remote_off)) stall_check();
    ++peers_[req.src].counters.replies_sent;
  }

  // A one-way request: its handler runs on dst and sends nothing back. Stalls (polling) while no credit
  // for dst is left. With track, returns the operation's number for wait_local() (else 0).
  std::uint64_t oneway(int dst, std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
                       std::uint64_t a3 = 0, bool track = false) {
    Peer& p = peer(dst);
    poll();
    while (p.credits == 0) progress();
    fill(ow_, dst, handler, 0, a0, a1, a2, a3);
    return post_oneway(p, track, [this] { return net_.try_send(ow_); });
  }
  // A one-way bulk store: n bytes land at remote_off of dst's segment, then its handler runs.
  std::uint64_t oneway_store(int dst, std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
                             std::uint64_t a0 = 0, std::uint64_t a1 = 0, bool track = false) requires BulkTransport<T> {
    check_bulk(n, remote_off, "store");
    Peer& p = peer(dst);
    poll();
    while (p.credits == 0) progress();
    fill(ow_, dst, handler, 0, a0, a1, 0, 0, n, remote_off);
    return post_oneway(p, track, [&] { return net_.try_store(ow_, src, n, remote_off); });
  }
  // Wait (polling, dispatching) until send operation `op` (from oneway(..., track)) is locally complete:
  // its buffer is free again. Says nothing of arrival. Operations are numbered across all peers.
  void wait_local(std::uint64_t op) requires LocalCompletion<T> {
    while (net_.tx_completed() < op) progress();
  }
  static constexpr bool has_local_completion = LocalCompletion<T>;
  // k > 1: the NI reports local completion only every k-th send, tracked or not (common/transport.hpp).
  std::uint64_t completion_stride() const {
    if constexpr (requires { net_.completion_stride(); }) return net_.completion_stride();
    return 1;
  }
  // Credit frames from dst are logged while on (one TSC read per credit frame, i.e. per ~C/2 messages).
  // The receiver consumes at the stream's bottleneck rate from its first message on, whatever the
  // sender's start-up burst, so the intervals between credit frames give the steady rate; their median
  // leaves out the interruptions of either host.
  void log_credits(int dst, bool on) {  // on: a new log; off: stop, keeping the log for reading
    Peer& p = peer(dst);
    if (on) {
      p.credit_log.clear();
      p.credit_log.reserve(1 << 16);
    }
    p.logging_credits = on;
  }
  const std::vector<CreditMark>& credit_log(int dst) const {
    return peers_.at(static_cast<std::size_t>(dst)).credit_log;
  }
  int credit_limit() const { return credit_limit_; }

  // Poll the NI once, dispatching what arrived (from any peer).
  int poll() {
    if (poll_hooks_) [[unlikely]]
      return instrumented_poll();
    return net_.poll([this](const void* p, std::size_t n) { deliver(p, n); });
  }

  // The polls themselves, counted while on (on resets the count): how many ran, how many handed up
  // anything, and how many frames those handed up. A stream's frames per poll is what shares the poll's
  // fixed cost between messages (the signature records it per Delta curve, methods/signature/loops.hpp).
  struct PollCount {
    std::uint64_t polls = 0, productive = 0, frames = 0;
  };
  void count_polls(bool on) {
    if (on) poll_count_ = {};
    set_poll_hook(kCountPolls, on);
  }
  const PollCount& poll_count() const { return poll_count_; }

  // The replier's own service time per request (Culler et al. 3.5: a replier whose turnaround, its o_r +
  // handler + o_s, is longer than the requester's o_s + o_r limits a request/reply stream). While on,
  // every poll that handed up a request is timed whole: the receive, the handler and the reply it sent.
  // Off by default: its two TSC reads per poll would otherwise lengthen every round trip. On resets it.
  void time_service(bool on) {
    if (on) {
      service_requests_ = 0;
      service_samples_.clear();
      service_samples_.reserve(1 << 16);
    }
    set_poll_hook(kTimeService, on);
  }
  // Busy time per served request so far (ns): the (upper) median over the timed polls of each poll's time
  // per request it handed up, so the polls that a preemption of this process stretched stay out of it.
  double service_ns() {
    if (service_samples_.empty()) return std::nan("");
    return static_cast<double>(order_statistic(service_samples_, service_samples_.size() / 2)) * ns_per_cycle_;
  }
  std::uint64_t service_requests() const { return service_requests_; }
  // The same polls' mean and 90th percentile (ns): where they part from the median, part of the replier's
  // polls were slower, which its throughput pays and its median does not show (a record, not a figure).
  double service_mean_ns() const {
    if (service_samples_.empty()) return std::nan("");
    double sum = 0;
    for (float x : service_samples_) sum += static_cast<double>(x);
    return sum / static_cast<double>(service_samples_.size()) * ns_per_cycle_;
  }
  double service_p90_ns() {
    if (service_samples_.empty()) return std::nan("");
    return static_cast<double>(order_statistic(service_samples_, service_samples_.size() * 9 / 10)) * ns_per_cycle_;
  }

  // Poll until pred() holds; the watchdog turns a silent or dead peer into a PeerError. Returns false
  // (without pred holding) when outstanding requests were declared lost meanwhile.
  template <class Pred>
  bool wait_until(Pred&& pred) {
    const std::uint64_t losses = loss_events_;
    while (!pred()) {
      progress();
      if (loss_events_ != losses) return false;
    }
    return true;
  }
  bool wait_all() {  // every peer's requests answered
    return wait_until([this] { return total_outstanding() == 0; });
  }
  bool wait_all(int dst) {
    const Peer& p = peer(dst);
    return wait_until([&p] { return p.outstanding == 0; });
  }
  // How many times requests were declared lost, and how many requests that was in all (all peers, or one).
  std::uint64_t loss_events() const { return loss_events_; }
  std::uint64_t loss_events(int dst) const { return peers_.at(static_cast<std::size_t>(dst)).loss_events; }
  std::uint64_t lost_requests() const {
    std::uint64_t s = 0;
    for (const auto& p : peers_) s += p.lost_requests;
    return s;
  }

  int outstanding(int dst) const { return peers_.at(static_cast<std::size_t>(dst)).outstanding; }
  int total_outstanding() const {
    int s = 0;
    for (const auto& p : peers_) s += p.outstanding;
    return s;
  }
  int window() const { return window_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::uint32_t session() const { return session_; }
  const EndpointOptions& options() const { return options_; }
  T& transport() { return net_; }
  const T& transport() const { return net_; }
  // Counts per peer, and their sum with the frames refused before their source was known.
  const Counters& counters(int peer_rank) const { return peers_.at(static_cast<std::size_t>(peer_rank)).counters; }
  Counters counters() const {
    Counters s = unattributed_;
    for (const auto& p : peers_) {
      const Counters& c = p.counters;
      s.requests_sent += c.requests_sent;
      s.replies_sent += c.replies_sent;
      s.received += c.received;
      s.oneway_sent += c.oneway_sent;
      s.oneway_received += c.oneway_received;
      s.credit_frames += c.credit_frames;
      s.credit_frames_sent += c.credit_frames_sent;
      s.gets_sent += c.gets_sent;
      for (std::size_t i = 0; i < s.rejected.size(); ++i) s.rejected[i] += c.rejected[i];
    }
    return s;
  }
  void* user = nullptr;  // handlers' context

 private:
  // What this endpoint keeps for each other rank: as a requester (window, credits, epoch) and as a
  // receiver of its one-way requests (credits owed back).
  struct Peer {
    int outstanding = 0;
    int credits = 0;
    bool asked = false;
    bool logging_credits = false;
    std::uint16_t epoch = 0;      // our loss epoch toward this peer
    std::uint16_t ask_epoch = 0;  // the epoch of its last credit ask, echoed in our credit frame
    std::uint64_t owed = 0;       // its one-way requests consumed since our last credit frame
    std::uint64_t credits_returned = 0;
    std::uint64_t loss_events = 0, lost_requests = 0;
    std::vector<CreditMark> credit_log;
    Counters counters;
  };
  // The checks on every send stay small enough to inline; what they throw is built out of line.
  Peer& peer(int r) {
    if (static_cast<unsigned>(r) >= static_cast<unsigned>(size_) || r == rank_) [[unlikely]]
      not_a_peer(r);
    return peers_[static_cast<std::size_t>(r)];
  }
  [[noreturn, gnu::noinline, gnu::cold]] void not_a_peer(int r) const {
    throw UsageError("AM operation to rank " + std::to_string(r) + ": not a peer of rank " + std::to_string(rank_) +
                     " in a job of " + std::to_string(size_));
  }
  const Peer& peer(int r) const { return const_cast<Endpoint*>(this)->peer(r); }

  void fill(Frame& f, int dst, std::uint16_t handler, std::uint32_t token, std::uint64_t a0, std::uint64_t a1,
            std::uint64_t a2, std::uint64_t a3, std::uint32_t bulk_len = 0, std::uint32_t bulk_off = 0) const {
    f.dst = static_cast<std::uint16_t>(dst);
    f.handler = static_cast<std::uint8_t>(handler);
    f.bulk_len = bulk_len;
    f.bulk_off = bulk_off;
    f.token = token;
    f.args[0] = a0;
    f.args[1] = a1;
    f.args[2] = a2;
    f.args[3] = a3;
  }

  void deliver(const void* data, std::size_t n) {
    if (n < sizeof(Frame)) return reject(unattributed_, Reject::short_frame);
    const Frame& f = *static_cast<const Frame*>(data);
    if (f.magic != kMagic) return reject(unattributed_, Reject::bad_magic);
    if (f.version != kVersion) return reject(unattributed_, Reject::bad_version);
    if (f.session != session_) return reject(unattributed_, Reject::foreign_session);
    if (f.dst != rank_ || f.src >= size_ || (f.src == rank_ && f.kind != Kind::reply))
      return reject(unattributed_,
                    Reject::bad_rank);  // a get's completion is delivered locally, as a reply from its target
    Peer& p = peers_[f.src];
    if (credit_frame(p, f)) return;
    if (f.handler >= kMaxHandlers || handlers_[f.handler] == nullptr) return reject(p.counters, Reject::bad_handler);
    if (f.bulk_len != 0 && (f.bulk_off > segment_bytes_ || f.bulk_len > segment_bytes_ - f.bulk_off))
      return reject(p.counters, Reject::bad_bulk);
    if (f.kind == Kind::reply) {
      if (f.flags != p.epoch) return reject(p.counters, Reject::stale_reply);
      if (p.outstanding == 0) return reject(p.counters, Reject::unexpected_reply);
      --p.outstanding;
    } else if (f.kind == Kind::oneway) {
      ++p.counters.received;
      ++p.counters.oneway_received;
      ++p.owed;
      p.ask_epoch = f.flags & kEpochMask;
      handlers_[f.handler](*this, f);
      if (f.flags & kCreditAsk) return_credits(f.src);
      return;
    } else if (f.kind != Kind::request) {
      return reject(p.counters, Reject::bad_kind);
    }
    ++p.counters.received;
    ++requests_handled_;
    handlers_[f.handler](*this, f);
  }
  // Credit frames name no handler: they are checked and counted before the handler test.
  bool credit_frame(Peer& p, const Frame& f) {
    if (f.kind != Kind::credit) return false;
    const std::uint64_t n = f.args[0];
    if ((f.flags & kEpochMask) != p.epoch) {
      reject(p.counters, Reject::stale_reply);
    } else if (n == 0 || n > static_cast<std::uint64_t>(credit_limit_)) {
      reject(p.counters, Reject::bad_credit);
    } else {
      p.credits = std::min(credit_limit_, p.credits + static_cast<int>(n));
      p.asked = false;
      ++p.counters.credit_frames;
      p.credits_returned += n;
      if (p.logging_credits && p.credit_log.size() < p.credit_log.capacity())
        p.credit_log.push_back({tsc::now(), p.credits_returned});
    }
    return true;
  }
  void return_credits(int to) {
    Peer& p = peers_[static_cast<std::size_t>(to)];
    cred_.dst = static_cast<std::uint16_t>(to);
    cred_.args[0] = p.owed;
    cred_.flags = p.ask_epoch;
    while (!net_.try_send(cred_)) stall_check();
    if constexpr (TxBatch<T>) net_.flush_sends();  // a sender waits for it
    p.owed = 0;
    ++p.counters.credit_frames_sent;
  }
  // The send of a filled one-way frame: ask for credits if due (once half or fewer remain after it,
  // unless an ask is already on its way), then try until the NI takes it. Tracking is asked again before
  // every try: a retry's progress() may run a handler whose reply or credit frame would otherwise take
  // the tracking for itself.
  template <class Try>
  std::uint64_t post_oneway(Peer& p, bool track, Try&& try_op) {
    std::uint16_t fl = p.epoch;
    if (!p.asked && p.credits - 1 <= credit_limit_ / 2) {
      fl |= kCreditAsk;
      p.asked = true;
    }
    ow_.flags = fl;
    for (;;) {
      if (track) track_next();
      if (try_op()) break;
      progress();
    }
    --p.credits;
    ++p.counters.oneway_sent;
    if constexpr (LocalCompletion<T>) {
      if (track) return net_.tx_posted();
    }
    return 0;
  }
  void track_next() {
    if constexpr (LocalCompletion<T>)
      net_.track_next();
    else
      throw UsageError("this transport cannot report local completion of a send");
  }
  static void reject(Counters& c, Reject r) { ++c.rejected[static_cast<int>(r)]; }
  void check_bulk(std::uint32_t n, std::uint32_t off, const char* op) const {
    if (n == 0 || off > segment_bytes_ || n > segment_bytes_ - off) [[unlikely]]
      bulk_misfit(n, off, op);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void bulk_misfit(std::uint32_t n, std::uint32_t off, const char* op) const {
    throw UsageError(std::string("bulk ") + op + " of " + std::to_string(n) + " bytes at offset " +
                     std::to_string(off) + " does not fit the " + std::to_string(segment_bytes_) + "-byte segment");
  }

  // poll() with its hooks (time_service, count_polls): out of line, so a plain poll tests one byte.
  static constexpr std::uint8_t kTimeService = 1, kCountPolls = 2;
  void set_poll_hook(std::uint8_t hook, bool on) {
    poll_hooks_ = static_cast<std::uint8_t>(on ? poll_hooks_ | hook : poll_hooks_ & ~hook);
  }
  [[gnu::noinline]] int instrumented_poll() {
    const std::uint64_t before = requests_handled_;
    const bool timing = poll_hooks_ & kTimeService;
    const std::uint64_t t0 = timing ? __rdtsc() : 0;
    const int n = net_.poll([this](const void* p, std::size_t len) { deliver(p, len); });
    if (timing && requests_handled_ != before) {
      const std::uint64_t k = requests_handled_ - before;
      service_requests_ += k;
      if (service_samples_.size() < service_samples_.capacity())
        service_samples_.push_back(static_cast<float>(__rdtsc() - t0) / static_cast<float>(k));
    }
    if (poll_hooks_ & kCountPolls) {
      ++poll_count_.polls;
      if (n > 0) {
        ++poll_count_.productive;
        poll_count_.frames += static_cast<std::uint64_t>(n);
      }
    }
    return n;
  }

  void progress() {
    if (poll() > 0) {
      idle_ = 0;
      losses_in_stall_ = 0;
      return;
    }
    if constexpr (TxBatch<T>) net_.flush_sends();  // about to wait: nothing of ours may wait on a batch
    if constexpr (IdleWait<T>) {
      // A sleeping endpoint reads the clock after every sleep: the watchdog must not wait 4096 of them.
      if (net_.idle_wait()) idle_ = std::max<std::uint64_t>(idle_, 4095);
    }
    if constexpr (SpinRelax<T>) net_.relax();
    stall_check();
  }
  // Nothing arrived. Only after many empty polls (microseconds) does the watchdog read the clock, so a
  // short wait on a timed path costs nothing extra.
  void stall_check() {
    if (++idle_ < 4096) return;
    idle_slow_path();
  }
  [[gnu::noinline]] void idle_slow_path() {
    const std::uint64_t now = tsc::now();
    if (idle_ == 4096) {
      idle_since_ = now;
      next_check_ = now + check_interval_cycles_;
      return;
    }
    if (now < next_check_) return;
    next_check_ = now + check_interval_cycles_;
    throw_if_interrupted();
    if (!net_.peer_alive()) throw PeerError("a peer is gone (process exited or connection closed)");
    if (loss_cycles_ && now - idle_since_ > loss_cycles_ * (1 + losses_in_stall_)) {
      // Requests, one-way requests or their replies and credits were lost. A new epoch toward each peer
      // that holds some makes any reply or credit frame still in flight stale; after this long a silent
      // peer holds nothing of ours.
      bool any = false;
      for (auto& p : peers_) {
        if (p.outstanding == 0 && p.credits != 0) continue;
        any = true;
        ++p.loss_events;
        p.lost_requests += static_cast<std::uint64_t>(p.outstanding);
        p.outstanding = 0;
        p.credits = credit_limit_;
        p.asked = false;
        p.epoch = static_cast<std::uint16_t>((p.epoch + 1) & kEpochMask);
      }
      if (any) {
        ++losses_in_stall_;
        ++loss_events_;
        return;
      }
    }
    if (timeout_cycles_ && now - idle_since_ > timeout_cycles_) {
      int unacked = 0;
      for (const auto& p : peers_) unacked += credit_limit_ - p.credits;
      throw PeerError("no message from any peer for the stall timeout (" + std::to_string(total_outstanding()) +
                      " requests outstanding, " + std::to_string(unacked) +
                      " one-way requests unacknowledged): a peer is stuck or messages were lost");
    }
  }

  T& net_;
  EndpointOptions options_;
  Frame req_, rep_, ow_, cred_;
  int credit_limit_ = 0;
  int window_;
  int rank_, size_;
  std::vector<Peer> peers_;  // indexed by rank (our own entry unused)
  Counters unattributed_;    // frames refused before their source was known
  std::uint32_t segment_bytes_;
  std::uint32_t session_;
  std::array<Handler, kMaxHandlers> handlers_;
  std::uint64_t idle_ = 0, idle_since_ = 0, next_check_ = 0;
  std::uint64_t timeout_cycles_ = 0, check_interval_cycles_ = 0, loss_cycles_ = 0;
  std::uint64_t loss_events_ = 0, losses_in_stall_ = 0;
  std::uint8_t poll_hooks_ = 0;  // kTimeService | kCountPolls
  bool poll_before_send_ = true;
  std::uint64_t requests_handled_ = 0, service_requests_ = 0;
  std::vector<float> service_samples_;  // cycles per request of each timed poll that handed one up
  double ns_per_cycle_ = 0;
  PollCount poll_count_;  // last: the fields the plain datapath reads keep their places
};

// One destination seen from an endpoint: what a single-pair method drives. A method measures a link
// (requester -> replier); the endpoint may have other peers (`--bench pairs` runs one method per
// requester, each on its own link). Holds a reference and a rank; every call is the endpoint's own.
template <class EP>
class Link {
 public:
  using Endpoint = EP;
  Link(EP& ep, int peer) : ep_(&ep), peer_(peer) {}
  EP& endpoint() const { return *ep_; }
  int peer() const { return peer_; }
  static constexpr bool has_local_completion = EP::has_local_completion;
  std::uint64_t completion_stride() const { return ep_->completion_stride(); }

  void request(std::uint16_t h, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
               std::uint64_t a3 = 0) {
    ep_->request(peer_, h, a0, a1, a2, a3);
  }
  void store(std::uint16_t h, const void* src, std::uint32_t n, std::uint32_t remote_off, std::uint64_t a0 = 0,
             std::uint64_t a1 = 0) {
    ep_->store(peer_, h, src, n, remote_off, a0, a1);
  }
  void get(std::uint16_t h, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
    ep_->get(peer_, h, remote_off, n, local_off);
  }
  std::uint64_t oneway(std::uint16_t h, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
                       std::uint64_t a3 = 0, bool track = false) {
    return ep_->oneway(peer_, h, a0, a1, a2, a3, track);
  }
  std::uint64_t oneway_store(std::uint16_t h, const void* src, std::uint32_t n, std::uint32_t remote_off,
                             std::uint64_t a0 = 0, std::uint64_t a1 = 0, bool track = false) {
    return ep_->oneway_store(peer_, h, src, n, remote_off, a0, a1, track);
  }
  void wait_local(std::uint64_t op) { ep_->wait_local(op); }
  template <class Pred>
  bool wait_until(Pred&& pred) {
    return ep_->wait_until(std::forward<Pred>(pred));
  }
  bool wait_all() { return ep_->wait_all(peer_); }
  int poll() { return ep_->poll(); }
  void count_polls(bool on) { ep_->count_polls(on); }
  const auto& poll_count() const { return ep_->poll_count(); }
  void poll_before_send(bool on) { ep_->poll_before_send(on); }
  bool polls_before_send() const { return ep_->polls_before_send(); }
  std::uint64_t loss_events() const { return ep_->loss_events(peer_); }
  void log_credits(bool on) { ep_->log_credits(peer_, on); }
  const auto& credit_log() const { return ep_->credit_log(peer_); }
  int credit_limit() const { return ep_->credit_limit(); }
  int window() const { return ep_->window(); }
  int outstanding() const { return ep_->outstanding(peer_); }
  auto& transport() const { return ep_->transport(); }
  const Counters& counters() const { return ep_->counters(peer_); }

 private:
  EP* ep_;
  int peer_;
};

}  // namespace logpb::am
