#include "mpi/options.hpp"

#include "common/choices.hpp"
#include "common/errors.hpp"
#include "common/options.hpp"
#include "common/ranks.hpp"

namespace po = boost::program_options;

namespace logpb::mpi {

namespace {
// The words of each option, in the order its error names them.
constexpr Choice<BulkMode> kBulk[] = {{BulkMode::send, "send"}, {BulkMode::put, "put"}};
constexpr Choice<SendMode> kSend[] = {
    {SendMode::auto_, "auto"}, {SendMode::send, "send"}, {SendMode::isend, "isend"}, {SendMode::ssend, "ssend"}};
constexpr Choice<RecvMode> kRecv[] = {{RecvMode::recv, "recv"}, {RecvMode::irecv, "irecv"}};
constexpr Choice<SourceMode> kSource[] = {{SourceMode::auto_, "auto"}, {SourceMode::any, "any"}};
constexpr Choice<FrameMode> kFrame[] = {{FrameMode::compact, "compact"}, {FrameMode::full, "full"}};
}  // namespace

BulkMode parse_bulk_mode(const std::string& s) { return parse_choice(s, kBulk, "--mpi-bulk"); }
const char* to_string(BulkMode m) { return choice_name(m, kBulk); }
SendMode parse_send_mode(const std::string& s) { return parse_choice(s, kSend, "--mpi-send"); }
const char* to_string(SendMode m) { return choice_name(m, kSend); }
RecvMode parse_recv_mode(const std::string& s) { return parse_choice(s, kRecv, "--mpi-recv"); }
const char* to_string(RecvMode m) { return choice_name(m, kRecv); }
SourceMode parse_source_mode(const std::string& s) { return parse_choice(s, kSource, "--mpi-source"); }
const char* to_string(SourceMode m) { return choice_name(m, kSource); }
FrameMode parse_frame_mode(const std::string& s) { return parse_choice(s, kFrame, "--mpi-frame"); }
const char* to_string(FrameMode m) { return choice_name(m, kFrame); }

po::options_description describe(CliOptions& o) {
  po::options_description mpi("MPI transport (run under mpirun or srun)");
  mpi.add_options()("mpi-bulk", po::value(&o.mpi_bulk)->default_value(o.mpi_bulk),
                    "bulk store/get: send (two-sided messages) | put (MPI_Put/MPI_Get in a passive-target epoch)")(
      "mpi-send", po::value(&o.mpi_send)->default_value(o.mpi_send),
      "the call that sends an AM's message: auto (MPI_Send up to 256 bytes, MPI_Isend beyond) | send (MPI_Send) | "
      "isend (MPI_Isend, a pool in flight) | ssend (MPI_Ssend), the last three as Kielmann et al.'s LogP/MPI")(
      "mpi-recv", po::value(&o.mpi_recv)->default_value(o.mpi_recv),
      "how it is received: irecv (a ring of pre-posted MPI_Irecv) | recv (nothing posted ahead: "
      "one receive posted when the program waits, as MPI_Recv posts it)")(
      "mpi-source", po::value(&o.mpi_source)->default_value(o.mpi_source),
      "whom a receive or probe names: auto (the other rank in a job of two ranks, MPI_ANY_SOURCE in a larger one) | "
      "any (MPI_ANY_SOURCE always)")(
      "mpi-frame", po::value(&o.mpi_frame)->default_value(o.mpi_frame),
      "a small AM without payload on the wire: compact (an 8-byte header and its nonzero argument words; MPI's "
      "envelope names the rest) | full (the 64-byte frame, as on every other transport)")(
      "mpi-inline", po::value(&o.mpi_inline)->default_value(o.mpi_inline),
      "bytes of payload sent in the frame's own message (one MPI message per AM); larger payloads are a message of "
      "their own")("mpi-ring", po::value(&o.mpi_ring)->default_value(o.mpi_ring, "8 (irecv), 256 (recv)"),
                   "pre-posted MPI_Irecv (irecv; more arrivals wait in MPI's unexpected queue), or messages taken in "
                   "during a blocking send (recv)")("mpi-pool", po::value(&o.mpi_pool)->default_value(o.mpi_pool),
                                                    "MPI_Isend in flight at most (power of two)")(
      "mpi-settings", po::value(&o.mpi_settings)->default_value(o.mpi_settings),
      "on: record the library's settings (eager limits, pml, btl) read through MPI_T in meta.mpi (MPI_T opens every MCA "
      "component, which took 250 ms with Debian's Open MPI; meta.startup_ms.mpi_t_settings) | off: skip it (no figure "
      "reads them)");
  return mpi;
}

void validate(CliOptions& o, const po::variables_map& vm, const std::string& transport, bool mode_given,
              const std::string& mode) {
  if (transport != "mpi") {
    cli::refuse_given(vm,
                      {"mpi-bulk", "mpi-send", "mpi-recv", "mpi-source", "mpi-frame", "mpi-inline", "mpi-ring",
                       "mpi-pool", "mpi-settings"},
                      "mpi");
    return;
  }
  // Without a launcher there is no job to join (an MPI singleton would measure nothing), so say so before
  // anything starts.
  if (mode_given)
    throw UsageError(
        "--transport mpi runs under a launcher (mpirun -np 2 logpbench --transport mpi ..., or "
        "srun), with no mode: '" +
        mode + "' is for the other transports");
  if (!detect_launcher())
    throw UsageError(
        "--transport mpi needs an MPI launcher: run it as mpirun -np 2 logpbench --transport mpi ... "
        "(scripts/mpirun-lab -np 2 -- ...) or under srun; no OMPI_COMM_WORLD_*/PMIX_*/SLURM_* "
        "variables are set");
  TransportOptions& t = o.mpi_options;
  t.bulk = parse_bulk_mode(o.mpi_bulk);
  t.send = parse_send_mode(o.mpi_send);
  t.recv = parse_recv_mode(o.mpi_recv);
  t.source = parse_source_mode(o.mpi_source);
  t.frame = parse_frame_mode(o.mpi_frame);
  if (o.mpi_settings != "on" && o.mpi_settings != "off")
    throw UsageError("--mpi-settings must be on or off, not '" + o.mpi_settings + "'");
  t.read_settings = o.mpi_settings == "on";
  cli::check_range("mpi-inline", o.mpi_inline, 0, 1 << 20);
  if (o.mpi_ring == 0 && (!vm.count("mpi-ring") || vm["mpi-ring"].defaulted()))
    o.mpi_ring = t.recv == RecvMode::irecv ? 8 : 256;
  cli::check_range("mpi-ring", o.mpi_ring, 2, 65536);
  cli::check_range("mpi-pool", o.mpi_pool, 2, 65536);
  if (o.mpi_pool & (o.mpi_pool - 1)) throw UsageError("--mpi-pool must be a power of two");
  t.inline_bytes = static_cast<std::uint32_t>(o.mpi_inline);
  t.rx_ring = o.mpi_ring;
  t.tx_pool = o.mpi_pool;
}

}  // namespace logpb::mpi
