#include "mpi/connect.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/environment.hpp"
#include "common/errors.hpp"
#include "common/results.hpp"
#include "common/stats.hpp"

namespace logpb::mpi {
namespace {

// What mpirun was told (--mca X Y becomes OMPI_MCA_X=Y in every process): the path MPI takes here.
nlohmann::json mca_environment() {
  nlohmann::json j = nlohmann::json::object();
  for (const char* k : {"pml", "btl", "osc", "mtl", "btl_vader_single_copy_mechanism", "btl_vader_eager_limit",
                        "btl_tcp_if_include", "pml_ucx_tls", "pml_ucx_devices"}) {
    const std::string var = std::string("OMPI_MCA_") + k;
    if (const char* v = std::getenv(var.c_str())) j[k] = v;
  }
  return j;
}

// The same settings as the library holds them (MPI_T control variables: defaults included, so the
// eager limit that decides where the protocol switches is recorded even when nobody set it). Most of its
// time is one library's: MPI_T_init_thread opens every component, and mca_btl_ofi's libfabric loads
// libinfinipath.so.4, whose constructor calls usleep(125 us) some 550 times (gdb, Debian 12). Opening
// MPI_T before MPI_Init instead did not shorten a launch (10 round trips under mpirun-lab, 4 runs each:
// 0.835-0.852 s before, 0.809-0.821 s after).
nlohmann::json mpit_settings() {
  nlohmann::json j = nlohmann::json::object();
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return j;
  for (const char* name :
       {"pml", "btl", "btl_vader_eager_limit", "btl_vader_rndv_eager_limit", "btl_vader_single_copy_mechanism",
        "btl_tcp_eager_limit", "btl_tcp_rndv_eager_limit", "btl_openib_eager_limit"}) {
    int idx = -1;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) continue;
    char nm[256], desc[16];
    int nlen = sizeof nm, dlen = sizeof desc, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(idx, nm, &nlen, &verbosity, &type, &en, desc, &dlen, &bind, &scope) != MPI_SUCCESS)
      continue;
    MPI_T_cvar_handle h;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(idx, nullptr, &h, &count) != MPI_SUCCESS) continue;
    alignas(8) char buf[1024] = {};
    if (count >= 0 && count < static_cast<int>(sizeof buf) && MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
      if (type == MPI_CHAR) {
        j[name] = std::string(buf);
      } else if (type == MPI_INT) {
        int v = 0;
        std::memcpy(&v, buf, sizeof v);
        j[name] = v;
        if (en != MPI_T_ENUM_NULL) {  // an enumeration: its item's name
          int items = 0;
          char en_name[64];
          int en_len = sizeof en_name;
          MPI_T_enum_get_info(en, &items, en_name, &en_len);
          for (int i = 0; i < items; ++i) {
            int value = 0;
            char item[128];
            int ilen = sizeof item;
            if (MPI_T_enum_get_item(en, i, &value, item, &ilen) == MPI_SUCCESS && value == v)
              j[name] = std::string(item);
          }
        }
      } else if (type == MPI_UNSIGNED_LONG || type == MPI_UNSIGNED_LONG_LONG || type == MPI_COUNT) {
        unsigned long long v = 0;
        std::memcpy(&v, buf, sizeof v);
        j[name] = v;
      } else if (type == MPI_UNSIGNED) {
        unsigned v = 0;
        std::memcpy(&v, buf, sizeof v);
        j[name] = v;
      }
    }
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return j;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "single";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    case MPI_THREAD_MULTIPLE:
      return "multiple";
    default:
      return "unknown";
  }
}

}  // namespace

