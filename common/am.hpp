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
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.hpp"
#include "errors.hpp"
#include "frame.hpp"
#include "transport.hpp"

namespace logpb::am {

struct Counters {
  std::uint64_t requests_sent = 0, replies_sent = 0, received = 0;
  std::uint64_t oneway_sent = 0, oneway_received = 0, credit_frames = 0, credit_frames_sent = 0;
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
  j = {{"requests_sent", c.requests_sent}, {"replies_sent", c.replies_sent}, {"received", c.received},
       {"oneway_sent", c.oneway_sent},     {"oneway_received", c.oneway_received},
       {"credit_frames_received", c.credit_frames}, {"credit_frames_sent", c.credit_frames_sent},
       {"rejected", rej}};
}

struct EndpointOptions {
  std::uint32_t session = 0;
  int window = 32;                  // outstanding requests allowed: the network capacity the layer enforces
  double stall_timeout_s = 10;      // no progress for this long while waiting: the peer is declared lost (0: never)
  std::uint32_t segment_bytes = 0;  // bulk lengths are checked against the receiver's segment
  // On a lossy NI (Ethernet): with requests outstanding and nothing arriving for this long, they are
  // declared lost, the window is emptied and replies still in flight become stale (0: never, for NIs
  // that do not lose messages). Methods see it through loss_events() and re-measure.
  double loss_timeout_s = 0;
  int credits = 256;  // one-way requests in flight; the transport's queues may allow fewer (max_credits)
};

// The requester's loss epoch lives in the low 15 bits of Frame::flags; the top bit of a one-way request
// asks its receiver to return credits.
inline constexpr std::uint16_t kEpochMask = 0x7fff;
inline constexpr std::uint16_t kCreditAsk = 0x8000;

template <Transport T>
class Endpoint {
 public:
  using Handler = void (*)(Endpoint&, const Frame&);

