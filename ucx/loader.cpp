// UCX, opened when the ucx transport first calls it rather than when logpbench starts.
//
// Linked directly, libucs's load-time constructor runs in every logpbench process whatever its transport:
// it reads UCX's configuration and installs its own handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGHUP
// (seen with strace on `logpbench --version`), which would change how any run, and the sanitizers, see a
// crash. So logpbench defines the UCX functions it calls by name (every other uct_* call is an inline
// through the interface's ops table), with the headers' declarations, and the first call opens libucp,
// libuct and libucs and binds each to the library's default version of the symbol. The headers and
// libraries come from one Debian package version (libucx-dev requires its libucx0); the API versions are
// compared on opening. Before opening, UCX_HANDLE_ERRORS is set to none unless the user set it, so a crash
// inside UCX is reported as any other crash (meta.ucx.environment records it).
#include <dlfcn.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace {

constexpr const char* kLibraries[] = {"libucs.so.0", "libuct.so.0", "libucp.so.0"};

// The library opened must speak the API the headers describe: same major, minor at least the headers'.
void check_version(void* ucp) {
  const auto version = reinterpret_cast<decltype(&ucp_get_version)>(dlsym(ucp, "ucp_get_version"));
  if (!version) throw logpb::UsageError("ucx: libucp.so.0 has no ucp_get_version");
  unsigned major = 0, minor = 0, release = 0;
  version(&major, &minor, &release);
  if (major != UCP_API_MAJOR || minor < UCP_API_MINOR)
    throw logpb::UsageError("ucx: libucp.so.0 is UCX " + std::to_string(major) + "." + std::to_string(minor) +
                            ", built against " + std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR));
}

// Opened, in dependency order and global (UCX's own transport modules, opened by libuct, bind to them),
// and the version checked, once. Returns libucp's handle; dlsym on it finds libuct's and libucs's symbols
// too (its dependencies).
void* library() {
  static void* const handle = [] {
    setenv("UCX_HANDLE_ERRORS", "none", 0);
    void* h = nullptr;
    for (const char* lib : kLibraries) {
      h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
      if (!h) {
        const char* why = dlerror();
        throw logpb::UsageError(std::string("ucx: cannot open ") + lib +
                                " (Debian's libucx0): " + (why ? why : "no reason given"));
      }
    }
    check_version(h);
    return h;
  }();
  return handle;
}

template <class F>
F bind(const char* name) {
  void* sym = dlsym(library(), name);
  if (!sym) throw logpb::UsageError(std::string("ucx: UCX's libraries have no ") + name);
  return reinterpret_cast<F>(sym);
}

}  // namespace

extern "C" {

ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void* header, size_t header_length, const void* buffer,
                                 size_t count, const ucp_request_param_t* param) {
  static const auto f = bind<decltype(&ucp_am_send_nbx)>("ucp_am_send_nbx");
  return f(ep, id, header, header_length, buffer, count, param);
}

void ucp_cleanup(ucp_context_h context_p) {
  static const auto f = bind<decltype(&ucp_cleanup)>("ucp_cleanup");
  f(context_p);
}

ucs_status_t ucp_config_read(const char* env_prefix, const char* filename, ucp_config_t** config_p) {
  static const auto f = bind<decltype(&ucp_config_read)>("ucp_config_read");
  return f(env_prefix, filename, config_p);
}

void ucp_config_release(ucp_config_t* config) {
  static const auto f = bind<decltype(&ucp_config_release)>("ucp_config_release");
  f(config);
}

void ucp_context_print_info(const ucp_context_h context, FILE* stream) {
  static const auto f = bind<decltype(&ucp_context_print_info)>("ucp_context_print_info");
  f(context, stream);
}

ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const ucp_request_param_t* param) {
  static const auto f = bind<decltype(&ucp_ep_close_nbx)>("ucp_ep_close_nbx");
  return f(ep, param);
}

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t* params, ucp_ep_h* ep_p) {
  static const auto f = bind<decltype(&ucp_ep_create)>("ucp_ep_create");
  return f(worker, params, ep_p);
}

