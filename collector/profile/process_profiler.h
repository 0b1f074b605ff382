// ProcessProfiler: turns the records of one profiled process (one ring file)
// into per-window pprof profiles handed to a ProfileSink.
//
// What it produces, per wall-clock-aligned window [from, from + window):
//   * "process_cpu" (cpu/nanoseconds): from CPU-timer samples when the
//     process has sent any (each worth its cpu_period_ns), otherwise from
//     tick-picked allocation samples (each pick worth one tick). Never both:
//     the series label ringprof_cpu_source says which ("timer" or
//     "alloc_ticks"). See collector/README.md for what each measures.
//   * "memory" (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
//     inuse_space/bytes): alloc_* from the window's allocation samples
//     (alloc_space += weight_bytes, alloc_objects += round(weight_bytes /
//     requested_size), at least 1); inuse_* a snapshot of the process's
//     in-use heap at the window's end (InUseTracker), emitted for every
//     window while anything is in use.
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
// Thread-compatible: used by the collector's processing thread only.
#ifndef RINGPROF_COLLECTOR_PROCESS_PROFILER_H_
#define RINGPROF_COLLECTOR_PROCESS_PROFILER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "collector/pprof/pprof_builder.h"
#include "collector/profile/inuse_tracker.h"
#include "collector/profile/tick_picker.h"
#include "collector/sink/sink.h"
#include "collector/symbolize/symbolizer.h"
#include "ringfile/reader.h"
#include "ringfile/record_dispatch.h"

namespace ringprof {
namespace collector {

// The memory all ProcessProfilers of a collector may use for interned stacks,
// locations and window aggregates (an estimate in bytes, not RSS). Shared by
// the profilers of one processing thread: not thread-safe.
struct MemoryBudget {
  uint64_t limit_bytes = uint64_t{1} << 30;
  uint64_t used_bytes = 0;
};

struct ProcessProfilerOptions {
  uint64_t tick_ns = 10'000'000;
  uint64_t max_distance_ns = 10'000'000;
  // Record ticks at which no thread had a sample as "[no sample]".
  bool idle_frame = false;
  int64_t window_ns = 10'000'000'000;
  PyroscopeLimits limits;
  // Extra series labels (e.g. from --tags), added to every window.
  std::vector<std::pair<std::string, std::string>> extra_labels;
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

// How far a profiler has delivered its process's records, for a successor
// to resume exactly there (collector/ingest/ring_state.h persists it).
struct Checkpoint {
  // Per ring: no record below this index contributes to a window not yet
  // handed to the sink.
  std::vector<uint64_t> positions;
  // Per ring: records below this index were read (a sample among them
  // stamped before emitted_until_unix_ns was delivered; records above it
  // were never seen and always count).
  std::vector<uint64_t> consumed;
  // Every sample stamped before this (Unix ns) is in a delivered window.
  int64_t emitted_until_unix_ns = INT64_MIN;
  // What records that may be overwritten by now told the profiler.
  std::vector<ModuleInfo> modules;
  std::vector<std::pair<std::string, std::string>> labels;
  bool cpu_timer = false;
  uint64_t cpu_period_ns = 0;
};

// Totals over the process's life (for logs, tests and metrics).
struct ProcessStats {
  uint64_t alloc_samples = 0;
  uint64_t cpu_samples = 0;
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
  // The records of one drained batch: module maps first (samples of the
  // same batch may use them), then the others in batch order.
  void OnRecords(absl::Span<const ringfile::RecordView> records);

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

  const ProcessStats& stats() const { return stats_; }
  const InUseTracker::Stats& inuse_stats() const { return inuse_.stats(); }
  const ringfile::FileInfo& info() const { return info_; }
  bool ended() const { return ended_; }
  int32_t exit_status() const { return exit_status_; }
  bool uses_cpu_timer() const { return timer_mode_; }
  // Bytes charged to the budgets (estimate).
  uint64_t memory_bytes() const { return memory_bytes_; }

 private:
  // Location: one address of the process, resolved to a module at first
  // sight (or first use, see ModuleOf), symbolized on first use in a
  // profile.
  struct Location {
    uint64_t address;  // as recorded
    bool exact_pc;     // leaf of a CPU sample; others are return addresses
    int module = -1;   // index into modules_
    bool symbolized = false;
    std::vector<SymbolizedFrame> frames;
  };
  struct Stack {
    std::vector<uint32_t> locations;  // leaf first; indices into locations_
    bool truncated = false;
    uint32_t labels = 0;  // index into sample_labels_; 0 = none
  };
  using Labels = std::vector<std::pair<std::string, std::string>>;
  struct Window {
    absl::flat_hash_map<uint32_t, int64_t> tick_cpu_ns;   // alloc ticks
    absl::flat_hash_map<uint32_t, int64_t> timer_cpu_ns;  // CPU timer
    absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>> alloc;
    int64_t first_event_unix_ns = INT64_MAX;
    int64_t last_event_unix_ns = 0;
    // Per ring: the smallest record index that contributed (checkpoints).
    std::vector<uint64_t> min_index;
  };
  // Synthetic stack ids (never returned by InternStack).
  static constexpr uint32_t kLostStack = 0xfffffff0;
  static constexpr uint32_t kNoSampleStack = 0xfffffff1;
  static constexpr uint32_t kBudgetStack = 0xfffffff2;
  // CPU time of a thread the emitter could not sample.
  static constexpr uint32_t kNotSampledStack = 0xfffffff3;

  struct SpanHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const uint64_t> s) const;
  };
  struct SpanEq {
    using is_transparent = void;
    bool operator()(absl::Span<const uint64_t> a,
                    absl::Span<const uint64_t> b) const;
  };

