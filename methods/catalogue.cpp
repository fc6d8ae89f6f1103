#include "methods/descriptor.hpp"

#include "common/errors.hpp"
#include "methods/all_methods.hpp"

namespace logpb::methods {

namespace {

template <class M>
MethodInfo info_of() {
  MethodInfo i;
  i.name = M::name;
  i.summary = M::summary;
  i.plot = M::plot;
  i.needs = M::needs;
  i.scope = M::scope;
  if constexpr (requires { M::default_sizes; }) i.default_sizes = M::default_sizes;
  if constexpr (requires { M::takes; }) i.takes = M::takes;
  if constexpr (requires(const Given& g, Settings& o) { M::budgets(g, o); }) i.budgets = &M::budgets;
  if constexpr (requires(std::FILE * f, const nlohmann::json& j) { M::print(f, j); }) i.print = &M::print;
  if constexpr (requires { M::options; }) i.options = M::options;
  if constexpr (requires(const Settings& o) { M::check(o); }) i.check = &M::check;
  if constexpr (requires { M::link_option; }) i.link_option = M::link_option;
  if constexpr (requires { M::compare_as; }) i.compare_as = M::compare_as;
  if constexpr (requires { M::shares; }) i.shares = M::shares;
  if constexpr (requires { M::contention; }) i.contention = M::contention;
  if constexpr (requires { M::own_table; }) i.own_table = M::own_table;
  if constexpr (requires { M::burst_cap; }) i.burst_cap = M::burst_cap;
  if constexpr (M::scope == Scope::job) {
    i.check_size = &M::check_size;
    i.role = &M::role;
  }
  if constexpr (requires { M::core_slot(0, 2); }) i.core_slot = &M::core_slot;
  return i;
}

template <class... M>
std::vector<MethodInfo> infos(MethodList<M...>) {
  return {info_of<M>()...};
}

}  // namespace

const std::vector<MethodInfo>& all_methods() {
  static const std::vector<MethodInfo> all = infos(AllMethods{});
  return all;
}

const MethodInfo* find_method(std::string_view name) {
  for (const auto& m : all_methods())
    if (m.name == name) return &m;
  return nullptr;
}

analysis::compare::Reading compare_reading(const std::string& bench) {
  const MethodInfo* m = find_method(bench);
  return m ? m->compare_as : analysis::compare::Reading{};
}

ContentionShape contention_shape(const std::string& bench) {
  const MethodInfo* m = find_method(bench);
  return m ? m->contention : ContentionShape::none;
}

std::string method_names(const char* sep, const char* last_sep) {
  std::string s;
  const auto& all = all_methods();
  for (std::size_t i = 0; i < all.size(); ++i) s += (i == 0 ? "" : i + 1 == all.size() ? last_sep : sep) + all[i].name;
  return s;
}

namespace {

// The link-level method a job-level method runs on each link (its link_option, e.g. --pairs-bench), or null
// where it runs none or the option names no method.
const MethodInfo* link_method(const MethodInfo& method, const std::map<std::string, std::string>& method_args) {
  if (method.link_option.empty()) return nullptr;
  const auto it = method_args.find(method.link_option);
  return it == method_args.end() ? nullptr : find_method(it->second);
}

}  // namespace

Needs run_needs(const MethodInfo& method, const std::map<std::string, std::string>& method_args) {
  Needs n = method.needs;
  if (const MethodInfo* l = link_method(method, method_args)) {
    n.bulk = n.bulk || l->needs.bulk;
    n.get = n.get || l->needs.get;
    n.local_completion = n.local_completion || l->needs.local_completion;
  }
  return n;
}

bool run_caps_bursts(const MethodInfo& method, const std::map<std::string, std::string>& method_args) {
  if (method.burst_cap || method.link_option.empty()) return method.burst_cap;
  const MethodInfo* l = link_method(method, method_args);
  return !l || l->burst_cap;  // not named: assume it does, so the probe reads what it may need
}

std::string bench_help() {
  std::string s;
  for (const auto& m : all_methods())
    s += "\n  " + m.name + std::string(m.name.size() < 13 ? 13 - m.name.size() : 1, ' ') + m.summary;
  return s;
}

std::vector<std::uint32_t> method_sizes(const std::vector<std::uint32_t>& default_sizes,
                                        const std::vector<std::uint32_t>& given, std::uint32_t max_bytes) {
  for (auto n : given)
    if (n > max_bytes)
      throw UsageError("size " + std::to_string(n) + " exceeds half the segment (" + std::to_string(max_bytes) + ")");
  if (!given.empty()) return given;
  std::vector<std::uint32_t> out;
  for (auto n : default_sizes)
    if (n <= max_bytes) out.push_back(n);
  return out;
}

}  // namespace logpb::methods
