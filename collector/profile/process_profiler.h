// ProcessProfiler: turns the records of one profiled process (one ring file)
// into per-window pprof profiles handed to a ProfileSink.
//
// What it produces, per wall-clock-aligned window [from, from + window)
// (the kinds of collector/pprof/profile_kinds.h):
//   * kCpu (cpu/nanoseconds): from CPU-timer samples when the
//     process has sent any (each worth its cpu_period_ns), otherwise from
//     tick-picked allocation samples (each pick worth one tick). Never both:
//     the series label ringprof_cpu_source says which ("timer" or
//     "alloc_ticks"). See collector/README.md for what each measures.
//   * kMemory (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
//     inuse_space/bytes): alloc_* from the window's allocation samples
//     (alloc_space += weight_bytes, alloc_objects += round(weight_bytes /
//     requested_size), at least 1); inuse_* a snapshot of the process's
//     in-use heap at the window's end (InUseTracker), emitted for every
//     window while anything is in use.
//   * kMutex and kBlock (contentions/count, delay/nanoseconds): the
//     window's off-CPU wait samples of each kind, weighted as
//     wait_profiles.h says.
//   * kWall (wall/nanoseconds), once the process uses the CPU timer: per
//     stack and thread (sample labels thread_id and, from its ThreadName
//     record, thread_name), the CPU-timer samples' CPU time plus the wait
//     samples' estimated time. A name is kept until the first window
//     emitted after its thread's ThreadExit (4096 live names at most).
// Emitter-reported losses appear as a "[lost]" frame in the memory profile.
// Samples carry the application's tags and span id (TagSet records, the
// samples' tag_set and span_id) as pprof sample labels, under the label
// rules of collector/pprof/label_rules.h and a per-key budget of distinct
// values (beyond it: "other"); a tick-picked CPU estimate carries the
// labels of the picked sample.
//
// Records may arrive in any order across threads; callers advance a
// watermark (see TickPicker) and a window is emitted once the watermark has
// passed its end (plus the tick picker's max distance). Finish() emits what
// is left, the last window partial.
//
// Addresses are resolved to modules when a stack is first seen (or, if its
// module's map record had not arrived yet, when a window is built), and
// symbolized once per address, lazily, when a window is built. The
// emitter's own frames (libringprof.so) are cut from the leaf end.
//
// The pieces, ties one way: records arrive typed (ringfile::DispatchRecord)
// at this class's handlers, which intern stacks (StackTable), turn tag sets
// into sample labels (TagLabeler), add to the open windows (WindowSet),
// track the in-use heap (InUseTracker) and the process's own facts
// (ProcessFacts); a closed window goes to the WindowEncoder, and its
// profiles to the ProfileSink; the DeliveryTracker says what a restart
// must not read again. This class keeps the CPU source and ties the pieces
// together.
//
// Thread-compatible: used by the collector's processing thread only.
#ifndef RINGPROF_COLLECTOR_PROFILE_PROCESS_PROFILER_H_
#define RINGPROF_COLLECTOR_PROFILE_PROCESS_PROFILER_H_

#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "collector/base/labels.h"
#include "collector/ingest/checkpoint.h"
#include "collector/ingest/drained_batch.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/profile/delivery_tracker.h"
#include "collector/profile/inuse_tracker.h"
#include "collector/profile/leaf_names.h"
#include "collector/profile/memory_budget.h"
#include "collector/profile/process_facts.h"
#include "collector/profile/stack_table.h"
#include "collector/profile/tag_labeler.h"
#include "collector/profile/tick_picker.h"
#include "collector/profile/window_encoder.h"
#include "collector/profile/window_set.h"
#include "collector/sink/sink.h"
#include "collector/symbolize/symbolizer.h"
#include "ringfile/reader.h"
#include "ringfile/record_dispatch.h"