  // The typed record handlers (ringfile::RecordHandler).
  void OnAllocSample(const ringfile::RecordView& record,
                     const ringfile::AllocSampleView& sample) override;
  void OnCpuSample(const ringfile::RecordView& record,
                   const ringfile::CpuSampleView& sample) override;
  void OnModuleMap(const ringfile::RecordView& record,
                   const ringfile::ModuleMapView& map) override;
  void OnModuleUnmap(const ringfile::RecordView& record,
                     const ringfile::ModuleUnmap& unmap) override;
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
  void OnMalformed(const ringfile::RecordView& record,
                   const absl::Status& status) override;

  // Workload Label records kept per process (Pyroscope accepts at most 30
  // labels per series; the collector's own take the rest).
  static constexpr size_t kMaxProcessLabels = 16;

  uint32_t InternStack(absl::Span<const uint64_t> frames, bool exact_leaf,
                       bool truncated, uint32_t labels);
  // The sample labels (index into sample_labels_) of a sample naming
  // `tag_set` and `span_id`.
  uint32_t SampleLabels(uint32_t tag_set, uint64_t span_id);
  // Charges `bytes` to both budgets; false (nothing charged) when either
  // would be exceeded.
  bool Charge(uint64_t bytes);
  // False (and counted) when a sample at `unix_ns` is out of range.
  bool InRange(int64_t unix_ns);
  // The window's aggregate for `stack`, or kBudgetStack's once the budget is
  // spent.
  template <typename Map>
  typename Map::mapped_type& Slot(Map& map, uint32_t stack);
  uint32_t InternLocation(uint64_t address, bool exact_pc);
  int FindModule(uint64_t address) const;
  // The location's module, resolved now if it was unknown when first seen.
  int ModuleOf(uint32_t location);

  Window& WindowAt(int64_t unix_ns);
  // Notes that `record` contributes to `window` (for checkpoints).
  void Contributes(Window& window, const ringfile::RecordView& record);
  // True (and counted) for a sample a predecessor already delivered.
  bool Replayed(int64_t unix_ns, const ringfile::RecordView& record);
  void OnPick(uint64_t tick_ns, uint32_t tid, uint32_t stack);
  void EmitWindowsBefore(int64_t unix_ns);
  // Creates the windows without records between the open ones and
  // `unix_ns` (INT64_MAX: the last window), at most kMaxIdleWindows.
  void FillIdleWindows(int64_t unix_ns);
  static constexpr int64_t kMaxIdleWindows = 360;
  void EmitWindow(int64_t index, const Window& window, bool final_window);
  // End of a window's profile: the window's end, or for the final one, a
  // tick after its last event.
  int64_t WindowUntil(int64_t index, const Window& window,
                      bool final_window) const;

  void AppendStack(uint32_t stack, PprofBuilder& builder,
                   absl::flat_hash_map<uint32_t, uint32_t>& memo,
                   std::vector<PprofBuilder::LocationId>& out);
  static MappingSpec MappingOf(const ModuleInfo& module);
  void InternMainMapping(PprofBuilder& builder) const;
  PprofBuilder::LocationId BuilderLocation(
      uint32_t location, PprofBuilder& builder,
      absl::flat_hash_map<uint32_t, uint32_t>& memo);
  std::vector<std::pair<std::string, std::string>> SeriesLabels() const;
  // The process's CLOCK_MONOTONIC time of a wall-clock time.
  uint64_t MonotonicOf(int64_t unix_ns) const;
  // The sample labels of `stack` (synthetic stacks have none).
  PprofBuilder::LabelSetId BuilderLabels(uint32_t stack,
                                         PprofBuilder& builder) const;

  const ringfile::FileInfo info_;
  const ProcessProfilerOptions options_;
  Symbolizer* const symbolizer_;
  ProfileSink* const sink_;
  TickPicker picker_;

  struct Module : ModuleInfo {
    bool is_emitter = false;  // libringprof.so: trimmed from stack leaves
  };
  std::vector<Module> modules_;
  // Active modules by start address -> index into modules_.
  std::map<uint64_t, int> active_modules_;
  std::vector<Location> locations_;
  absl::flat_hash_map<uint64_t, uint32_t> location_index_;  // key: addr*2+pc
  std::vector<Stack> stacks_;
  absl::flat_hash_map<std::vector<uint64_t>, uint32_t, SpanHash, SpanEq>
      stack_index_;
  std::vector<uint64_t> scratch_key_;

  // Tag sets by the emitter's id: labels after the rules and the budget.
  absl::flat_hash_map<uint32_t, Labels> tag_sets_;
  // Per tag key, the values admitted so far (the budget).
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>>
      tag_values_;
  // Distinct sample label sets; [0] is the empty one.
  std::vector<Labels> sample_labels_{Labels()};
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, uint32_t>
      sample_labels_index_;

  std::map<int64_t, Window> windows_;  // by window index
  int64_t first_open_window_ = INT64_MIN;
  bool timer_mode_ = false;
  uint64_t timer_period_ns_ = 0;
  bool ended_ = false;
  int32_t exit_status_ = -1;
  std::vector<std::pair<std::string, std::string>> process_labels_;
  const std::string session_id_;
  InUseTracker inuse_;
  ProcessStats stats_;
  MemoryBudget* const budget_;
  uint64_t memory_bytes_ = 0;
  std::vector<uint64_t> read_positions_;
  int64_t resumed_until_unix_ns_ = INT64_MIN;  // samples before: delivered
  std::vector<uint64_t> resumed_consumed_;     // ... if read before
  int64_t emitted_until_unix_ns_ = INT64_MIN;
  int64_t checkpointed_until_unix_ns_ = INT64_MIN;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROCESS_PROFILER_H_
