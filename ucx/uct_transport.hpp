// UCT datapath: the AM layer over one UCT interface, one endpoint per peer (ucx/uct_connect.hpp opens
// them). This is the rung of UCX's stack ucx_perftest's -t am_lat measures: no protocol choice, no
// matching, the transport's own send calls.
//
//  - A small AM is uct_ep_am_short (8 bytes of header, the frame's other 56 as payload) when the interface
//    takes 64 bytes short, else uct_ep_am_bcopy. Both return complete: the frame was copied.
//  - A store whose frame and payload fit am_bcopy is one am_bcopy. A larger one goes by put into the peer's
//    segment (put_bcopy, else put_zcopy from the segment or a registered staging copy), then uct_ep_fence
//    and the frame, where the interface has put and the peer's segment a remote key; on the bulk interface
//    (--ucx-bulk-tl, e.g. cma) the frame follows once the put completed. Otherwise it goes as am_bcopy data
//    messages (seq kChunk, landed and never delivered), a fence, and the frame.
//  - A get is get_bcopy or get_zcopy into the segment; its completion delivers the frame locally.
// An operation the interface has no resources for now (UCS_ERR_NO_RESOURCE at its first call) returns
// false and the AM layer polls and retries; once its first call was taken, the rest waits for resources.
//
// Receives: UCT calls our AM handler from uct_worker_progress with the message; it lands in the Inbox
// (ucx/transport.hpp) and poll() hands it up. Local completion: short and bcopy calls complete in the
// call; zcopy puts and gets hold an Ops slot until their uct_completion_t fires.
#pragma once

#include <uct/api/uct.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/frame.hpp"
#include "ucx/transport.hpp"

namespace logpb::ucx {

struct UctPeer {
  uct_ep_h ep = nullptr;       // on the AM interface (null: not a peer)
  uct_ep_h bulk_ep = nullptr;  // on the bulk interface, or the AM one
  std::uint64_t segment_addr = 0;
  uct_rkey_t rkey = UCT_INVALID_RKEY;  // the peer's segment on the bulk interface's memory domain
  bool rma = false;                    // rkey is valid: puts and gets reach the peer's segment
};

// What the interface can do, from uct_iface_query, as the datapath uses it.
struct UctCaps {
  std::size_t am_short = 0, am_bcopy = 0;                                  // largest message, header included (0: none)
  std::size_t put_bcopy = 0, put_zcopy = 0, get_bcopy = 0, get_zcopy = 0;  // of the bulk interface
  bool bulk_same_iface = true;  // puts on the AM interface itself: a fence orders the frame after them
};

struct UctSetup {
  int rank = 0, size = 0;
  uct_worker_h worker = nullptr;
  UctCaps caps;
  std::byte* segment = nullptr;
  std::uint32_t segment_bytes = 0;
  uct_mem_h segment_memh = UCT_MEM_HANDLE_NULL;  // for zcopy from or into the segment
  std::byte* staging = nullptr;                  // a registered copy area for put_zcopy of outside data
  uct_mem_h staging_memh = UCT_MEM_HANDLE_NULL;
  std::function<bool()> peer_alive;
  bool yield_when_idle = false;
};

struct UctCounters {
  std::uint64_t shorts = 0, bcopies = 0, puts = 0, fences = 0, gets = 0, chunks = 0, no_resource = 0, medium_stores = 0,
                bulk_stores = 0, staged = 0;
};

class UctTransport : public Datapath<UctTransport, UctPeer> {
 public:
  explicit UctTransport(UctSetup s);

  // UCT's AM handler (registered by the control path with this transport as its argument).
  static ucs_status_t on_am(void* arg, void* data, std::size_t length, unsigned flags);
  // UCT's interface error handler (uct_iface_params_t::err_handler; its argument the connection's
  // UctTransport* slot, null before the transport exists and after it is gone): an endpoint failed, its
  // peer lost (a tcp connection reset, RC's retries or UD's timeout spent). Noted, and thrown once the
  // progress call returns, as a lost peer (exit 3), where UCX would otherwise leave it to the bootstrap
  // or the watchdog (or, on UD, abort the process).
  static ucs_status_t on_iface_error(void* arg, uct_ep_h ep, ucs_status_t status);

