#include "common/disturbance.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/clock.hpp"

namespace logpb {

namespace {

struct Replier {
  long pid = -1, tid = -1;
  int cpu = -1;
};
Replier& replier() {
  static Replier r;
  return r;
}
struct Judging {
  bool on = true;
  std::string why;
};
Judging& judging() {
  static Judging j;
  return j;
}

// A /proc file read whole from offset 0 of an open descriptor (seq_file restarts there), into buf.
bool read_whole(int fd, std::string& buf) {
  if (fd < 0) return false;
  buf.resize(std::max<std::size_t>(buf.size(), 4096));
  std::size_t got = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(got));
    if (n < 0) return false;
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
    if (got == buf.size()) buf.resize(buf.size() * 2);
  }
  buf.resize(got);
  return true;
}

int open_proc(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }

bool read_schedstat(int fd, ThreadMark& m) {
  char b[128];
  const ssize_t n = pread(fd, b, sizeof b - 1, 0);
  if (n <= 0) return false;
  b[n] = 0;
  unsigned long long run = 0, delay = 0, slices = 0;
  if (std::sscanf(b, "%llu %llu %llu", &run, &delay, &slices) != 3) return false;
  m.run_ns = static_cast<double>(run);
  m.delay_ns = static_cast<double>(delay);
  m.slices = slices;
  m.sched_ok = true;
  return true;
}

// The per-core counts of a /proc/interrupts or /proc/softirqs text, summed over its lines, for two cores (a
// core < 0 is skipped). The header names the columns ("CPU0 CPU1 ..."); a line holds a name, one count per
// column, then a description (interrupts) or nothing (softirqs); lines with fewer counts (ERR, MIS) are skipped.
void sum_columns(const std::string& text, int cpu_a, int cpu_b, std::uint64_t& a, std::uint64_t& b, bool& ok) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return;
  std::vector<int> cols;  // the cpu of each column
  {
    std::istringstream h(line);
    std::string w;
    while (h >> w)
      if (w.rfind("CPU", 0) == 0) cols.push_back(std::atoi(w.c_str() + 3));
  }
  const auto ia = std::find(cols.begin(), cols.end(), cpu_a), ib = std::find(cols.begin(), cols.end(), cpu_b);
  const long ca = ia == cols.end() ? -1 : ia - cols.begin(), cb = ib == cols.end() ? -1 : ib - cols.begin();
  if (ca < 0 && cb < 0) return;
  ok = true;
  while (std::getline(in, line)) {
    const char* p = std::strchr(line.c_str(), ':');
    if (!p) continue;
    ++p;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      char* e = nullptr;
      const unsigned long long v = std::strtoull(p, &e, 10);
      if (e == p) break;  // fewer counts than columns: skip the rest of the line
      if (static_cast<long>(c) == ca) a += v;
      if (static_cast<long>(c) == cb) b += v;
      p = e;
    }
  }
}

struct IrqFiles {
  int irq = open_proc("/proc/interrupts"), soft = open_proc("/proc/softirqs");
  std::string buf;
  ~IrqFiles() {
    if (irq >= 0) ::close(irq);
    if (soft >= 0) ::close(soft);
  }
  void read(int cpu_a, int cpu_b, ThreadMark& a, ThreadMark& b) {
    bool ok = false;
    if (read_whole(irq, buf)) sum_columns(buf, cpu_a, cpu_b, a.irqs, b.irqs, ok);
    bool sok = false;
    if (read_whole(soft, buf)) sum_columns(buf, cpu_a, cpu_b, a.softirqs, b.softirqs, sok);
    a.irq_ok = b.irq_ok = ok && sok;
  }
};
IrqFiles& irq_files() {
  static IrqFiles f;
  return f;
}

CoreDisturbance difference(const ThreadMark& a, const ThreadMark& b, int cpu) {
  CoreDisturbance d;
  d.cpu = cpu;
  d.watched = a.sched_ok && b.sched_ok;
  if (d.watched) {
    d.delay_ns = std::max(0.0, b.delay_ns - a.delay_ns);
    d.switches = b.slices - a.slices;
  }
  if (a.involuntary >= 0 && b.involuntary >= 0) d.involuntary = b.involuntary - a.involuntary;
  if (a.irq_ok && b.irq_ok) {
    d.irqs = static_cast<std::int64_t>(b.irqs - a.irqs);
    d.softirqs = static_cast<std::int64_t>(b.softirqs - a.softirqs);
  }
  return d;
}

