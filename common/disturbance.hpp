// What disturbed a timed segment. A segment is the unit a method fits from (a flood run, a batch of round
// trips, a burst, a probe, a point of a curve); each is tagged, on both measuring threads, with what the kernel
// says took their cores while it ran, and judged clean or disturbed by one rule (SegmentRule), the same for
// every method. A method fits its figures from clean segments only, measures a disturbed one again within a
// budget, and refuses a figure (value null, with the cause in words) when the budget ends without enough clean
// ones (SegmentBook).
//
// Sources, read at a segment's two ends only (never inside a timed loop):
//  - each thread's run delay: the time it was runnable but another task held its core, and the switches onto
//    its core (/proc/<thread>/schedstat, fields 2 and 3; the scheduler's own ns, exact where the tick is not);
//  - this thread's involuntary switches (getrusage(RUSAGE_THREAD).ru_nivcsw);
//  - both cores' interrupts and softirqs (/proc/interrupts, /proc/softirqs: counts, no times);
//  - the segment's own TSC stamps where it has them: gaps far beyond the segment's median step (detours), which
//    catch what the scheduler does not account, an interrupt handler run on the thread's time.
// The replier is watched where it runs on this host (its thread's schedstat, by pid and tid from the ranks'
// placement); across hosts only the requester's side is seen, and the tag says so.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace logpb {

// One thread and its core at one instant, as the kernel accounts them.
struct ThreadMark {
  double run_ns = 0, delay_ns = 0;       // schedstat: time on the core, time runnable and waiting for it
  std::uint64_t slices = 0;              // schedstat: times it was switched onto a core
  long involuntary = -1;                 // ru_nivcsw; -1: not readable (another process's thread)
  std::uint64_t irqs = 0, softirqs = 0;  // its core's counts
  bool sched_ok = false, irq_ok = false;
};

// What took one measuring thread's core during a segment.
struct CoreDisturbance {
  bool watched = false;  // the thread's counters were readable at both ends
  int cpu = -1;
  double delay_ns = 0;                    // run delay: other tasks held the core this long while the thread wanted it
  std::uint64_t switches = 0;             // switches onto a core beyond the first
  long involuntary = -1;                  // involuntary context switches (this thread only)
  std::int64_t irqs = -1, softirqs = -1;  // the core's interrupts and softirqs; -1: not read
};

// One segment's tag.
struct SegmentTag {
  double wall_ns = 0;
  CoreDisturbance requester, replier;
  double detour_ns = 0;  // the segment's own stamps: time in gaps far beyond its median step
  int detours = 0;
  bool clean = true;
  std::string cause;     // empty when clean: "another task held core 0 (requester) 0.61 ms of 62 ms"
  std::string unjudged;  // why the rule was not applied (judge_segments), else empty
};
nlohmann::json to_json(const SegmentTag& t);

// The rule, one for every method: a segment is disturbed when another task held a measuring thread's core for
// more than max_share of its wall time and more than min_ns (a kworker's few us in a 60 ms flood is not), or
// when its stamps hold detours past the same limit. A figure's bias from a segment is at most that share.
struct SegmentRule {
  double max_share = 0.002;
  double min_ns = 2000;
  // A gap between consecutive stamps is a detour when longer than factor x the median step and min_gap_ns.
  double detour_factor = 8;
  double detour_min_ns = 5000;
};
inline constexpr SegmentRule kSegmentRule{};

// Reads the counters of this thread and, where set, of the replier's thread on this host.
class Clock;

class SegmentWatch {
 public:
  // irqs: also read both cores' interrupt and softirq counts at each end (/proc/interrupts: 30 us here, more
  // on a many-core node), for segments of many ms; the run delays alone cost a few us.
  explicit SegmentWatch(const Clock& clock, bool irqs = false);
  ~SegmentWatch();
  SegmentWatch(const SegmentWatch&) = delete;
  SegmentWatch& operator=(const SegmentWatch&) = delete;

  void begin();
  // The tag of the segment since begin(); its detours, if the caller has stamps, are added by add_detours.
  SegmentTag end(const SegmentRule& rule = kSegmentRule);
  bool replier_watched() const { return peer_fd_ >= 0; }