  Endpoint(T& net, const Clock& clock, const EndpointOptions& opt)
      : net_(net), options_(opt), window_(opt.window), segment_bytes_(opt.segment_bytes), session_(opt.session) {
    if (window_ < 1) throw UsageError("AM window must be at least 1");
    // Work requests are built once and only patched per send; requests and replies have their own, since
    // a reply is built inside a handler while a request may be waiting to be retried.
    Frame base{};
    base.magic = kMagic;
    base.version = kVersion;
    base.session = opt.session;
    req_ = rep_ = ow_ = cred_ = base;
    req_.kind = Kind::request;
    rep_.kind = Kind::reply;
    ow_.kind = Kind::oneway;
    cred_.kind = Kind::credit;
    credit_limit_ = opt.credits;
    if constexpr (CreditLimited<T>) credit_limit_ = std::min(credit_limit_, static_cast<int>(net.max_credits(window_)));
    if (credit_limit_ < 2)
      throw UsageError("the NI's queues leave room for " + std::to_string(credit_limit_) +
                       " one-way messages beside the window of " + std::to_string(window_) +
                       ": enlarge the queues (--ring, --rq-depth, --rx-ring) or shrink --window");
    credits_ = credit_limit_;
    timeout_cycles_ = opt.stall_timeout_s > 0 ? clock.cycles(opt.stall_timeout_s * 1e9) : 0;
    loss_cycles_ = opt.loss_timeout_s > 0 ? clock.cycles(opt.loss_timeout_s * 1e9) : 0;
    check_interval_cycles_ = clock.cycles(1e6);  // 1 ms between liveness checks while stalled
    handlers_.fill(nullptr);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  void on(std::uint16_t id, Handler h) {
    if (id == 0 || id >= kMaxHandlers) throw UsageError("handler id out of range");
    handlers_[id] = h;
  }

  // Issue a request. Stalls (polling, running replies) while the window is full or the NI is busy.
  void request(std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
               std::uint64_t a3 = 0, std::uint64_t token = 0) {
    // Like GAM's am_request, poll the network once, running a reply that has arrived (its o_r is spent
    // here: this is what bends the signature out of its send-only regime), then stall while the window
    // is full. One poll, not a drain loop: in the steady state each request meets one reply, and a
    // trailing empty poll would charge every request a cache miss on the next, still-unwritten slot.
    poll();
    while (outstanding_ >= window_) progress();
    fill(req_, handler, token, a0, a1, a2, a3);
    while (!net_.try_send(req_)) progress();
    ++outstanding_;
    ++counters_.requests_sent;
  }

  // Bulk store (Culler et al. section 4): n bytes from src land at remote_off in the peer's segment,
  // then the peer's request handler runs with f.bulk_off/bulk_len naming them (and replies).
  void store(std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
             std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0, std::uint64_t a3 = 0)
    requires BulkTransport<T>
  {
    check_bulk(n, remote_off, "store");
    poll();
    while (outstanding_ >= window_) progress();
    fill(req_, handler, 0, a0, a1, a2, a3, n, remote_off);
    while (!net_.try_store(req_, src, n, remote_off)) progress();
    ++outstanding_;
    ++counters_.requests_sent;
  }

  // Bulk get: n bytes at remote_off of the peer's segment are copied to local_off of this side's
  // segment, then `handler` runs here as a reply. No handler runs on the peer.
  void get(std::uint16_t handler, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off,
           std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0, std::uint64_t a3 = 0)
    requires BulkTransport<T>
  {
    check_bulk(n, remote_off, "get");
    check_bulk(n, local_off, "get");
    poll();
    while (outstanding_ >= window_) progress();
    fill(rep_, handler, 0, a0, a1, a2, a3, n, local_off);
    rep_.flags = req_.flags;  // the completion is a reply of the current epoch
    while (!net_.try_get(rep_, remote_off, n, local_off)) progress();
    ++outstanding_;
    ++counters_.requests_sent;
  }

  // Reply to `req` from inside its handler. Replies take no window slot; if the NI is momentarily
  // full we wait for it without dispatching, so handlers never nest.
  void reply(const Frame& req, std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0,
             std::uint64_t a2 = 0, std::uint64_t a3 = 0) {
    if (req.kind != Kind::request) throw std::logic_error("AM reply to a frame that is not a request (one-way requests get none)");
    fill(rep_, handler, req.token, a0, a1, a2, a3);
    rep_.flags = req.flags;
    while (!net_.try_send(rep_)) stall_check();
    ++counters_.replies_sent;
  }

  // Reply with n bytes of data from inside a request handler: they land at remote_off in the
  // requester's segment before its reply handler runs (a bulk reply, as a get's data returns).
  void reply_store(const Frame& req, std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
                   std::uint64_t a0 = 0, std::uint64_t a1 = 0)
    requires BulkTransport<T>
  {
    check_bulk(n, remote_off, "reply");
    if (req.kind != Kind::request) throw std::logic_error("AM reply to a frame that is not a request (one-way requests get none)");
    fill(rep_, handler, req.token, a0, a1, 0, 0, n, remote_off);
    rep_.flags = req.flags;
    while (!net_.try_store(rep_, src, n, remote_off)) stall_check();
    ++counters_.replies_sent;
  }

  // A one-way request: its handler runs on the peer and sends nothing back. Stalls (polling) while no
  // credit is left. With track, returns the operation's number for wait_local() (else 0).
  std::uint64_t oneway(std::uint16_t handler, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
                       std::uint64_t a3 = 0, bool track = false) {
    poll();
    while (credits_ == 0) progress();
    fill(ow_, handler, 0, a0, a1, a2, a3);
    return post_oneway(track, [this] { return net_.try_send(ow_); });
  }
  // A one-way bulk store: n bytes land at remote_off of the peer's segment, then its handler runs.
  std::uint64_t oneway_store(std::uint16_t handler, const void* src, std::uint32_t n, std::uint32_t remote_off,
                             std::uint64_t a0 = 0, std::uint64_t a1 = 0, bool track = false)
    requires BulkTransport<T>
  {
    check_bulk(n, remote_off, "store");
    poll();
    while (credits_ == 0) progress();
    fill(ow_, handler, 0, a0, a1, 0, 0, n, remote_off);
    return post_oneway(track, [&] { return net_.try_store(ow_, src, n, remote_off); });
  }
  // Wait (polling, dispatching) until send operation `op` (from oneway(..., track)) is locally complete:
  // its buffer is free again. Says nothing of arrival.
  void wait_local(std::uint64_t op)
    requires LocalCompletion<T>
  {
    while (net_.tx_completed() < op) progress();
  }
  static constexpr bool has_local_completion = LocalCompletion<T>;
  // The pace at which the peer consumes our one-way requests: each credit frame's arrival time and the
  // credits returned so far. Off by default; a method turns it on around a stream (one TSC read per
  // credit frame, i.e. per ~C/2 messages). The receiver consumes at the stream's bottleneck rate from its
  // first message on, whatever the sender's start-up burst, so the intervals between credit frames give
  // the steady rate; their median leaves out the interruptions of either host.
  struct CreditMark {
    std::uint64_t tsc, returned;
  };
  void log_credits(bool on) {  // on: a new log; off: stop, keeping the log for reading
    if (on) {
      credit_log_.clear();
      credit_log_.reserve(1 << 16);
    }
    logging_credits_ = on;
  }
  const std::vector<CreditMark>& credit_log() const { return credit_log_; }
  int credit_limit() const { return credit_limit_; }

  // Poll the NI once, dispatching what arrived.
  int poll() {
    return net_.poll([this](const void* p, std::size_t n) { deliver(p, n); });
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
  bool wait_all() {
    return wait_until([this] { return outstanding_ == 0; });
  }
  // How many times requests were declared lost, and how many requests that was in all.
  std::uint64_t loss_events() const { return loss_events_; }
  std::uint64_t lost_requests() const { return lost_requests_; }

  int outstanding() const { return outstanding_; }
  int window() const { return window_; }
  std::uint32_t session() const { return session_; }
  const EndpointOptions& options() const { return options_; }
  T& transport() { return net_; }
  const Counters& counters() const { return counters_; }
  void* user = nullptr;  // handlers' context

 private:
  static void fill(Frame& f, std::uint16_t handler, std::uint64_t token, std::uint64_t a0, std::uint64_t a1,
                   std::uint64_t a2, std::uint64_t a3, std::uint32_t bulk_len = 0, std::uint32_t bulk_off = 0) {
    f.handler = handler;
    f.bulk_len = bulk_len;
    f.bulk_off = bulk_off;
    f.token = token;
    f.args[0] = a0;
    f.args[1] = a1;
    f.args[2] = a2;
    f.args[3] = a3;
  }

  void deliver(const void* p, std::size_t n) {
    if (n < sizeof(Frame)) return reject(Reject::short_frame);
    const Frame& f = *static_cast<const Frame*>(p);
    if (f.magic != kMagic) return reject(Reject::bad_magic);
    if (f.version != kVersion) return reject(Reject::bad_version);
    if (f.session != session_) return reject(Reject::foreign_session);
    if (credit_frame(f)) return;
    if (f.handler >= kMaxHandlers || handlers_[f.handler] == nullptr) return reject(Reject::bad_handler);
    if (f.bulk_len != 0 && (f.bulk_off > segment_bytes_ || f.bulk_len > segment_bytes_ - f.bulk_off))
      return reject(Reject::bad_bulk);
    if (f.kind == Kind::reply) {
      if (f.flags != req_.flags) return reject(Reject::stale_reply);
      if (outstanding_ == 0) return reject(Reject::unexpected_reply);
      --outstanding_;
    } else if (f.kind == Kind::oneway) {
      ++counters_.received;
      ++counters_.oneway_received;
      ++owed_;
      ask_epoch_ = f.flags & kEpochMask;
      handlers_[f.handler](*this, f);
      if (f.flags & kCreditAsk) return_credits();
      return;
    } else if (f.kind != Kind::request) {
      return reject(Reject::bad_kind);
    }
    ++counters_.received;
    handlers_[f.handler](*this, f);
  }
  // Credit frames name no handler: they are checked and counted before the handler test.
  bool credit_frame(const Frame& f) {
    if (f.kind != Kind::credit) return false;
    const std::uint64_t n = f.args[0];
    if ((f.flags & kEpochMask) != (req_.flags & kEpochMask)) {
      reject(Reject::stale_reply);
    } else if (n == 0 || n > static_cast<std::uint64_t>(credit_limit_)) {
      reject(Reject::bad_credit);
    } else {
      credits_ = std::min(credit_limit_, credits_ + static_cast<int>(n));
      asked_ = false;
      ++counters_.credit_frames;
      credits_returned_ += n;
      if (logging_credits_ && credit_log_.size() < credit_log_.capacity())
        credit_log_.push_back({tsc::now(), credits_returned_});
    }
    return true;
  }
  void return_credits() {
    cred_.args[0] = owed_;
    cred_.flags = static_cast<std::uint16_t>(ask_epoch_);
    while (!net_.try_send(cred_)) stall_check();
    owed_ = 0;
    ++counters_.credit_frames_sent;
  }
  std::uint16_t credit_flags() {
    // Ask for credits once half or fewer remain after this request, unless an ask is already on its way.
    std::uint16_t fl = static_cast<std::uint16_t>(req_.flags & kEpochMask);
    if (!asked_ && credits_ - 1 <= credit_limit_ / 2) {
      fl |= kCreditAsk;
      asked_ = true;
    }
    return fl;
  }
  // The send of a filled one-way frame: ask for credits if due, then try until the NI takes it. Tracking
  // is asked again before every try: a retry's progress() may run a handler whose reply or credit frame
  // would otherwise take the tracking for itself.
  template <class Try>
  std::uint64_t post_oneway(bool track, Try&& try_op) {
    ow_.flags = credit_flags();
    for (;;) {
      if (track) track_next();
      if (try_op()) break;
      progress();
    }
    --credits_;
    ++counters_.oneway_sent;
    if constexpr (LocalCompletion<T>) {
      if (track) return net_.tx_posted();
    }
    return 0;
  }
  void track_next() {
    if constexpr (LocalCompletion<T>) net_.track_next();
    else throw UsageError("this transport cannot report local completion of a send");
  }
  void reject(Reject r) { ++counters_.rejected[static_cast<int>(r)]; }
  void check_bulk(std::uint32_t n, std::uint32_t off, const char* op) const {
    if (n == 0 || off > segment_bytes_ || n > segment_bytes_ - off)
      throw UsageError(std::string("bulk ") + op + " of " + std::to_string(n) + " bytes at offset " +
                       std::to_string(off) + " does not fit the " + std::to_string(segment_bytes_) + "-byte segment");
  }

  void progress() {
    if (poll() > 0) {
      idle_ = 0;
      losses_in_stall_ = 0;
      return;
    }
    if constexpr (IdleWait<T>) {
      // A sleeping endpoint reads the clock after every sleep: the watchdog must not wait 4096 of them.
      net_.idle_wait();
      idle_ = std::max<std::uint64_t>(idle_, 4095);
    }
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
    if (!net_.peer_alive()) throw PeerError("the peer is gone (process exited or connection closed)");
    if (loss_cycles_ && (outstanding_ > 0 || credits_ == 0) && now - idle_since_ > loss_cycles_ * (1 + losses_in_stall_)) {
      // Requests, one-way requests or their replies and credits were lost. A new epoch makes any reply
      // or credit frame still in flight stale; after this long a silent peer holds nothing of ours.
      ++losses_in_stall_;
      ++loss_events_;
      lost_requests_ += static_cast<std::uint64_t>(outstanding_);
      outstanding_ = 0;
      credits_ = credit_limit_;
      asked_ = false;
      req_.flags = static_cast<std::uint16_t>((req_.flags + 1) & kEpochMask);
      return;
    }
    if (timeout_cycles_ && now - idle_since_ > timeout_cycles_)
      throw PeerError("no message from the peer for the stall timeout (" + std::to_string(outstanding_) +
                      " requests outstanding, " + std::to_string(credit_limit_ - credits_) +
                      " one-way requests unacknowledged): the peer is stuck or messages were lost");
  }

  T& net_;
  EndpointOptions options_;
  Frame req_, rep_, ow_, cred_;
  int credit_limit_ = 0, credits_ = 0;
  bool asked_ = false;
  bool logging_credits_ = false;
  std::uint64_t credits_returned_ = 0;
  std::vector<CreditMark> credit_log_;
  std::uint64_t owed_ = 0;
  std::uint16_t ask_epoch_ = 0;
  int window_;
  int outstanding_ = 0;
  std::uint32_t segment_bytes_;
  std::uint32_t session_;
  std::array<Handler, kMaxHandlers> handlers_;
  Counters counters_;
  std::uint64_t idle_ = 0, idle_since_ = 0, next_check_ = 0;
  std::uint64_t timeout_cycles_ = 0, check_interval_cycles_ = 0, loss_cycles_ = 0;
  std::uint64_t loss_events_ = 0, lost_requests_ = 0, losses_in_stall_ = 0;
};

}  // namespace logpb::am