namespace ringprof {
namespace collector {

struct ProcessProfilerOptions {
  uint64_t tick_ns = 10'000'000;
  uint64_t max_distance_ns = 10'000'000;
  // Record ticks at which no thread had a sample as "[no sample]".
  bool idle_frame = false;
  int64_t window_ns = 10'000'000'000;
  PyroscopeLimits limits;
  // Extra series labels (e.g. from --tags), added to every window.
  Labels extra_labels;
  // Budget of this process's stacks, locations and window aggregates; once
  // it (or the shared MemoryBudget) is spent, samples with a stack not seen
  // before count under one "[truncated]" stack instead.
  uint64_t max_memory_bytes = uint64_t{128} << 20;
  // Samples stamped further than this ahead of / behind the collector's
  // wall clock are dropped and counted (a window far in the future or past
  // is either a broken clock or a hostile writer).
  int64_t max_future_ns = 60'000'000'000;
  int64_t max_past_ns = 3600'000'000'000;
  // The collector's wall clock for that check (null: the real clock).
  int64_t (*now_unix_ns)() = nullptr;
  // Frames in a module that the symbolizer did not resolve (every frame
  // without a symbolizer) get no line at all: the location keeps its
  // address and mapping (file, offset, build-id) for a symbolizer on the
  // server (Pyroscope's, pprof's). Otherwise they are named
  // "module+0xoffset".
  bool unresolved_without_lines = false;
  // Distinct values a tag key may take in this process; later values are
  // folded into "other" (--max-tag-values).
  size_t max_tag_values = 100;
};

// Totals over the process's life (for logs, tests and metrics).
struct ProcessStats {
  uint64_t alloc_samples = 0;
  uint64_t cpu_samples = 0;
  uint64_t wait_samples = 0;  // mutex and block
  uint64_t timing_only_samples = 0;
  uint64_t ticks_picked = 0;
  uint64_t late_samples = 0;  // too late for tick picking
  uint64_t emitter_lost = 0;  // LostSamples records
  uint64_t malformed_records = 0;
  uint64_t windows_emitted = 0;
  uint64_t out_of_range = 0;    // dropped: stamped too far ahead or behind
  uint64_t budget_folded = 0;   // samples under the budget's "[truncated]"
  uint64_t replay_skipped = 0;  // re-read after a restart, already delivered
  uint64_t tag_labels_dropped = 0;  // tags refused by the label rules
  uint64_t tag_values_folded = 0;   // tag values past the budget: "other"
  uint64_t unknown_tag_sets = 0;    // samples naming a set never defined
  // Per kind, the value whose leaf has no function name (leaf_names.h).
  LeafNamesByKind leaf_names;

  // Adds every counter of `other` (totals over processes).
  ProcessStats& operator+=(const ProcessStats& other);
};

class ProcessProfiler : private ringfile::RecordHandler {
 public:
  // `symbolizer` may be null (every frame stays module+0xoffset); both
  // pointers must outlive this object.
  // `budget` may be null (no shared limit); it must outlive this object.
  ProcessProfiler(const ringfile::FileInfo& info,
                  const ProcessProfilerOptions& options, Symbolizer* symbolizer,
                  ProfileSink* sink, MemoryBudget* budget = nullptr);
  ~ProcessProfiler();
  ProcessProfiler(const ProcessProfiler&) = delete;
  ProcessProfiler& operator=(const ProcessProfiler&) = delete;

  // One record (decoded by ringfile::DispatchRecord; a malformed one is
  // counted in stats().malformed_records).
  void OnRecord(const ringfile::RecordView& record);
  // A drained batch of kind kRecords: its records, module maps first
  // (samples of the same batch may use them), then the others in batch
  // order; then its read positions and its watermark (Advance).
  void OnBatch(const DrainedBatch& batch);

  // Promise: no record with an older monotonic timestamp follows. Decides
  // ticks and emits every window that ends at or before watermark_ns minus
  // the max distance.
  void Advance(uint64_t watermark_monotonic_ns);

  // The process ended and its ring is drained: emit everything.
  void Finish();

  // Continue where a predecessor stopped (before any record): restores its
  // modules, labels and CPU source, and skips samples stamped before its
  // last delivered window's end.
  void Resume(const Checkpoint& checkpoint);
  // The reader's positions after the records passed so far (one per ring).
  void SetReadPositions(absl::Span<const uint64_t> positions);
  // A checkpoint if a window was emitted since the last one taken (or
  // always, with `force`); nullopt otherwise.
  std::optional<Checkpoint> TakeCheckpoint(bool force);

  const ProcessStats& stats() const;
  const InUseTracker::Stats& inuse_stats() const { return inuse_.stats(); }
  const ringfile::FileInfo& info() const { return info_; }
  bool ended() const { return facts_.ended(); }
  int32_t exit_status() const { return facts_.exit_status(); }
  bool uses_cpu_timer() const { return cpu_.timer; }
  // Bytes charged to the budgets (estimate).
  uint64_t memory_bytes() const { return memory_.bytes(); }

 private:
  // The typed record handlers (ringfile::RecordHandler).
  void OnAllocSample(const ringfile::RecordView& record,
                     const ringfile::AllocSampleView& sample) override;
  void OnCpuSample(const ringfile::RecordView& record,
                   const ringfile::CpuSampleView& sample) override;
  void OnWaitSample(const ringfile::RecordView& record,
                    const ringfile::WaitSampleView& sample) override;
  void OnModuleMap(const ringfile::RecordView& record,
                   const ringfile::ModuleMapView& map) override;
  void OnModuleUnmap(const ringfile::RecordView& record,
                     const ringfile::ModuleUnmap& unmap) override;
  void OnThreadName(const ringfile::RecordView& record,
                    const ringfile::ThreadNameView& thread) override;
  void OnThreadExit(const ringfile::RecordView& record,
                    const ringfile::ThreadExit& exit) override;
  void OnLabel(const ringfile::RecordView& record,
               const ringfile::LabelView& label) override;
  void OnTagSet(const ringfile::RecordView& record,
                const ringfile::TagSetView& tag_set) override;
  void OnLostSamples(const ringfile::RecordView& record,
                     const ringfile::LostSamples& lost) override;
  void OnProcessEnd(const ringfile::RecordView& record,
                    const ringfile::ProcessEnd& end) override;
  void OnFreeSampled(const ringfile::RecordView& record,
                     const ringfile::FreeSampled& free_sampled) override;
  void OnLiveSample(const ringfile::RecordView& record,
                    const ringfile::LiveSampleView& live) override;
  void OnLiveSweepEnd(const ringfile::RecordView& record,
                      const ringfile::LiveSweepEnd& end) override;
  void OnEnvironmentFact(const ringfile::RecordView& record,
                         const ringfile::EnvironmentFactView& fact) override;
  void OnMalformed(const ringfile::RecordView& record,
                   const absl::Status& status) override;

