#include "dpdk/memif_guard.hpp"

#include <rte_ethdev.h>

#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>

#include "common/results.hpp"

namespace logpb::dpdk {
namespace {

// Written only while no fault can be handled (no guarded port, or on the thread that also bursts),
// read by the handler.
struct Guard {
  static constexpr int kMax = 64;
  std::uint16_t ports[kMax];
  int n = 0;
  std::uintptr_t base = 0, code_lo = 0, code_hi = 0;  // the memif PMD's load address and executable segment
  bool code_found = false;
  struct sigaction old_segv {
  }, old_bus{};
};
Guard g;

int find_memif_code(dl_phdr_info* info, std::size_t, void*) {
  if (!info->dlpi_name || !std::strstr(info->dlpi_name, "librte_net_memif")) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    g.base = info->dlpi_addr;
    g.code_lo = info->dlpi_addr + ph.p_vaddr;
    g.code_hi = g.code_lo + ph.p_memsz;
    g.code_found = true;
  }
  return 1;
}

#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kReadsFaultPc = true;
#else
constexpr bool kReadsFaultPc = false;
#endif
std::uintptr_t fault_pc(void* ctx) {
  [[maybe_unused]] const auto* uc = static_cast<const ucontext_t*>(ctx);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
  return 0;
#endif
}

bool a_guarded_link_down() {
  for (int i = 0; i < g.n; ++i) {
    rte_eth_link l{};  // memif's link_update only reads (primary process): fit for a signal handler
    if (rte_eth_link_get_nowait(g.ports[i], &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN) return true;
  }
  return false;
}

void on_fault(int sig, siginfo_t*, void* ctx) {
  const std::uintptr_t pc = fault_pc(ctx);
  if (pc >= g.code_lo && pc < g.code_hi && a_guarded_link_down()) {
    // The message, with the faulting instruction as an offset into the PMD (hex, formatted by hand).
    static const char head[] =
        "\nlogpbench: peer lost: the DPDK memif port faulted in a burst after its peer disconnected (DPDK 22.11's "
        "memif "
        "unmaps a departed peer's rings while a burst may still read them; fault at librte_net_memif+0x";
    static const char tail[] = "); results are as last checkpointed\n";
    char hex[2 * sizeof(std::uintptr_t)];
    int k = static_cast<int>(sizeof hex);
    for (std::uintptr_t off = pc - g.base; k == static_cast<int>(sizeof hex) || off != 0; off >>= 4)
      hex[--k] = "0123456789abcdef"[off & 15];
    [[maybe_unused]] ssize_t w = ::write(STDERR_FILENO, head, sizeof head - 1);
    w = ::write(STDERR_FILENO, hex + k, sizeof hex - static_cast<std::size_t>(k));
    w = ::write(STDERR_FILENO, tail, sizeof tail - 1);
    write_fault_record();
    _exit(3);
  }
  // Not the race: the fault goes to what was there before, as the faulting instruction runs again.
  sigaction(sig, sig == SIGSEGV ? &g.old_segv : &g.old_bus, nullptr);
}

}  // namespace

void guard_memif_port(std::uint16_t port) {
  if (g.n == Guard::kMax) return;
  for (int i = 0; i < g.n; ++i)
    if (g.ports[i] == port) return;
  if (g.n == 0) {
    if (!g.code_found) dl_iterate_phdr(find_memif_code, nullptr);
    if (!g.code_found || !kReadsFaultPc) return;
  }
  g.ports[g.n++] = port;
  if (g.n > 1) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, &g.old_segv);
  sigaction(SIGBUS, &sa, &g.old_bus);
  arm_fault_record(
      "peer lost: the DPDK memif PMD faulted in a burst after its peer disconnected (DPDK 22.11's memif unmaps a "
      "departed peer's rings on its interrupt thread while a burst may still be reading them); results are as "
      "last checkpointed");
}

void unguard_memif_port(std::uint16_t port) {
  for (int i = 0; i < g.n; ++i) {
    if (g.ports[i] != port) continue;
    g.ports[i] = g.ports[--g.n];
    if (g.n == 0) {
      sigaction(SIGSEGV, &g.old_segv, nullptr);
      sigaction(SIGBUS, &g.old_bus, nullptr);
    }
    return;
  }
}

}  // namespace logpb::dpdk