void ucp_ep_print_info(ucp_ep_h ep, FILE* stream) {
  static const auto f = bind<decltype(&ucp_ep_print_info)>("ucp_ep_print_info");
  f(ep, stream);
}

ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void* rkey_buffer, ucp_rkey_h* rkey_p) {
  static const auto f = bind<decltype(&ucp_ep_rkey_unpack)>("ucp_ep_rkey_unpack");
  return f(ep, rkey_buffer, rkey_p);
}

ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t* param) {
  static const auto f = bind<decltype(&ucp_get_nbx)>("ucp_get_nbx");
  return f(ep, buffer, count, remote_addr, rkey, param);
}

const char* ucp_get_version_string() {
  static const auto f = bind<decltype(&ucp_get_version_string)>("ucp_get_version_string");
  return f();
}

ucs_status_t ucp_init_version(unsigned api_major_version, unsigned api_minor_version, const ucp_params_t* params,
                              const ucp_config_t* config, ucp_context_h* context_p) {
  static const auto f = bind<decltype(&ucp_init_version)>("ucp_init_version");
  return f(api_major_version, api_minor_version, params, config, context_p);
}

ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t* params, ucp_mem_h* memh_p) {
  static const auto f = bind<decltype(&ucp_mem_map)>("ucp_mem_map");
  return f(context, params, memh_p);
}

ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t* attr) {
  static const auto f = bind<decltype(&ucp_mem_query)>("ucp_mem_query");
  return f(memh, attr);
}

ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh) {
  static const auto f = bind<decltype(&ucp_mem_unmap)>("ucp_mem_unmap");
  return f(context, memh);
}

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t* param) {
  static const auto f = bind<decltype(&ucp_put_nbx)>("ucp_put_nbx");
  return f(ep, buffer, count, remote_addr, rkey, param);
}

ucs_status_t ucp_request_check_status(void* request) {
  static const auto f = bind<decltype(&ucp_request_check_status)>("ucp_request_check_status");
  return f(request);
}

void ucp_request_free(void* request) {
  static const auto f = bind<decltype(&ucp_request_free)>("ucp_request_free");
  f(request);
}

void ucp_rkey_buffer_release(void* rkey_buffer) {
  static const auto f = bind<decltype(&ucp_rkey_buffer_release)>("ucp_rkey_buffer_release");
  f(rkey_buffer);
}

void ucp_rkey_destroy(ucp_rkey_h rkey) {
  static const auto f = bind<decltype(&ucp_rkey_destroy)>("ucp_rkey_destroy");
  f(rkey);
}

ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void** rkey_buffer_p, size_t* size_p) {
  static const auto f = bind<decltype(&ucp_rkey_pack)>("ucp_rkey_pack");
  return f(context, memh, rkey_buffer_p, size_p);
}

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t* params, ucp_worker_h* worker_p) {
  static const auto f = bind<decltype(&ucp_worker_create)>("ucp_worker_create");
  return f(context, params, worker_p);
}

void ucp_worker_destroy(ucp_worker_h worker) {
  static const auto f = bind<decltype(&ucp_worker_destroy)>("ucp_worker_destroy");
  f(worker);
}

ucs_status_t ucp_worker_fence(ucp_worker_h worker) {
  static const auto f = bind<decltype(&ucp_worker_fence)>("ucp_worker_fence");
  return f(worker);
}

ucs_status_t ucp_worker_get_address(ucp_worker_h worker, ucp_address_t** address_p, size_t* address_length_p) {
  static const auto f = bind<decltype(&ucp_worker_get_address)>("ucp_worker_get_address");
  return f(worker, address_p, address_length_p);
}

unsigned ucp_worker_progress(ucp_worker_h worker) {
  static const auto f = bind<decltype(&ucp_worker_progress)>("ucp_worker_progress");
  return f(worker);
}

void ucp_worker_release_address(ucp_worker_h worker, ucp_address_t* address) {
  static const auto f = bind<decltype(&ucp_worker_release_address)>("ucp_worker_release_address");
  f(worker, address);
}

ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker, const ucp_am_handler_param_t* param) {
  static const auto f = bind<decltype(&ucp_worker_set_am_recv_handler)>("ucp_worker_set_am_recv_handler");
  return f(worker, param);
}

