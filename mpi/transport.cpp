#include "mpi/transport.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/errors.hpp"

namespace logpb::mpi {

std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  return std::string(text, static_cast<std::size_t>(len)) + " (error class " + std::to_string(cls) + ")";
}

void fail_datapath(int rc, const char* call) {
  throw PeerError(std::string(call) + " failed: " + error_text(rc) +
                  " (the job's MPI communication broke; a rank may be gone)");
}

void fail_setup(int rc, const char* call, const char* what_to_check) {
  std::string m = std::string(call) + " failed: " + error_text(rc);
  if (what_to_check && *what_to_check) m += "; " + std::string(what_to_check);
  throw std::runtime_error(m);
}

Transport::Transport(MPI_Comm comm, MPI_Win win, std::byte* segment, const TransportOptions& opt,
                     std::function<bool()> peer_alive)
    : comm_(comm),
      win_(win),
      bulk_(opt.bulk),
      send_(opt.send),
      recv_(opt.recv),
      segment_(segment),
      segment_bytes_(opt.segment_bytes),
      inline_(std::min(opt.inline_bytes, opt.segment_bytes)),
      compact_(opt.frame == FrameMode::compact),
      session_(opt.session),
      peer_alive_(std::move(peer_alive)),
      burst_(opt.burst),
      yield_when_idle_(opt.yield_when_idle) {
  if (opt.tx_pool < 2 || (opt.tx_pool & (opt.tx_pool - 1)))
    throw UsageError("the MPI send pool must be a power of two of at least 2");
  if (opt.rx_ring < 2) throw UsageError("the MPI receive ring needs at least 2 receives");
  if (bulk_ == BulkMode::put && win_ == MPI_WIN_NULL) throw std::logic_error("MPI put bulk without a window");
  check_setup(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_setup(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  if (opt.source == SourceMode::auto_ && size_ == 2) from_ = 1 - rank_;  // the AM layer sends to no rank itself
  // Put mode moves every payload by RMA: its messages are frames alone.
  const std::size_t msg = sizeof(am::Frame) + (bulk_ == BulkMode::send ? inline_ : 0);
  const std::size_t lines = (msg + sizeof(Line) - 1) / sizeof(Line);
  tx_n_ = static_cast<std::uint64_t>(opt.tx_pool);
  tx_mask_ = tx_n_ - 1;
  tx_lines_ = lines;
  tx_store_.resize(tx_n_ * lines);
  tx_op_.assign(tx_n_, 0);
  tx_reqs_.assign(tx_n_, MPI_REQUEST_NULL);
  tx_done_idx_.resize(tx_n_);
  rx_n_ = opt.rx_ring;
  rx_lines_ = lines;
  rx_stride_ = lines * sizeof(Line);
  rx_store_.resize(static_cast<std::size_t>(rx_n_) * lines);
  if (recv_ == RecvMode::recv) {
    stash_.resize(static_cast<std::size_t>(rx_n_));
    return;  // nothing is posted ahead
  }
  rx_reqs_.assign(static_cast<std::size_t>(rx_n_), MPI_REQUEST_NULL);
  for (int i = 0; i < rx_n_; ++i)
    check_setup(MPI_Irecv(rx_buf(static_cast<std::size_t>(i)), static_cast<int>(rx_stride_), MPI_BYTE, from_, kTagAm,
                          comm_, &rx_reqs_[static_cast<std::size_t>(i)]),
                "MPI_Irecv (pre-posting the receive ring)");
}

Transport::~Transport() {
  // Called after the job's last barrier (or on an error): receives still posted are cancelled; sends
  // are left to complete on their own (a peer that is gone never takes them).
  for (auto& r : rx_reqs_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  if (wait_req_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&wait_req_);
    MPI_Request_free(&wait_req_);
  }
  for (auto& r : tx_reqs_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  for (auto& l : local_)
    if (l.req != MPI_REQUEST_NULL) {
      MPI_Cancel(&l.req);
      MPI_Request_free(&l.req);
    }
}

// A blocking-mode send under --mpi-recv recv: wait for it while taking in what the peers send meanwhile
// (one probed message per turn, into the stash, while it has room), so that two ranks blocked sending to
// each other both proceed. A peer that is gone, or an interrupt, ends the wait.
void Transport::wait_stashing(MPI_Request& r, int dst) {
  for (std::uint64_t spins = 0;; ++spins) {
    int flag = 0;
    check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test (blocking send)");
    if (flag) return;
    if (stash_one(false)) ++counters_.stashed;
    if ((spins & 0xffff) == 0xffff) {
      throw_if_interrupted();
      if (!peer_alive_())
        throw PeerError("rank " + std::to_string(dst) + " is gone before a blocking send to it completed");
    }
  }
}

bool Transport::stash_one(bool may_post) {
  const std::size_t cap = static_cast<std::size_t>(rx_n_);
  if (stash_tail_ - stash_head_ >= cap) return false;
  const std::size_t i = stash_tail_ % cap;
  int flag = 0;
  MPI_Status st;
  if (wait_req_ == MPI_REQUEST_NULL && may_post)
    check(MPI_Irecv(rx_buf(i), static_cast<int>(rx_stride_), MPI_BYTE, from_, kTagAm, comm_, &wait_req_),
          "MPI_Irecv (recv mode)");
  if (wait_req_ != MPI_REQUEST_NULL) {
    check(MPI_Test(&wait_req_, &flag, &st), "MPI_Test (recv mode)");
    if (!flag) return false;
  } else {
    MPI_Message msg;
    check(MPI_Improbe(from_, kTagAm, comm_, &flag, &msg, &st), "MPI_Improbe");
    if (!flag) return false;
    check(MPI_Mrecv(rx_buf(i), static_cast<int>(rx_stride_), MPI_BYTE, &msg, &st), "MPI_Mrecv");
  }
  stash_[i].source = st.MPI_SOURCE;
  MPI_Get_count(&st, MPI_BYTE, &stash_[i].bytes);
  ++stash_tail_;
  return true;
}

bool Transport::reap_all() {
  if (tx_head_ == tx_tail_) return true;
  int done = 0;
  check(MPI_Testsome(static_cast<int>(tx_n_), tx_reqs_.data(), &done, tx_done_idx_.data(), MPI_STATUSES_IGNORE),
        "MPI_Testsome (send pool)");
  while (tx_head_ != tx_tail_ && tx_reqs_[tx_head_ & tx_mask_] == MPI_REQUEST_NULL) ++tx_head_;
  if (tx_full()) ++counters_.tx_pool_full;
  return !tx_full();
}

bool Transport::expand(std::byte* msg, int source, int bytes) {
  Compact c;
  if (bytes < compact_bytes(0) || bytes > static_cast<int>(sizeof c) || bytes % 8) return false;
  // All of Compact, whatever was sent: the buffer holds a frame at least, and only the argument words sent
  // are read. A copy of fixed size is a few moves; one of `bytes` is a call into the C library.
  std::memcpy(&c, msg, sizeof c);
  const int nargs = c.kind_nargs >> 4;
  const unsigned kind = c.kind_nargs & 0xfu;
  if (compact_bytes(nargs) != bytes || kind < 1 || kind > static_cast<unsigned>(am::Kind::credit)) return false;
  am::Frame f{};
  f.magic = am::kMagic;
  f.version = am::kVersion;
  f.kind = static_cast<am::Kind>(kind);
  f.session = session_;
  f.src = static_cast<std::uint16_t>(source);
  f.dst = static_cast<std::uint16_t>(rank_);
  f.handler = c.handler;
  f.flags = c.flags;
  f.token = c.token;
  for (int k = 0; k < nargs; ++k) f.args[k] = c.args[k];
  std::memcpy(msg, &f, sizeof f);
  ++counters_.compact_received;
  return true;
}

bool Transport::accept(std::byte* msg, int source, int bytes) {
  const am::Frame& f = *reinterpret_cast<const am::Frame*>(msg);
  const int frame = static_cast<int>(sizeof(am::Frame));
  if (bytes < frame && expand(msg, source, bytes)) return true;
  // Only this job's ranks can send here; a message shorter than a frame, or whose frame lies about its
  // source, is dropped before the AM layer's own validation (which checks everything else).
  if (bytes < frame || f.src != source) [[unlikely]] {
    ++counters_.short_messages;
    return false;
  }
  if (f.seq == kGetRequest) [[unlikely]] {
    if (bytes != frame) {
      ++counters_.short_messages;
      return false;
    }
    serve_get(f, source);
    return false;
  }
  if (bytes > frame) {
    // An inline payload: the message is the frame and exactly its bulk_len bytes. Out of the segment,
    // nothing is copied and the AM layer refuses the frame (bad_bulk).
    if (bulk_ != BulkMode::send || static_cast<std::uint32_t>(bytes - frame) != f.bulk_len) [[unlikely]] {
      ++counters_.short_messages;
      return false;
    }
    if (f.bulk_off <= segment_bytes_ && f.bulk_len <= segment_bytes_ - f.bulk_off) [[likely]]
      std::memcpy(segment_ + f.bulk_off, msg + frame, f.bulk_len);
    else
      ++counters_.bad_bulk;
    return true;
  }
  if (f.bulk_len) {
    if (bulk_ == BulkMode::send)
      receive_store(f, source);
    else
      check(MPI_Win_sync(win_), "MPI_Win_sync");  // the put is complete (flushed): make it visible here
  }
  return true;
}

// The data of a two-sided store from `src` is the next kTagStore message from it (sent before its frame;
// messages of one source and tag arrive in order). The AM frame is delivered once it is in the segment.
void Transport::receive_store(const am::Frame& f, int src) {
  if (f.bulk_off > segment_bytes_ || f.bulk_len > segment_bytes_ - f.bulk_off) [[unlikely]] {
    // Consumed into scratch so the next store's data is not taken for this one; the AM layer then
    // refuses the frame (bad_bulk).
    ++counters_.bad_bulk;
    MPI_Message msg;
    MPI_Status st;
    check(MPI_Mprobe(src, kTagStore, comm_, &msg, &st), "MPI_Mprobe (store data)");
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    std::vector<std::byte> scratch(static_cast<std::size_t>(std::max(bytes, 1)));
    check(MPI_Mrecv(scratch.data(), bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv (store data)");
    return;
  }
  MPI_Request req;
  check(MPI_Irecv(segment_ + f.bulk_off, static_cast<int>(f.bulk_len), MPI_BYTE, src, kTagStore, comm_, &req),
        "MPI_Irecv (store data)");
  int flag = 0;
  for (std::uint64_t spins = 0;; ++spins) {
    check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test (store data)");
    if (flag) return;
    if ((spins & 0xffff) == 0xffff) {
      throw_if_interrupted();
      if (!peer_alive_()) throw PeerError("rank " + std::to_string(src) + " is gone before its store's data arrived");
    }
  }
}

void Transport::serve_get(const am::Frame& req, int src) {
  ++counters_.gets_served;
  const bool ok = req.bulk_off <= segment_bytes_ && req.bulk_len <= segment_bytes_ - req.bulk_off;
  if (!ok) ++counters_.bad_bulk;  // answered with no data: the requester drops the completion
  while (tx_full() && !reap_all()) {
  }
  post(tx_tail_ & tx_mask_, segment_ + (ok ? req.bulk_off : 0), ok ? static_cast<int>(req.bulk_len) : 0, src, kTagGet,
       false, SendMode::isend);
}

bool Transport::local_data_arrived(LocalFrame& l) {
  int flag = 0;
  MPI_Status st;
  check(MPI_Test(&l.req, &flag, &st), "MPI_Test (get data)");
  if (!flag) return false;
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  if (static_cast<std::uint32_t>(bytes) != l.frame.bulk_len) {
    l.bad = true;
    ++counters_.bad_bulk;
  }
  return true;
}

bool Transport::try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off) {
  const int frame = static_cast<int>(sizeof(am::Frame));
  int bytes = frame;
  if (bulk_ == BulkMode::send && n <= inline_) {
    // One message: the frame and its payload behind it.
    if (tx_full() && !reap_all()) return false;
    std::memcpy(tx_buf(tx_tail_ & tx_mask_) + frame, src, n);
    bytes += static_cast<int>(n);
    ++counters_.inline_stores;
  } else if (bulk_ == BulkMode::send) {
    // The data first, as a message of its own (by MPI_Isend: see the file comment), then the frame.
    if (tx_free() < 2 && (reap_all(), tx_free() < 2)) return false;
    post(tx_tail_ & tx_mask_, src, static_cast<int>(n), f.dst, kTagStore, false, SendMode::isend);
    tx_op_[(tx_tail_ - 1) & tx_mask_] = ops_ + 1;  // the data belongs to this store
  } else {
    if (tx_full() && !reap_all()) return false;
    check(MPI_Put(src, static_cast<int>(n), MPI_BYTE, f.dst, static_cast<MPI_Aint>(remote_off), static_cast<int>(n),
                  MPI_BYTE, win_),
          "MPI_Put");
    check(MPI_Win_flush(f.dst, win_), "MPI_Win_flush (after MPI_Put)");
  }
  send_frame(f, bytes);
  ++counters_.tx;
  ++counters_.bulk_stores;
  return true;
}

bool Transport::try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off) {
  if (local_n_ == kLocal) return false;  // completions not yet delivered: poll first
  LocalFrame& l = local_[local_tail_ & (kLocal - 1)];
  const int owner = f.src;
  if (bulk_ == BulkMode::send) {
    if (tx_full() && !reap_all()) return false;
    check(MPI_Irecv(segment_ + local_off, static_cast<int>(n), MPI_BYTE, owner, kTagGet, comm_, &l.req),
          "MPI_Irecv (get data)");
    const std::uint64_t i = tx_tail_ & tx_mask_;
    am::Frame& out = tx_frame(i);
    out = f;
    out.seq = kGetRequest;
    out.src = static_cast<std::uint16_t>(rank_);
    out.dst = static_cast<std::uint16_t>(owner);
    out.bulk_off = remote_off;
    out.bulk_len = n;
    post(i, &out, static_cast<int>(sizeof(am::Frame)), owner, kTagAm, true, send_);
    ++counters_.tx;
  } else {
    check(MPI_Get(segment_ + local_off, static_cast<int>(n), MPI_BYTE, owner, static_cast<MPI_Aint>(remote_off),
                  static_cast<int>(n), MPI_BYTE, win_),
          "MPI_Get");
    check(MPI_Win_flush(owner, win_), "MPI_Win_flush (after MPI_Get)");
    l.req = MPI_REQUEST_NULL;
  }
  l.frame = f;
  l.bad = false;
  ++local_tail_;
  ++local_n_;
  ++counters_.bulk_gets;
  return true;
}

namespace {
// A compact AM's sizes on the wire, as a map from bytes to sends (only the sizes sent).
nlohmann::json compact_histogram(const Counters& c) {
  nlohmann::json h = nlohmann::json::object();
  for (std::size_t k = 0; k < c.compact_sent_by_args.size(); ++k)
    if (c.compact_sent_by_args[k]) h[std::to_string(compact_bytes(static_cast<int>(k)))] = c.compact_sent_by_args[k];
  return h;
}
// The compact sends, counted or (bytes) summed over their sizes.
std::uint64_t compact_total(const Counters& c, bool bytes) {
  std::uint64_t t = 0;
  for (std::size_t k = 0; k < c.compact_sent_by_args.size(); ++k)
    t += c.compact_sent_by_args[k] * (bytes ? static_cast<std::uint64_t>(compact_bytes(static_cast<int>(k))) : 1);
  return t;
}
// The size most compact sends had: a ping-pong's own message, where a few control AMs carry argument words.
nlohmann::json most_common_compact(const Counters& c) {
  const auto& by = c.compact_sent_by_args;
  const auto top = std::max_element(by.begin(), by.end());
  if (*top == 0) return nullptr;
  return compact_bytes(static_cast<int>(top - by.begin()));
}
}  // namespace

nlohmann::json Transport::describe() const {
  const Counters& c = counters_;
  const bool blocking = send_ == SendMode::send || send_ == SendMode::ssend;
  const std::string small_send_then_isend = "MPI_Send up to " + std::to_string(kSurelyEager) +
                                            " bytes (eager everywhere); larger: MPI_Isend, then MPI_Test until "
                                            "complete, stashing arrivals";
  const std::string small_send_else_pool =
      "MPI_Send up to " + std::to_string(kSurelyEager) + " bytes (eager everywhere); larger: MPI_Isend from the pool";
  const char* send_call =
      send_ == SendMode::auto_   ? small_send_else_pool.c_str()
      : send_ == SendMode::isend ? "MPI_Isend"
      : recv_ == RecvMode::irecv
          ? (send_ == SendMode::send ? "MPI_Send" : "MPI_Ssend")
          : (send_ == SendMode::send ? small_send_then_isend.c_str()
                                     : "MPI_Issend, then MPI_Test until complete, stashing arrivals");
  return {
      {"kind", "mpi"},
      {"rank", rank_},
      {"size", size_},
      {"mpi_send", to_string(send_)},
      {"mpi_recv", to_string(recv_)},
      {"receive_from", receive_from()},
      {"inline_bytes", bulk_ == BulkMode::send ? inline_ : 0},
      {"frame", to_string(compact_ ? FrameMode::compact : FrameMode::full)},
      // What a small AM without payload put on the wire: a number, for scripts that set a bare message
      // beside it (scripts/mpi-vs-bare), so that no script guesses it from the options.
      {"small_am_bytes", !compact_ ? nlohmann::json(sizeof(am::Frame)) : most_common_compact(c)},
      {"small_am_rule", compact_
                            ? "the size of this rank's most frequent compact send (counters.compact_sent_by_bytes; "
                              "8 + 8 per argument word up to the last nonzero one, null when none)"
                            : "the 64-byte frame"},
      {"message", bulk_ == BulkMode::send
                      ? "one MPI message per AM: the 64-byte frame with a payload of up to inline_bytes behind it; "
                        "a larger payload is a message of its own (by MPI_Isend), sent before its frame and "
                        "received straight into the segment; under frame compact, an AM without payload is an "
                        "8-byte header and its argument words up to the last nonzero one"
                      : "one MPI message per AM frame; payloads by RMA"},
      {"send_call", send_call},
      {"receive",
       recv_ == RecvMode::irecv
           ? "a ring of pre-posted MPI_Irecv (from receive_from); MPI_Test on its head, which fills in posting order"
           : "nothing posted ahead: a poll that finds nothing posts one MPI_Irecv (of receive_from) and tests it until "
             "it completes, as MPI_Recv (MPI_Irecv + MPI_Wait) does; after a poll has handed a message up, and while "
             "a blocking send waits, MPI_Improbe + MPI_Mrecv take what is there and post nothing"},
      {"bulk", to_string(bulk_)},
      {"bulk_how",
       bulk_ == BulkMode::put
           ? "MPI_Put/MPI_Get + MPI_Win_flush in one passive-target epoch (MPI_Win_lock_all), then the AM frame"
           : "two-sided: inline in the frame's message up to inline_bytes, beyond that a message of its own"},
      {"rx_ring", rx_n_},
      {"tx_pool", tx_n_},
      {"burst", burst_},
      {"send_pool_reaping", blocking ? "none needed: a blocking send is complete when it returns"
                                     : "MPI_Testsome over the pool's MPI_Isends when it is full or local "
                                       "completion is asked"},
      {"local_completion",
       blocking ? std::string("the send call has returned (") + send_call + ")"
                : std::string(send_ == SendMode::auto_ ? "an MPI_Send that has returned, or " : "") +
                      "an MPI_Isend that MPI_Test/MPI_Testsome reports complete (its buffer may be reused)"},
      {"segment_bytes", segment_bytes_},
      {"counters",
       {{"tx", c.tx},
        {"tx_pool_full", c.tx_pool_full},
        {"rx", c.rx},
        {"delivered", c.delivered},
        {"bulk_stores", c.bulk_stores},
        {"inline_stores", c.inline_stores},
        {"compact_sent", compact_total(c, false)},
        {"compact_received", c.compact_received},
        {"compact_bytes_sent", compact_total(c, true)},
        {"compact_sent_by_bytes", compact_histogram(c)},
        {"bulk_gets", c.bulk_gets},
        {"gets_served", c.gets_served},
        {"stashed", c.stashed},
        {"bad_bulk", c.bad_bulk},
        {"short_or_forged", c.short_messages},
        {"tracked", c.tracked}}}};
}

}  // namespace logpb::mpi
