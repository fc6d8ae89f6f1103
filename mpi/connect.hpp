// MPI control path: MPI_Init under the job's launcher, a communicator of our own that returns errors,
// the registered segment (and, for one-sided bulk, its window in a passive-target epoch), then the
// datapath (mpi/transport.hpp). The job's ranks stay the launcher's (Ranks::from_launcher, the rendezvous
// file): MPI's rank and size must be the same, else the job is refused.
#pragma once

#include <mpi.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"
#include "common/ranks.hpp"
#include "mpi/transport.hpp"

namespace logpb::mpi {

class Connection {
 public:
  // clock: for the bare loop under the transport (floor()), run here, before the transport posts its ring.
  Connection(Ranks& ranks, const TransportOptions& opt, const Clock& clock);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // After a clean end (every rank past the job's last barrier) frees the window and the communicator and
  // calls MPI_Finalize, all collective. During an exception (a rank is gone) it does none of that: a
  // collective with a dead rank never returns, and mpirun ends the job anyway.
  ~Connection();
  Transport& transport() { return *transport_; }
  // The MPI library and the path it takes (pml, btl, single-copy mechanism, as mpirun set them).
  nlohmann::json describe() const;
  // Wall time of MPI_Init (with the communicator's set-up) and of reading the settings through MPI_T (ms).
  double init_ms() const { return init_ms_; }
  double settings_ms() const { return settings_ms_; }
  // The floor under the transport's datapath (meta.transport_floor): a bare MPI ping-pong of the bytes a
  // small AM without arguments puts on the wire, between ranks 0 and 1, with nothing but MPI_Send, a
  // pre-posted MPI_Irecv and MPI_Wait in its loop (bench/mpi_bare_pingpong's loop), on this job's
  // communicator and cores. What a small AM's round trip takes beyond it is logpbench's: its AM layer
  // (meta.harness) and its MPI transport's own code (the rest). Measured in the constructor, collectively,
  // before the transport posts its ring: receives posted from the same peer ahead of the loop's would be
  // searched before them on every arrival (measured after the method, with the ring posted, it read 250-311 ns
  // where the same loop alone read 240-271, VM fast state). Null on ranks other than 0 and in jobs of other
  // than two ranks.
  const nlohmann::json& floor() const { return floor_; }
  double floor_ms() const { return floor_ms_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::byte* segment_ = nullptr;
  std::unique_ptr<Transport> transport_;
  TransportOptions opt_;
  nlohmann::json library_, floor_;
  nlohmann::json measure_floor(const Clock& clock, int bytes, int iterations);
  double init_ms_ = 0, settings_ms_ = 0, floor_ms_ = 0;
};

}  // namespace logpb::mpi