 private:
  const Clock& clock_;
  int self_fd_ = -1, peer_fd_ = -1;
  int self_cpu_ = -1, peer_cpu_ = -1;
  bool irqs_ = false;
  std::uint64_t t0_ = 0;
  ThreadMark self0_, peer0_;
};

// Adds the detours in a segment's stamps (ascending TSC values, or the periods between them) to its tag, and
// judges it again.
void add_detours(SegmentTag& tag, const std::vector<double>& periods_ns, const SegmentRule& rule = kSegmentRule);

// Whether tags are judged at all. Ranks that share a core (an oversubscribed job, whose figures are already
// marked unfit for timing) hold each other's core by design: every segment would read as disturbed. Off, the
// tags are still recorded, every one clean, and `why` says why they were not judged.
void judge_segments(bool on, const std::string& why = {});

// The replier whose core the requester watches: a thread of another process on this host (the job sets it
// once the ranks' placements are known; -1 clears it). Process-wide, like the clock.
void watch_replier(long pid, long tid, int cpu);

// A figure's segments: how many were measured, clean and disturbed, and by what. A method asks for `wanted`
// clean segments and may measure up to `budget` in all; a figure with fewer than `needed` clean ones has no
// value, and refusal() says why.
class SegmentBook {
 public:
  SegmentBook(std::string unit, int wanted, int needed, int budget)
      : unit_(std::move(unit)), wanted_(wanted), needed_(needed), budget_(budget) {}
  // Records a tag; true when the segment is clean (the caller keeps it).
  bool record(const SegmentTag& t);
  bool done() const { return clean_ >= wanted_ || exhausted(); }
  bool exhausted() const { return measured() >= budget_; }
  bool enough() const { return clean_ >= needed_; }
  int clean() const { return clean_; }
  int measured() const { return static_cast<int>(tags_.size()); }
  int disturbed() const { return measured() - clean_; }
  // "disturbed: 7 of 12 flood runs (58%) lost to another task on core 0 (requester)"; empty when enough().
  std::string refusal() const;
  nlohmann::json to_json() const;
  // Books of several figures (one per message size, say) as one record.
  static nlohmann::json merged(const std::vector<const SegmentBook*>& books);

 private:
  std::string unit_;
  int wanted_, needed_, budget_;
  int clean_ = 0;
  std::vector<SegmentTag> tags_;
};

// A figure's JSON record ({value_ns, ci95_ns, ...}) refused for its segments: value and interval null, the
// refusal as its error, the number it would have had kept as raw_value_ns, "disturbed": true. Leaves a
// record that already has no value as it is, its refusal added.
void refuse_figure(nlohmann::json& figure, const std::string& refusal);

// Whether a results document holds segment tags (a "segments" record anywhere in it): its method judged its
// segments one by one.
bool has_segment_tags(const nlohmann::json& doc);

// How long a segment of many short operations (a batch of round trips) is made: short enough that most fit
// between the steals of a busy neighbour (0.5-2 ms of every 5 ms), long enough that its two ends' reads (a
// few us) are far apart.
inline constexpr double kSegmentTargetNs = 1e6;
// Segments measured per segment wanted, disturbed ones included.
inline constexpr int kSegmentBudget = 3;

// Measures `total` items in batches of `batch`, each batch a segment: one(out) appends at most one sample; a
// disturbed batch's samples are dropped and the batch measured again, until `total` samples are kept or the
// book's budget ends.
template <class T, class One>
void clean_batches(SegmentWatch& w, SegmentBook& book, std::vector<T>& out, int total, int batch, One&& one) {
  out.reserve(static_cast<std::size_t>(total));
  while (static_cast<int>(out.size()) < total && !book.exhausted()) {
    const std::size_t mark = out.size();
    const int n = std::min(batch, total - static_cast<int>(out.size()));
    w.begin();
    for (int i = 0; i < n; ++i) one(out);
    if (!book.record(w.end())) out.resize(mark);
  }
}

}  // namespace logpb
