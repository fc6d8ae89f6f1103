// Results files: written atomically (a temporary beside the target, fsync, rename), so a reader, a
// crash or an interrupt never leaves a half-written JSON; a run checkpoints after every curve.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"

namespace logpb {

void write_json_atomic(const std::string& path, const nlohmann::json& j);
// The same for any text (a CSV beside the JSON).
void write_text_atomic(const std::string& path, const std::string& text);

// A fault that a layer can name but not unwind from ends the process in a signal handler (dpdk/port.cpp:
// DPDK's memif faulting in a burst after its peer disconnected). What the results file then holds: the
// last checkpoint, with status "failed" and kFaultRecordError. Once a layer arms the record
// (arm_fault_record), every checkpoint (ResultsDoc::save) also stages that text; write_fault_record
// writes what was staged (only open, write, fsync, rename: async-signal-safe).
inline constexpr const char* kFaultRecordError =
    "peer lost: the DPDK memif PMD faulted in a burst after its peer disconnected (DPDK 22.11's memif unmaps a "
    "departed peer's rings on its interrupt thread while a burst may still be reading them); results are as "
    "last checkpointed";
void arm_fault_record();
bool fault_record_armed();
void stage_fault_record(const std::string& path, const nlohmann::json& doc);
void write_fault_record() noexcept;

// Host, CPU, kernel, TSC and build facts for `meta`.
nlohmann::json host_meta(const Clock& clock);

std::string version_string();

// How this core was interrupted (measure_interruptions), for meta.interruptions(_after).
nlohmann::json interruptions_json(const Interruptions& irq);

}  // namespace logpb
