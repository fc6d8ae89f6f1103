// The MPI transport's part of the command line (Kielmann et al.'s LogP/MPI send and receive modes, and
// one-sided bulk), and what the transport is configured with. Free of mpi.h: the command line is read,
// and --help lists the section, on builds without MPI too.
#pragma once

#include <cstdint>
#include <string>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

namespace logpb::mpi {

enum class BulkMode { send, put };
BulkMode parse_bulk_mode(const std::string& s);  // UsageError for anything but send|put
const char* to_string(BulkMode m);
// auto: MPI_Send for a message of at most kSurelyEager bytes, MPI_Isend from the pool beyond: what a
// request/reply program over MPI sends with (a blocking send where it cannot block, a nonblocking one where
// it could). send, isend and ssend are LogP/MPI's modes, every message by that call.
enum class SendMode { send, isend, ssend, auto_ };
SendMode parse_send_mode(const std::string& s);  // UsageError for anything but auto|send|isend|ssend
const char* to_string(SendMode m);
enum class RecvMode { recv, irecv };
// Whom a receive names. auto: the other rank in a job of two (every message comes from it), MPI_ANY_SOURCE
// in a larger one; any: MPI_ANY_SOURCE always. A two-rank MPI program names its peer, and Open MPI (ob1)
// matches an arrival against its source's posted receives and the wildcard ones both. What the wildcard
// costs is within this VM's noise (the transport-shaped bare loop, vader, 64 B, slow state, three runs
// each in two sessions: ANY_SOURCE 992-1042 and 971-991 ns, the peer 972-1012 and 951-1011).
enum class SourceMode { auto_, any };
SourceMode parse_source_mode(const std::string& s);  // UsageError for anything but auto|any
const char* to_string(SourceMode m);
RecvMode parse_recv_mode(const std::string& s);  // UsageError for anything but recv|irecv
const char* to_string(RecvMode m);

// How a small AM without payload travels. compact: only what MPI's envelope and the job do not already
// say: an 8-byte header (kind, handler, flags, token) and the argument words up to the last nonzero one,
// 8 to 40 bytes; magic, version, session, source and destination are MPI's communicator and source, and
// are filled in on arrival. full: the 64-byte frame, as every other transport sends it. Over vader, in
// the 2-core AMD VM's slow state, a message of 16-64 B costs a round trip 135 ns more than one of 8 B
// (the bare loop: 0 B 715 ns, 8 B 800, 16-64 B 935), and logpbench's ping-pong read 842 ns compact and
// 1002 full; in its fast state the two read alike (321-351 and 331-341 ns, three runs each).
enum class FrameMode { compact, full };
FrameMode parse_frame_mode(const std::string& s);  // UsageError for anything but compact|full
const char* to_string(FrameMode m);

struct TransportOptions {
  int rx_ring = 256;  // pre-posted receives (irecv), or messages stashed during a blocking send (recv)
  int tx_pool = 64;   // Isends in flight (a power of two)
  // Frames delivered per poll at most. One: a test that finds nothing runs MPI's progress engine (tens of
  // ns), so a poll that went on after its frame would charge every round trip one more on each side,
  // while frames that are already in are found by the next poll at no progress cost.
  int burst = 1;
  BulkMode bulk = BulkMode::send;
  SendMode send = SendMode::auto_;
  RecvMode recv = RecvMode::irecv;
  SourceMode source = SourceMode::auto_;
  FrameMode frame = FrameMode::compact;
  std::uint32_t session = 0;  // the job's (filled into compact frames on arrival)
  // A payload up to this travels in its frame's message. 4096 less the 64-byte frame: the message then fits
  // a 4 KiB eager limit (Open MPI's vader), so a 4 KiB payload goes eagerly beside a frame of its own
  // instead of pushing one 4160-byte message into the rendezvous protocol (scripts/vs-logp-mpi, vader, one
  // session: 4096 B round trip +61% over LogP/MPI's with 4096, +5-21% with 4032).
  std::uint32_t inline_bytes = 4096 - 64;
  std::uint32_t segment_bytes = 1 << 20;
  bool yield_when_idle = false;  // more ranks than cores: give the core away after an empty poll
  // Read the library's settings (eager limits, pml, btl) through MPI_T into describe(). MPI_T_init opens
  // every MCA component to list its variables, and some run slow constructors: Debian's Open MPI loads
  // libfabric and the PSM libraries through its mtl components, whose constructors sleep (243-266 ms of a
  // Kielmann run over vader, a 2-core EPYC VM). No figure of a run reads them (they explain one: where
  // the eager limit puts a protocol switch), so they are read only when asked (--mpi-settings on), and
  // scripts/vs-logp-mpi asks once per session, in a run of its own.
  bool read_settings = false;
};

// The options as the command line names them; validate() reads them into mpi_options.
struct CliOptions {
  std::string mpi_bulk = "send";                      // send (two-sided) | put (one-sided): mpi/transport.hpp
  std::string mpi_send = "auto", mpi_recv = "irecv";  // auto, or LogP/MPI's send modes; its receive modes
  std::string mpi_source = "auto";                    // auto (the peer in a job of two ranks) | any
  std::string mpi_frame = "compact";                  // compact | full: a small AM's bytes on the wire
  int mpi_inline = 4096 - 64;                         // payload bytes sent inside the frame's message
  std::string mpi_settings = "off";                   // read the library's settings through MPI_T into meta.mpi
  // 0: by the receive mode. irecv posts 8: a message lands in a receive posted 8 messages earlier, still in
  // cache, and a burst beyond them waits in MPI's own unexpected queue, as it does for an MPI program that
  // receives one message at a time (LogP/MPI's gap loop). In one session (scripts/vs-logp-mpi, send:irecv), a
  // 1 KiB o_r was 195-240 ns with 4 and 295-320 with 256 (LogP/MPI 132-139), RTT(0) 346-356 and 371-401.
  // The price: a flood's messages beyond the ring arrive unexpected (o_r 96 -> 115 ns, g 92 -> 110 at 64 B). recv
  // stashes up to 256 messages during a blocking send: a full stash could leave two crossing synchronous sends waiting
  // for each other.
  int mpi_ring = 0, mpi_pool = 64;
  TransportOptions mpi_options;  // the above, checked; the segment and yielding are the job's
};

// The section "MPI transport (run under mpirun or srun)" of --help, bound to `o`.
boost::program_options::options_description describe(CliOptions& o);
// Checks (UsageError) and fills o.mpi_options. MPI's ranks come from its launcher: `mode_given` (the user
// named local/server/client) is refused, and so is a command line with no launcher around it.
void validate(CliOptions& o, const boost::program_options::variables_map& vm, const std::string& transport,
              bool mode_given, const std::string& mode);

}  // namespace logpb::mpi
