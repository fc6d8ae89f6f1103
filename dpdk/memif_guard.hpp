// A peer's death must end this process with "peer lost", never a crash. DPDK 22.11's memif tears a
// connection down on the EAL interrupt thread: link down and the "connected" flag cleared, then, after a
// few system calls, memif_free_regions unmaps the rings and packet buffers. Nothing holds off an rx or
// tx burst that passed its "connected" test just before on the datapath thread, so a peer that dies at
// the wrong moment makes this process fault inside the PMD. Seen here: SIGSEGV in eth_memif_rx, 3 of 180
// flood senders whose receiver was SIGKILLed (all of the sender's threads on one core), the interrupt thread's
// teardown already done.
//
// guard_memif_port(id), once the port's link is up: while any guarded port is open, a SIGSEGV or SIGBUS
// whose instruction lies in the memif PMD's code, while a guarded port reports its link down, is that
// race. The handler says so on stderr, leaves the results as last checkpointed with status "failed"
// (common/results.hpp, write_fault_record), and exits 3 like any other lost peer. Every other fault goes
// on to the disposition that was there before (the default, a core dump; a sanitizer's handler).
// unguard_memif_port(id) before stopping the port: a stop unmaps on this thread, with no burst running.
// Where the PMD's code cannot be found (memif linked statically, a CPU whose fault address this does not
// read), nothing is guarded.
#pragma once

#include <cstdint>

namespace logpb::dpdk {

void guard_memif_port(std::uint16_t port);
void unguard_memif_port(std::uint16_t port);

}  // namespace logpb::dpdk
