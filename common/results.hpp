// Results files: written atomically (a temporary beside the target, rename; fsync first for the finished
// document), so a reader, a crash or an interrupt never leaves a half-written JSON; a run checkpoints after
// every curve.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"

namespace logpb {

// durable: fsync before the rename, so the file outlives the machine's crash too (4 ms a write on a 2-core VM's
// ext4); a checkpoint, which only has to outlive this process, goes without.
void write_json_atomic(const std::string& path, const nlohmann::json& j, bool durable = true);
// The same for any text (a CSV beside the JSON).
void write_text_atomic(const std::string& path, const std::string& text, bool durable = true);

// A fault that a layer can name but not unwind from ends the process where it is: in a signal handler
// (dpdk/memif_guard.cpp: DPDK's memif faulting in a burst after its peer disconnected) or on a watching
// thread (common/call_guard.hpp: a library call that never returns after a peer died). What the results
// file then holds: the last checkpoint, with status "failed" and the error the layer armed. Once a layer
// arms the record (arm_fault_record), every checkpoint (ResultsDoc::save) also stages that text.
// write_fault_record writes what was staged with only open, write, fsync and rename (async-signal-safe,
// for a handler on the thread that stages); write_fault_record_from_thread does the same from any other
// thread, after any staging under way has finished.
void arm_fault_record(std::string error);
bool fault_record_armed();
void stage_fault_record(const std::string& path, const nlohmann::json& doc);
void write_fault_record() noexcept;
void write_fault_record_from_thread() noexcept;
// The path the staged record goes to ("" when nothing was staged).
std::string fault_record_path();

// The results file being written: the document, and where it goes ("" for a document kept in memory,
// as a job's member ranks and a method run inside another keep theirs). save() writes it atomically and
// stages the fault record when one is armed.
struct ResultsDoc {
  nlohmann::json j = nlohmann::json::object();
  std::string path;
  // A checkpoint (durable false: it need outlive only this process) or the finished document.
  void save(bool durable = false) const {
    if (path.empty()) return;
    write_json_atomic(path, j, durable);
    if (fault_record_armed()) stage_fault_record(path, j);
  }
};

// Host, CPU, kernel, TSC and build facts for `meta`.
nlohmann::json host_meta(const Clock& clock);

std::string version_string();

// How this core was interrupted (measure_interruptions), for meta.interruptions(_after), with the rule that
// let the probe stop early where it had one.
nlohmann::json interruptions_json(const Interruptions& irq, const ProbePrecision* rule = nullptr);

// A transport's bare loop under the small AM's round trip (meta.transport_floor: mpi/connect.cpp,
// dpdk/floor.cpp, ucx/uct_connect.cpp), from the requester's round trips in TSC cycles, the first `warmup`
// left out: the median (the timer's cost taken off) with its 95% interval, the minimum, the count. `rtt` is
// null, with `why`, where `why` is given or fewer than 100 round trips were timed.
nlohmann::json transport_floor_json(const Clock& clock, const std::vector<std::uint64_t>& cycles, std::size_t warmup,
                                    const std::string& loop, int bytes, std::string why = {});

}  // namespace logpb