ucs_status_t ucs_async_context_create(ucs_async_mode_t mode, ucs_async_context_t** async_p) {
  static const auto f = bind<decltype(&ucs_async_context_create)>("ucs_async_context_create");
  return f(mode, async_p);
}

void ucs_async_context_destroy(ucs_async_context_t* async) {
  static const auto f = bind<decltype(&ucs_async_context_destroy)>("ucs_async_context_destroy");
  f(async);
}

const char* ucs_status_string(ucs_status_t status) {
  static const auto f = bind<decltype(&ucs_status_string)>("ucs_status_string");
  return f(status);
}

ucs_status_t uct_component_query(uct_component_h component, uct_component_attr_t* component_attr) {
  static const auto f = bind<decltype(&uct_component_query)>("uct_component_query");
  return f(component, component_attr);
}

void uct_config_release(void* config) {
  static const auto f = bind<decltype(&uct_config_release)>("uct_config_release");
  f(config);
}

ucs_status_t uct_ep_connect_to_ep(uct_ep_h ep, const uct_device_addr_t* dev_addr, const uct_ep_addr_t* ep_addr) {
  static const auto f = bind<decltype(&uct_ep_connect_to_ep)>("uct_ep_connect_to_ep");
  return f(ep, dev_addr, ep_addr);
}

ucs_status_t uct_ep_create(const uct_ep_params_t* params, uct_ep_h* ep_p) {
  static const auto f = bind<decltype(&uct_ep_create)>("uct_ep_create");
  return f(params, ep_p);
}

void uct_ep_destroy(uct_ep_h ep) {
  static const auto f = bind<decltype(&uct_ep_destroy)>("uct_ep_destroy");
  f(ep);
}

ucs_status_t uct_ep_get_address(uct_ep_h ep, uct_ep_addr_t* addr) {
  static const auto f = bind<decltype(&uct_ep_get_address)>("uct_ep_get_address");
  return f(ep, addr);
}

void uct_iface_close(uct_iface_h iface) {
  static const auto f = bind<decltype(&uct_iface_close)>("uct_iface_close");
  f(iface);
}

ucs_status_t uct_iface_get_address(uct_iface_h iface, uct_iface_addr_t* addr) {
  static const auto f = bind<decltype(&uct_iface_get_address)>("uct_iface_get_address");
  return f(iface, addr);
}

ucs_status_t uct_iface_get_device_address(uct_iface_h iface, uct_device_addr_t* addr) {
  static const auto f = bind<decltype(&uct_iface_get_device_address)>("uct_iface_get_device_address");
  return f(iface, addr);
}

int uct_iface_is_reachable(const uct_iface_h iface, const uct_device_addr_t* dev_addr,
                           const uct_iface_addr_t* iface_addr) {
  static const auto f = bind<decltype(&uct_iface_is_reachable)>("uct_iface_is_reachable");
  return f(iface, dev_addr, iface_addr);
}

ucs_status_t uct_iface_open(uct_md_h md, uct_worker_h worker, const uct_iface_params_t* params,
                            const uct_iface_config_t* config, uct_iface_h* iface_p) {
  static const auto f = bind<decltype(&uct_iface_open)>("uct_iface_open");
  return f(md, worker, params, config, iface_p);
}

ucs_status_t uct_iface_query(uct_iface_h iface, uct_iface_attr_t* iface_attr) {
  static const auto f = bind<decltype(&uct_iface_query)>("uct_iface_query");
  return f(iface, iface_attr);
}

ucs_status_t uct_iface_set_am_handler(uct_iface_h iface, uint8_t id, uct_am_callback_t cb, void* arg, uint32_t flags) {
  static const auto f = bind<decltype(&uct_iface_set_am_handler)>("uct_iface_set_am_handler");
  return f(iface, id, cb, arg, flags);
}

void uct_md_close(uct_md_h md) {
  static const auto f = bind<decltype(&uct_md_close)>("uct_md_close");
  f(md);
}

ucs_status_t uct_md_config_read(uct_component_h component, const char* env_prefix, const char* filename,
                                uct_md_config_t** config_p) {
  static const auto f = bind<decltype(&uct_md_config_read)>("uct_md_config_read");
  return f(component, env_prefix, filename, config_p);
}

