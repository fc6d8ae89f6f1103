// Debian's libfabric links PSM (libpsm_infinipath, libinfinipath), whose library constructor hooks SIGSEGV,
// SIGBUS, SIGILL, SIGABRT, SIGINT and SIGTERM before main to print a backtrace and exit(1). A crash would
// then end with exit 1 instead of its signal, a handler that chains to the previous one (the memif guard)
// would chain to it, and a fuzz target's crash would become libinfinipath's exit.
#pragma once

namespace logpb {

// Puts those handlers back to the default; anyone else's (a sanitizer's) stay. First thing in main.
void drop_library_crash_handlers();

}  // namespace logpb
