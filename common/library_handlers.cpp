#include "common/library_handlers.hpp"

#include <dlfcn.h>

#include <csignal>
#include <cstring>
#include <initializer_list>

namespace logpb {

void drop_library_crash_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    void* h = (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(old.sa_sigaction)
                                          : reinterpret_cast<void*>(old.sa_handler);
    if (h == reinterpret_cast<void*>(SIG_DFL) || h == reinterpret_cast<void*>(SIG_IGN)) continue;
    Dl_info info{};
    if (dladdr(h, &info) != 0 && info.dli_fname && std::strstr(info.dli_fname, "libinfinipath"))
      std::signal(sig, SIG_DFL);
  }
}

}  // namespace logpb
