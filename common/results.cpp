#include "common/results.hpp"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <ctime>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/stats.hpp"

namespace logpb {

#ifndef LOGPB_VERSION
#define LOGPB_VERSION "0.0.0"
#endif
#ifndef LOGPB_GIT
#define LOGPB_GIT "unknown"
#endif

std::string version_string() { return std::string(LOGPB_VERSION) + "+" + LOGPB_GIT; }

void write_json_atomic(const std::string& path, const nlohmann::json& j, bool durable) {
  write_text_atomic(path, j.dump(1) + "\n", durable);
}

void write_text_atomic(const std::string& path, const std::string& text, bool durable) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write results to " + tmp + ": " + std::strerror(errno));
  const char* p = text.data();
  std::size_t n = text.size();
  while (n) {
    const ssize_t r = ::write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      const std::string e = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error("writing " + tmp + ": " + e);
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  if (durable) ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string e = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("renaming results into " + path + ": " + e);
  }
}

namespace {
// The staged record: written by the thread that checkpoints. A fault handler reads it on that same thread
// (the datapath, whose burst faults, is the thread that checkpoints between curves), so it takes no lock;
// another thread takes the lock, which staging holds while it swaps the record in.
struct FaultRecord {
  bool armed = false;
  std::string error, path, tmp, text;
};
FaultRecord& fault_record() {
  static FaultRecord r;
  return r;
}
std::mutex& fault_record_lock() {
  static std::mutex m;
  return m;
}
}  // namespace

void arm_fault_record(std::string error) {
  const std::lock_guard lock(fault_record_lock());
  fault_record().armed = true;
  fault_record().error = std::move(error);
}
bool fault_record_armed() { return fault_record().armed; }

void stage_fault_record(const std::string& path, const nlohmann::json& doc) {
  nlohmann::json failed = doc;
  failed["status"] = "failed";
  const std::lock_guard lock(fault_record_lock());
  failed["error"] = fault_record().error;
  FaultRecord next{true, fault_record().error, path, path + ".tmp." + std::to_string(getpid()), failed.dump(1) + "\n"};
  std::swap(fault_record(), next);
}

std::string fault_record_path() {
  const std::lock_guard lock(fault_record_lock());
  return fault_record().path;
}

void write_fault_record_from_thread() noexcept {
  const std::lock_guard lock(fault_record_lock());
  write_fault_record();
}

void write_fault_record() noexcept {
  const FaultRecord& r = fault_record();
  if (r.path.empty()) return;
  const int fd = ::open(r.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char* p = r.text.data();
  std::size_t n = r.text.size();
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      ::unlink(r.tmp.c_str());
      return;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(r.tmp.c_str(), r.path.c_str()) != 0) ::unlink(r.tmp.c_str());
}

nlohmann::json host_meta(const Clock& clock) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  utsname u{};
  uname(&u);
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const double dis = clock.cpuid_disagreement();
  return {
      {"host", host},
      {"kernel", std::string(u.sysname) + " " + u.release},
      {"cpu", clock.cpuid().brand},
      {"online_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
      {"started_utc", when},
      {"version", version_string()},
      {"tsc",
       {{"hz", clock.hz()},
        {"invariant", clock.cpuid().invariant},
        {"calibrated_against", "CLOCK_MONOTONIC_RAW"},
        {"calibration_spread", clock.calibration_spread()},
        {"cpuid_hz",
         clock.cpuid().reported_hz > 0 ? nlohmann::json(clock.cpuid().reported_hz) : nlohmann::json(nullptr)},
        {"cpuid_source", clock.cpuid().reported_by},
        {"cpuid_disagreement", std::isfinite(dis) ? nlohmann::json(dis) : nlohmann::json(nullptr)},
        {"timer_cost_ns", clock.ns(clock.timer_cost_cycles())},
        {"resolution_ns", clock.resolution_ns()},
        {"smallest_step_ns", clock.smallest_step_ns()},
        {"resolution_note",
         "typical (median nonzero) step between consecutive TSC reads, the floor of every "
         "reported ci95; smallest_step_ns is the least step seen, which a TSC that advances "
         "in steps shows when it splits one, so no figure can move by it"}}},
  };
}

nlohmann::json interruptions_json(const Interruptions& irq, const ProbePrecision* rule) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"window_ms", irq.window_ms},
                      {"max_window_ms", irq.max_window_ms},
                      {"stopped_early", irq.stopped_early},
                      {"threshold_ns", irq.threshold_ns},
                      {"count", irq.count},
                      {"median_interval_us", num(irq.median_interval_us)},
                      {"median_interval_ci95_us", num(irq.median_interval_ci95_us)},
                      {"median_length_us", num(irq.median_length_us)},
                      {"max_length_us", num(irq.max_length_us)},
                      {"stolen_fraction", irq.stolen_fraction},
                      {"stolen_fraction_ci95", num(irq.stolen_fraction_ci95)}};
  if (!rule) return j;
  j["stop_rule"] = {{"min_ms", rule->min_ms},
                    {"chunk_ms", rule->chunk_ms},
                    {"stolen_fraction_ci95", rule->stolen_ci95},
                    {"stolen_fraction_limit", rule->limit},
                    {"median_interval_rel_ci95", rule->interval_read ? nlohmann::json(rule->interval_rel_ci95)
                                                                     : nlohmann::json("not read by this run")},
                    {"min_count", rule->min_count},
                    {"rule",
                     "stops before max_window_ms once, after min_ms and min_count interruptions, the stolen "
                     "fraction's 95% interval (Student-t over chunk_ms chunks) is at most stolen_fraction_ci95 "
                     "either side or clear of stolen_fraction_limit (the check's), and the median interval's "
                     "(order statistics) at most median_interval_rel_ci95 of the median"}};
  return j;
}

nlohmann::json transport_floor_json(const Clock& clock, const std::vector<std::uint64_t>& cycles, std::size_t warmup,
                                    const std::string& loop, int bytes, std::string why) {
  const std::size_t timed = cycles.size() > warmup ? cycles.size() - warmup : 0;
  if (why.empty() && timed < 100) why = "fewer than 100 round trips timed (" + std::to_string(timed) + ")";
  if (!why.empty()) return {{"loop", loop}, {"bytes", bytes}, {"rtt", nullptr}, {"why", why}};
  std::vector<double> ns;
  ns.reserve(timed);
  for (std::size_t k = warmup; k < cycles.size(); ++k)
    ns.push_back(clock.ns(static_cast<double>(cycles[k]) - clock.timer_cost_cycles()));
  const Summary sm = summarize(ns);
  return {{"loop", loop},
          {"bytes", bytes},
          {"iterations", timed},
          {"rtt", {{"value_ns", sm.median}, {"ci95_ns", sm.ci95_median}}},
          {"rtt_min_ns", sm.min}};
}

}  // namespace logpb