std::string ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, ns < 1e5 ? "%.3f" : ns < 1e6 ? "%.2f" : "%.1f", ns / 1e6);
  return b;
}

std::string core_name(const char* who, int cpu) {
  return (cpu >= 0 ? "core " + std::to_string(cpu) + " (" + who + ")" : std::string("the ") + who + "'s core");
}

double limit_ns(const SegmentRule& r, double wall_ns) { return std::max(r.min_ns, r.max_share * wall_ns); }

// Judges a tag by the rule, the first cause found named.
void judge(SegmentTag& t, const SegmentRule& rule) {
  const double lim = limit_ns(rule, t.wall_ns);
  t.clean = true;
  t.cause.clear();
  if (!judging().on) {
    t.unjudged = judging().why;
    return;
  }
  auto held = [&](const CoreDisturbance& d, const char* who) {
    if (!t.clean || !d.watched || d.delay_ns <= lim) return;
    t.clean = false;
    t.cause = "another task held " + core_name(who, d.cpu) + " " + ms(d.delay_ns) + " ms of " + ms(t.wall_ns) + " ms";
  };
  held(t.requester, "requester");
  held(t.replier, "replier");
  if (t.clean && t.detour_ns > lim) {
    t.clean = false;
    t.cause = std::to_string(t.detours) + " detour" + (t.detours == 1 ? "" : "s") + " in the segment's own stamps, " +
              ms(t.detour_ns) + " ms of " + ms(t.wall_ns) + " ms";
    if (t.requester.irqs >= 0)
      t.cause += " (interrupts on " + core_name("requester", t.requester.cpu) + ": " +
                 std::to_string(t.requester.irqs + t.requester.softirqs) + ")";
  }
}

// A cause's kind, for a figure's summary: the words before the figures ("another task held core 0
// (requester)").
std::string cause_kind(const std::string& cause) {
  const auto p = cause.find(')');
  if (cause.rfind("another task", 0) == 0 && p != std::string::npos) return cause.substr(0, p + 1);
  if (cause.find("detour") != std::string::npos) return "detours in the segments' own stamps";
  return cause;
}

}  // namespace

void watch_replier(long pid, long tid, int cpu) { replier() = {pid, tid, cpu}; }
void judge_segments(bool on, const std::string& why) { judging() = {on, why}; }

SegmentWatch::SegmentWatch(const Clock& clock, bool irqs) : clock_(clock), irqs_(irqs) {
  self_fd_ = open_proc("/proc/thread-self/schedstat");
  self_cpu_ = sched_getcpu();
  const Replier& r = replier();
  if (r.pid > 0 && r.tid > 0 && r.pid != ::getpid()) {
    peer_fd_ = open_proc("/proc/" + std::to_string(r.pid) + "/task/" + std::to_string(r.tid) + "/schedstat");
    peer_cpu_ = r.cpu;
  }
}

SegmentWatch::~SegmentWatch() {
  if (self_fd_ >= 0) ::close(self_fd_);
  if (peer_fd_ >= 0) ::close(peer_fd_);
}

namespace {
void mark_self(int fd, ThreadMark& m) {
  if (fd >= 0) read_schedstat(fd, m);
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) m.involuntary = ru.ru_nivcsw;
}
}  // namespace

void SegmentWatch::begin() {
  self0_ = {};
  peer0_ = {};
  self_cpu_ = sched_getcpu();
  if (irqs_) irq_files().read(self_cpu_, peer_cpu_, self0_, peer0_);
  if (peer_fd_ >= 0) read_schedstat(peer_fd_, peer0_);
  mark_self(self_fd_, self0_);
  t0_ = tsc::now();
}

SegmentTag SegmentWatch::end(const SegmentRule& rule) {
  const std::uint64_t t1 = tsc::now_end();
  ThreadMark self1, peer1;
  mark_self(self_fd_, self1);
  if (peer_fd_ >= 0) read_schedstat(peer_fd_, peer1);
  if (irqs_) irq_files().read(self_cpu_, peer_cpu_, self1, peer1);
  SegmentTag t;
  t.wall_ns = clock_.ns(static_cast<double>(t1 - t0_));
  t.requester = difference(self0_, self1, self_cpu_);
  if (peer_fd_ >= 0) t.replier = difference(peer0_, peer1, peer_cpu_);
  judge(t, rule);
  return t;
}

