// libfabric, opened when the ofi transport first calls it rather than when logpbench starts.
//
// Debian's libfabric links its PSM providers (libpsm_infinipath, which needs libinfinipath), and
// libinfinipath's load-time constructor calibrates a clock by sleeping many times, pinning itself to each
// core in turn. Linked directly, that cost a noticeable part of a second at the start of every logpbench
// process whatever its transport (issue 23; the lab's figures are in docs/results/lab-notes.md).
//
// logpbench calls seven libfabric functions by name; every other fi_* is an inline through the
// provider's ops tables. This file defines those seven with the headers' declarations, and the first call
// opens libfabric.so.1 and binds each to the library's default version of the symbol, the one a link
// against the same library would bind: libfabric-dev requires the libfabric1 of its own version, so the
// headers built against and the library opened agree (their versions are compared on opening).
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace {

constexpr const char* kLibrary = "libfabric.so.1";

// The library opened must speak the API the headers describe: same major, minor at least the headers'.
void check_version(void* h) {
  const auto version = reinterpret_cast<decltype(&fi_version)>(dlsym(h, "fi_version"));
  if (!version) throw logpb::UsageError(std::string("ofi: ") + kLibrary + " has no fi_version");
  const std::uint32_t runtime = version();
  constexpr std::uint32_t built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
  if (FI_MAJOR(runtime) != FI_MAJOR(built) || FI_MINOR(runtime) < FI_MINOR(built))
    throw logpb::UsageError("ofi: " + std::string(kLibrary) + " is libfabric " + std::to_string(FI_MAJOR(runtime)) +
                            "." + std::to_string(FI_MINOR(runtime)) + ", built against " +
                            std::to_string(FI_MAJOR(built)) + "." + std::to_string(FI_MINOR(built)));
}

// Opened, and its version checked, once.
void* library() {
  static void* const handle = [] {
    void* h = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      throw logpb::UsageError(std::string("ofi: cannot open ") + kLibrary +
                              " (Debian's libfabric1): " + (why ? why : "no reason given"));
    }
    check_version(h);
    return h;
  }();
  return handle;
}

template <class F>
F bind(const char* name) {
  void* sym = dlsym(library(), name);
  if (!sym) throw logpb::UsageError(std::string("ofi: ") + kLibrary + " has no " + name);
  return reinterpret_cast<F>(sym);
}

}  // namespace

extern "C" {

uint32_t fi_version(void) {
  static const auto f = bind<decltype(&fi_version)>("fi_version");
  return f();
}

int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const struct fi_info* hints,
               struct fi_info** info) {
  static const auto f = bind<decltype(&fi_getinfo)>("fi_getinfo");
  return f(version, node, service, flags, hints, info);
}

void fi_freeinfo(struct fi_info* info) {
  static const auto f = bind<decltype(&fi_freeinfo)>("fi_freeinfo");
  f(info);
}

struct fi_info* fi_dupinfo(const struct fi_info* info) {
  static const auto f = bind<decltype(&fi_dupinfo)>("fi_dupinfo");
  return f(info);
}

int fi_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  static const auto f = bind<decltype(&fi_fabric)>("fi_fabric");
  return f(attr, fabric, context);
}

const char* fi_strerror(int errnum) {
  static const auto f = bind<decltype(&fi_strerror)>("fi_strerror");
  return f(errnum);
}

char* fi_tostr_r(char* buf, size_t len, const void* data, enum fi_type datatype) {
  static const auto f = bind<decltype(&fi_tostr_r)>("fi_tostr_r");
  return f(buf, len, data, datatype);
}

}  // extern "C"