Connection::Connection(Ranks& ranks, const TransportOptions& opt, const Clock& clock) : opt_(opt) {
  const auto t_init = std::chrono::steady_clock::now();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // logpbench is one thread, so it asks for MPI_THREAD_SINGLE, as an MPI_Init program (LogP/MPI, the bare
    // loop) gets. Open MPI 4.1 takes its matching lock on every arriving message at any level above SINGLE:
    // FUNNELED cost a ping-pong over vader 4% of its time in pthread_mutex_lock/unlock (perf, 2-core AMD VM).
    check_setup(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided), "MPI_Init_thread",
                "run under mpirun (scripts/mpirun-lab) or srun with Open MPI's PMIx");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_setup(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  check_setup(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = -1, size = 0;
  check_setup(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  check_setup(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  if (rank != ranks.rank() || size != ranks.size())
    throw UsageError(
        "MPI says this is rank " + std::to_string(rank) + " of " + std::to_string(size) +
        ", the launcher's environment (" + ranks.launcher() + ") says rank " + std::to_string(ranks.rank()) + " of " +
        std::to_string(ranks.size()) +
        ": run logpbench as the launched program itself (mpirun -np N logpbench ..., not through a wrapper "
        "that starts several MPI jobs)");

  init_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_init).count();
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<std::size_t>(len));
  while (!v.empty() && (v.back() == '\n' || v.back() == '\0')) v.pop_back();
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  int thread_level = -1;
  MPI_Query_thread(&thread_level);
  library_ = {{"library_version", v},
              {"thread_level", thread_level_name(thread_level)},
              {"standard", std::to_string(major) + "." + std::to_string(minor)},
              {"mca_from_environment", mca_environment()},
              // Under pml ucx, UCX's own variables choose its transports and devices (UCX_TLS,
              // UCX_NET_DEVICES, the Soft-RoCE workaround scripts/mpirun-lab adds): they are not MCA parameters.
              {"ucx_from_environment", environment_with_prefix("UCX_")}};
  const auto t_settings = std::chrono::steady_clock::now();
  library_["mpi_t_settings"] = opt.read_settings ? mpit_settings() : nlohmann::json("not read (--mpi-settings off; on reads them through MPI_T)");
  settings_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_settings).count();

  void* seg = nullptr;
  check_setup(MPI_Alloc_mem(static_cast<MPI_Aint>(opt.segment_bytes), MPI_INFO_NULL, &seg), "MPI_Alloc_mem",
              "lower --segment-bytes");
  segment_ = static_cast<std::byte*>(seg);
  std::memset(segment_, 0, opt.segment_bytes);
  if (opt.bulk == BulkMode::put) {
    check_setup(MPI_Win_create(segment_, static_cast<MPI_Aint>(opt.segment_bytes), 1, MPI_INFO_NULL, comm_, &win_),
                "MPI_Win_create", "try --mpi-bulk send (two-sided)");
    check_setup(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
    // One passive-target epoch toward every rank for the whole run; flushes complete each operation.
    check_setup(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
  }
  // 5000 round trips: 1-4 ms on a 2-core EPYC VM.
  const auto t_floor = std::chrono::steady_clock::now();
  floor_ = measure_floor(clock, opt.frame == FrameMode::compact ? compact_bytes(0) : static_cast<int>(sizeof(am::Frame)),
                         5000);
  floor_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_floor).count();
  transport_ = std::make_unique<Transport>(comm_, win_, segment_, opt, [&ranks] { return ranks.all_alive(); });
  // Every ring is posted before anyone measures, and MPI itself is known to connect all ranks.
  check_setup(MPI_Barrier(comm_), "MPI_Barrier (after posting the receive rings)");
}

Connection::~Connection() {
  transport_.reset();
  if (std::uncaught_exceptions() > 0) return;  // a rank may be gone: no collective (see the header)
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (segment_) MPI_Free_mem(segment_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

nlohmann::json Connection::measure_floor(const Clock& clock, int bytes, int iterations) {
  int rank = 0, size = 0;
  check_setup(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  check_setup(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  if (size != 2) return nullptr;
  // A tag of its own: the transport's ring (kTagAm) never matches these messages, nor these receives its.
  constexpr int kTagFloor = kTagAm + 3;
  const int peer = 1 - rank, warmup = iterations / 10 + 100, total = warmup + iterations;
  alignas(64) std::byte sbuf[64] = {}, rbuf[2][64] = {};
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::vector<std::uint64_t> cyc(static_cast<std::size_t>(total));
  check_setup(MPI_Barrier(comm_), "MPI_Barrier (before the bare MPI ping-pong)");
  // Each end keeps the next round trip's receive posted (bench/mpi_bare_pingpong): posted before the message
  // it matches can leave, and re-posted off the critical path.
  if (rank == 0) {
    check(MPI_Irecv(rbuf[0], bytes, MPI_BYTE, peer, kTagFloor, comm_, &r[0]), "MPI_Irecv (bare loop)");
    for (int k = 0; k < total; ++k) {
      const std::uint64_t t0 = tsc::now();
      check(MPI_Send(sbuf, bytes, MPI_BYTE, peer, kTagFloor, comm_), "MPI_Send (bare loop)");
      if (k + 1 < total)
        check(MPI_Irecv(rbuf[(k + 1) & 1], bytes, MPI_BYTE, peer, kTagFloor, comm_, &r[(k + 1) & 1]),
              "MPI_Irecv (bare loop)");
      check(MPI_Wait(&r[k & 1], MPI_STATUS_IGNORE), "MPI_Wait (bare loop)");
      cyc[static_cast<std::size_t>(k)] = tsc::now_end() - t0;
    }
  } else {
    for (int k = 0; k < 2 && k < total; ++k)
      check(MPI_Irecv(rbuf[k], bytes, MPI_BYTE, peer, kTagFloor, comm_, &r[k]), "MPI_Irecv (bare loop)");
    for (int k = 0; k < total; ++k) {
      check(MPI_Wait(&r[k & 1], MPI_STATUS_IGNORE), "MPI_Wait (bare loop)");
      check(MPI_Send(sbuf, bytes, MPI_BYTE, peer, kTagFloor, comm_), "MPI_Send (bare loop)");
      if (k + 2 < total)
        check(MPI_Irecv(rbuf[k & 1], bytes, MPI_BYTE, peer, kTagFloor, comm_, &r[k & 1]), "MPI_Irecv (bare loop)");
    }
  }
  if (rank != 0) return nullptr;
  return transport_floor_json(clock, cyc, static_cast<std::size_t>(warmup),
                              "a bare MPI ping-pong between ranks 0 and 1 before the transport posts its receives: "
                              "MPI_Send, the next round trip's MPI_Irecv posted ahead, MPI_Wait; no AM layer, this "
                              "job's communicator and cores",
                              bytes);
}

nlohmann::json Connection::describe() const {
  nlohmann::json j = library_;
  j["bulk"] = to_string(opt_.bulk);
  j["mpi_send"] = to_string(opt_.send);
  j["send_by_mpi_send_max_bytes"] = kSurelyEager;  // auto: MPI_Send up to this, MPI_Isend beyond
  j["mpi_recv"] = to_string(opt_.recv);
  j["mpi_source"] = to_string(opt_.source);
  j["mpi_frame"] = to_string(opt_.frame);
  j["receive_from"] = transport_->receive_from();
  j["inline_bytes"] = opt_.inline_bytes;
  j["rx_ring"] = opt_.rx_ring;
  j["tx_pool"] = opt_.tx_pool;
  return j;
}

}  // namespace logpb::mpi