void add_detours(SegmentTag& tag, const std::vector<double>& periods_ns, const SegmentRule& rule) {
  std::vector<double> v;
  for (double p : periods_ns)
    if (std::isfinite(p)) v.push_back(p);
  if (v.size() < 3) return;
  std::vector<double> s = v;
  std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
  const double med = s[s.size() / 2];
  const double gap = std::max(rule.detour_factor * med, rule.detour_min_ns);
  for (double p : v)
    if (p > gap) {
      ++tag.detours;
      tag.detour_ns += p - med;
    }
  judge(tag, rule);
}

nlohmann::json to_json(const SegmentTag& t) {
  auto core = [](const CoreDisturbance& d) -> nlohmann::json {
    if (!d.watched) return nullptr;
    nlohmann::json j = {{"cpu", d.cpu}, {"delay_ns", d.delay_ns}, {"switches", d.switches}};
    if (d.involuntary >= 0) j["involuntary"] = d.involuntary;
    if (d.irqs >= 0) j["irqs"] = d.irqs, j["softirqs"] = d.softirqs;
    return j;
  };
  nlohmann::json j = {
      {"wall_ns", t.wall_ns}, {"clean", t.clean}, {"requester", core(t.requester)}, {"replier", core(t.replier)}};
  if (t.detours > 0) j["detours"] = {{"count", t.detours}, {"ns", t.detour_ns}};
  if (!t.unjudged.empty()) j["unjudged"] = t.unjudged;
  if (!t.clean) j["cause"] = t.cause;
  return j;
}

void refuse_figure(nlohmann::json& figure, const std::string& refusal) {
  if (!figure.is_object()) figure = nlohmann::json::object();
  const auto v = figure.find("value_ns");
  if (v != figure.end() && v->is_number()) {
    figure["raw_value_ns"] = *v;
    figure["value_ns"] = nullptr;
    figure["ci95_ns"] = nullptr;
    figure["error"] = refusal;
  } else if (!figure.contains("error")) {
    figure["value_ns"] = nullptr;
    figure["error"] = refusal;
  }
  figure["disturbed"] = true;
  figure["refusal"] = refusal;
}

bool has_segment_tags(const nlohmann::json& doc) {
  if (doc.is_object()) {
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if ((it.key() == "segments" && it->is_object()) || has_segment_tags(*it)) return true;
  } else if (doc.is_array()) {
    for (const auto& e : doc)
      if (has_segment_tags(e)) return true;
  }
  return false;
}

bool SegmentBook::record(const SegmentTag& t) {
  tags_.push_back(t);
  clean_ += t.clean;
  return t.clean;
}

std::string SegmentBook::refusal() const {
  if (enough()) return {};
  std::map<std::string, int> kinds;
  for (const auto& t : tags_)
    if (!t.clean) ++kinds[cause_kind(t.cause)];
  std::string s = "disturbed: " + std::to_string(disturbed()) + " of " + std::to_string(measured()) + " " + unit_ +
                  " (" + std::to_string(measured() ? 100 * disturbed() / measured() : 0) + "%) lost";
  std::string by;
  for (const auto& [k, n] : kinds) by += (by.empty() ? "" : "; ") + k + " in " + std::to_string(n);
  if (!by.empty()) s += " (" + by + ")";
  s += ", " + std::to_string(clean_) + " clean where " + std::to_string(needed_) +
       " are needed: free the measuring cores (--cpu, --peer-cpu, isolcpus) or run again";
  return s;
}

nlohmann::json SegmentBook::to_json() const {
  nlohmann::json tags = nlohmann::json::array();
  for (const auto& t : tags_) tags.push_back(logpb::to_json(t));
  nlohmann::json j = {
      {"unit", unit_},          {"wanted", wanted_}, {"needed", needed_},        {"budget", budget_},
      {"measured", measured()}, {"clean", clean_},   {"disturbed", disturbed()}, {"segments", std::move(tags)}};
  if (!enough()) j["refusal"] = refusal();
  return j;
}

nlohmann::json SegmentBook::merged(const std::vector<const SegmentBook*>& books) {
  int measured = 0, clean = 0;
  std::map<std::string, int> kinds;
  for (const auto* b : books) {
    measured += b->measured();
    clean += b->clean_;
    for (const auto& t : b->tags_)
      if (!t.clean) ++kinds[cause_kind(t.cause)];
  }
  nlohmann::json causes = nlohmann::json::object();
  for (const auto& [k, n] : kinds) causes[k] = n;
  return {{"measured", measured}, {"clean", clean}, {"disturbed", measured - clean}, {"causes", causes}};
}

}  // namespace logpb