  void CountMalformed();
  // False (and counted) when a sample at `unix_ns` is out of range.
  bool InRange(int64_t unix_ns);
  // False (and counted) for a sample a predecessor already delivered.
  bool Fresh(int64_t unix_ns, const ringfile::RecordView& record);
  // The window of a sample at `unix_ns` that `record` contributes to.
  WindowSet::Window& WindowOf(int64_t unix_ns,
                              const ringfile::RecordView& record);
  // The window's aggregate for `key` (a stack, or a stack and thread); once
  // the budget is spent, for the key with kBudgetStack instead, which `key`
  // is then changed to.
  template <typename Map>
  typename Map::mapped_type& Slot(WindowSet::Window& window, Map& map,
                                  typename Map::key_type& key);
  // Whether a per-thread table of `size` entries, `slots` of them charged
  // to the process's memory, takes one more (charged once per slot, so
  // entries of exited threads make room; at most kMaxThreadNames).
  bool AdmitThreadEntry(size_t size, size_t& slots, uint64_t entry_bytes);
  // Charges one aggregate to the process's memory and counts it as
  // `window`'s, given back when the window is emitted; false when past the
  // budget (the sample goes to the "[truncated]" stack).
  bool ChargeAggregate(WindowSet::Window& window);
  void OnPick(uint64_t tick_ns, uint32_t stack);
  // Adds `ns` of wall-clock time of thread `tid` at `stack` (under the
  // budget, as Slot); returns the stack it went to.
  uint32_t AddWall(WindowSet::Window& window, uint32_t stack, uint32_t tid,
                   double ns);
  // A CPU-timer sample taken inside a wait is time the wait's sample
  // counts too (the kernel's work in the call; in gVisor, whose CPU clocks
  // count a woken thread's wait for a CPU, most of it): the thread's last
  // CPU sample is kept until its next wait sample, which takes it out of
  // the wall profile when it lies within the wait (and the same window).
  void NoteCpuForWall(uint32_t tid, uint64_t monotonic_ns, int64_t unix_ns,
                      uint32_t stack, double ns);
  void DropCpuInWait(WindowSet::Window& window, int64_t unix_ns,
                     const ringfile::WaitSample& wait);
  // Drops the names of threads that exited before `unix_ns`.
  void ForgetThreadsExitedBefore(int64_t unix_ns);
  void CloseWindowsBefore(int64_t unix_ns);
  void Emit(const WindowSet::Closed& closed);
  // The process's CLOCK_MONOTONIC time of a wall-clock time.
  uint64_t MonotonicOf(int64_t unix_ns) const;

  const ringfile::FileInfo info_;
  const ProcessProfilerOptions options_;
  Symbolizer* const symbolizer_;
  ProfileSink* const sink_;
  TickPicker picker_;
  ProcessMemory memory_;
  StackTable stacks_;
  TagLabeler labeler_;
  WindowEncoder encoder_;
  InUseTracker inuse_;
  WindowSet windows_;
  DeliveryTracker delivery_;
  ProcessFacts facts_;
  CpuSource cpu_;  // the timer once the process sent a CPU sample
  // ThreadName records of live threads, for the wall profile; the exits
  // of named threads (unix ns) until their last window is emitted; the
  // name slots charged to memory_.
  ThreadNames thread_names_;
  absl::flat_hash_map<uint32_t, int64_t> thread_exits_;
  size_t thread_name_slots_ = 0;
  // Per live thread, its last CPU-timer sample not yet followed by a wait
  // sample (DropCpuInWait); the slots charged to memory_.
  struct LastCpu {
    uint64_t monotonic_ns;
    int64_t unix_ns;
    uint32_t stack;  // as added to the wall profile
    double ns;
  };
  absl::flat_hash_map<uint32_t, LastCpu> last_cpu_;
  size_t last_cpu_slots_ = 0;
  mutable ProcessStats stats_;  // the pieces' counters merged in stats()
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_PROCESS_PROFILER_H_