  bool try_send(const am::Frame& f) {
    const UctPeer& p = peer(f.dst);
    if (!send_frame(p, f, tx_seq_)) return false;
    ++tx_seq_;
    ops_.complete_now();
    return true;
  }
  bool try_store(const am::Frame& f, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool try_get(const am::Frame& f, std::uint32_t remote_off, std::uint32_t n, std::uint32_t local_off);

  void progress() {
    progress_by("uct_worker_progress", [this] { uct_worker_progress(worker_); });
  }
  nlohmann::json describe() const;
  const UctCounters& counters() const { return counters_; }

 private:
  // One frame alone, sent as `f` with `seq` in its seq field: am_short where 64 bytes fit, else am_bcopy.
  // False: no resources now (progressed). am_short's 8-byte header is the frame's first 8 bytes, seq's low
  // half of it (x86 is little-endian), so the frame is sent from where it is, not copied to patch seq.
  bool send_frame(const UctPeer& p, const am::Frame& f, std::uint32_t seq) {
    static_assert(offsetof(am::Frame, seq) == 0 && sizeof(am::Frame::seq) == 4);
    if (caps_.am_short >= sizeof(am::Frame)) [[likely]] {
      std::uint64_t header;
      std::memcpy(&header, &f, sizeof header);
      header = (header & ~std::uint64_t{0xffffffff}) | seq;
      guard_.enter("uct_ep_am_short");
      const ucs_status_t s =
          uct_ep_am_short(p.ep, kAmId, header, reinterpret_cast<const std::byte*>(&f) + 8, sizeof f - sizeof header);
      guard_.leave();
      if (s == UCS_OK) [[likely]] {
        ++counters_.shorts;
        return true;
      }
      return no_resource(s, "uct_ep_am_short");
    }
    alignas(64) am::Frame out = f;
    out.seq = seq;
    return send_bcopy(p, out, nullptr, 0);
  }
  // The frame and n bytes of payload in one am_bcopy.
  bool send_bcopy(const UctPeer& p, const am::Frame& out, const void* payload, std::uint32_t n);
  // UCS_ERR_NO_RESOURCE: progress and say false, so the AM layer polls and retries; anything else ends the run.
  bool no_resource(ucs_status_t s, const char* call);
  bool store_put(const UctPeer& p, am::Frame& out, const void* src, std::uint32_t n, std::uint32_t remote_off);
  bool store_chunks(const UctPeer& p, am::Frame& out, const void* src, std::uint32_t n);
  // The rest of an operation whose first call the interface took: its later calls wait for resources by
  // progressing (only frames land meanwhile; no handler runs), with the job's liveness checked.
  template <class Call>
  void until_taken(Call&& call, const char* what);
  // uct_completion_t for a call that may stay in flight: a put's part of an operation (slot), or a get's
  // piece (the frame to deliver once every piece is in).
  struct Get {
    am::Frame frame;
    int pending = 0;
  };
  struct Completion {
    uct_completion_t c;
    UctTransport* self;
    Ops::Slot* slot;
    Get* get;
  };
  Completion* take_completion(Ops::Slot* slot, Get* get);
  void give_back(Completion* c) { free_completions_.push_back(c); }
  static void on_done(uct_completion_t* c);
  void get_piece_done(Get* g);

  uct_worker_h worker_;
  UctCaps caps_;
  uct_mem_h segment_memh_;
  std::byte* staging_;
  uct_mem_h staging_memh_;
  std::vector<std::unique_ptr<Completion>> completions_;
  std::vector<Completion*> free_completions_;
  std::vector<std::unique_ptr<Get>> gets_;
  std::vector<Get*> free_gets_;
  UctCounters counters_;
};

}  // namespace logpb::ucx