ucs_status_t uct_md_iface_config_read(uct_md_h md, const char* tl_name, const char* env_prefix, const char* filename,
                                      uct_iface_config_t** config_p) {
  static const auto f = bind<decltype(&uct_md_iface_config_read)>("uct_md_iface_config_read");
  return f(md, tl_name, env_prefix, filename, config_p);
}

ucs_status_t uct_md_mem_dereg(uct_md_h md, uct_mem_h memh) {
  static const auto f = bind<decltype(&uct_md_mem_dereg)>("uct_md_mem_dereg");
  return f(md, memh);
}

ucs_status_t uct_md_mem_reg(uct_md_h md, void* address, size_t length, unsigned flags, uct_mem_h* memh_p) {
  static const auto f = bind<decltype(&uct_md_mem_reg)>("uct_md_mem_reg");
  return f(md, address, length, flags, memh_p);
}

ucs_status_t uct_md_mkey_pack(uct_md_h md, uct_mem_h memh, void* rkey_buffer) {
  static const auto f = bind<decltype(&uct_md_mkey_pack)>("uct_md_mkey_pack");
  return f(md, memh, rkey_buffer);
}

ucs_status_t uct_md_open(uct_component_h component, const char* md_name, const uct_md_config_t* config,
                         uct_md_h* md_p) {
  static const auto f = bind<decltype(&uct_md_open)>("uct_md_open");
  return f(component, md_name, config, md_p);
}

ucs_status_t uct_md_query(uct_md_h md, uct_md_attr_t* md_attr) {
  static const auto f = bind<decltype(&uct_md_query)>("uct_md_query");
  return f(md, md_attr);
}

ucs_status_t uct_md_query_tl_resources(uct_md_h md, uct_tl_resource_desc_t** resources_p, unsigned* num_resources_p) {
  static const auto f = bind<decltype(&uct_md_query_tl_resources)>("uct_md_query_tl_resources");
  return f(md, resources_p, num_resources_p);
}

ucs_status_t uct_mem_alloc(size_t length, const uct_alloc_method_t* methods, unsigned num_methods,
                           const uct_mem_alloc_params_t* params, uct_allocated_memory_t* mem) {
  static const auto f = bind<decltype(&uct_mem_alloc)>("uct_mem_alloc");
  return f(length, methods, num_methods, params, mem);
}

ucs_status_t uct_mem_free(const uct_allocated_memory_t* mem) {
  static const auto f = bind<decltype(&uct_mem_free)>("uct_mem_free");
  return f(mem);
}

ucs_status_t uct_query_components(uct_component_h** components_p, unsigned* num_components_p) {
  static const auto f = bind<decltype(&uct_query_components)>("uct_query_components");
  return f(components_p, num_components_p);
}

void uct_release_component_list(uct_component_h* components) {
  static const auto f = bind<decltype(&uct_release_component_list)>("uct_release_component_list");
  f(components);
}

void uct_release_tl_resource_list(uct_tl_resource_desc_t* resources) {
  static const auto f = bind<decltype(&uct_release_tl_resource_list)>("uct_release_tl_resource_list");
  f(resources);
}

ucs_status_t uct_rkey_release(uct_component_h component, const uct_rkey_bundle_t* rkey_ob) {
  static const auto f = bind<decltype(&uct_rkey_release)>("uct_rkey_release");
  return f(component, rkey_ob);
}

ucs_status_t uct_rkey_unpack(uct_component_h component, const void* rkey_buffer, uct_rkey_bundle_t* rkey_ob) {
  static const auto f = bind<decltype(&uct_rkey_unpack)>("uct_rkey_unpack");
  return f(component, rkey_buffer, rkey_ob);
}

ucs_status_t uct_worker_create(ucs_async_context_t* async, ucs_thread_mode_t thread_mode, uct_worker_h* worker_p) {
  static const auto f = bind<decltype(&uct_worker_create)>("uct_worker_create");
  return f(async, thread_mode, worker_p);
}

void uct_worker_destroy(uct_worker_h worker) {
  static const auto f = bind<decltype(&uct_worker_destroy)>("uct_worker_destroy");
  f(worker);
}

}  // extern "C"
