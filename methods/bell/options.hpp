// Bell et al.'s flood and overlap options (sections 4.2, 4.3): queue depth q, messages per run and the
// number of runs whose minimum is reported (the paper: at least 10 runs of at least 10,000 messages).
// flood and overlap take them, and agree for its overlap phase.
#pragma once

#include "methods/method_option.hpp"

namespace logpb::methods::opt {

inline const Typed<int> kQueueDepth =
    option::integer("queue-depth", "flood: messages kept in flight (Bell et al.)", 8, 1, 4096);
inline const Typed<int> kMessages = option::integer("messages", "flood/overlap: messages per run", 10000, 1, 1e8);
inline const Typed<int> kBellRuns =
    option::integer("bell-runs", "flood/overlap: runs; the minimum is reported, the median beside it", 10, 1, 1000);

}  // namespace logpb::methods::opt
