// The connect step of a job over shm: every rank of the job (common/ranks.hpp) maps one region and
// gets its transport, with the NI (real or emulated) chosen here, once.
//  1. The ranks allgather their host (name and boot id): a job spanning hosts is a UsageError.
//  2. Rank 0 creates a named region in /dev/shm sized for N ranks and broadcasts its name (or why it
//     could not); the others open it, and an allgather tells everyone whether all could.
//  3. Each rank builds its transport (publishing its pid), the ranks meet in a barrier, each reads the
//     others' pids; then rank 0 removes the name (the mapping lives until the last rank unmaps it).
// Works for forked local jobs and for ranks launched by mpirun/srun on one host alike.
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "common/clock.hpp"
#include "common/ranks.hpp"
#include "shm/emulation.hpp"
#include "shm/transport.hpp"

namespace logpb::shm {

// Steps 1 and 2: the job's region, mapped on every rank.
ShmRegion join_shm_region(Ranks& ranks, const ShmOptions& opt);

// This host as ranks compare it: {"host": name, "boot_id": ...}.
nlohmann::json shm_host_identity();

// Step 3, then body(transport) with a ShmTransport<EmulatedNI> when emu.enabled, else ShmTransport<Wire>:
// the one branch between the two, at the top. The transport lives until body returns.
template <class Body>
void connect_shm(Ranks& ranks, const ShmOptions& opt, const Clock& clock, const Emulation& emu, Body&& body) {
  ShmRegion region = join_shm_region(ranks, opt);
  auto run = [&]<class NI>(std::type_identity<NI>) {
    ShmTransport<NI> t(region, ranks, clock, emu, opt);
    region.unlink();
    body(t);
  };
  if (emu.enabled)
    run(std::type_identity<EmulatedNI>{});
  else
    run(std::type_identity<Wire>{});
}

// The same choice for a region shared by other means (threads of one process, a region created before a
// fork): builds rank `rank`'s transport, waiting up to attach_timeout_s for every rank to attach.
template <class Body>
void with_shm_transport(const ShmRegion& region, int rank, const Clock& clock, const Emulation& emu,
                        const ShmOptions& opt, double attach_timeout_s, Body&& body) {
  auto run = [&]<class NI>(std::type_identity<NI>) {
    ShmTransport<NI> t(region, rank, clock, emu, opt, attach_timeout_s);
    body(t);
  };
  if (emu.enabled)
    run(std::type_identity<EmulatedNI>{});
  else
    run(std::type_identity<Wire>{});
}

}  // namespace logpb::shm
