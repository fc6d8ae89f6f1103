// Results files: written atomically (a temporary beside the target, fsync, rename), so a reader, a
// crash or an interrupt never leaves a half-written JSON; a run checkpoints after every curve.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "clock.hpp"

namespace logpb {

void write_json_atomic(const std::string& path, const nlohmann::json& j);
// The same for any text (a CSV beside the JSON).
void write_text_atomic(const std::string& path, const std::string& text);

// Host, CPU, kernel, TSC and build facts for `meta`.
nlohmann::json host_meta(const Clock& clock);

std::string version_string();

// How this core was interrupted (measure_interruptions), for meta.interruptions(_after).
nlohmann::json interruptions_json(const Interruptions& irq);

}  // namespace logpb
