#include "collector/profile/process_profiler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "collector/base/clock.h"
#include "collector/base/hex.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/pprof/label_rules.h"

namespace ringprof {
namespace collector {
namespace {

using ringfile::RecordType;

// Estimated memory of one stack's aggregate in one window map.
constexpr uint64_t kAggregateBytes = 48;
// Threads whose names a process keeps, and the estimated memory of one.
constexpr size_t kMaxThreadNames = 4096;
constexpr uint64_t kThreadNameBytes = 96;
constexpr uint64_t kLastCpuBytes = 48;

// A sample of an s-byte allocation standing for w bytes stands for about
// w / s allocations (at least one; one when s is unknown; none for w = 0).
int64_t ObjectsOf(int64_t weight, uint64_t requested_size) {
  if (weight <= 0) return 0;
  if (requested_size == 0) return 1;
  return std::max<int64_t>(
      1, std::llround(static_cast<double>(weight) / requested_size));
}

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& malformed_records = Metrics::Get().GetCounter(
      "ringprof_malformed_records_total",
      "Ring records that failed to decode and were skipped.");
  Counter& samples_read = Metrics::Get().GetCounter(
      "ringprof_samples_read_total",
      "Allocation, CPU and wait samples read from ring files.");
  Counter& emitter_lost = Metrics::Get().GetCounter(
      "ringprof_emitter_lost_samples_total",
      "Samples the emitters reported they could not record.");
  Counter& out_of_range = Metrics::Get().GetCounter(
      "ringprof_records_out_of_range_total",
      "Samples dropped because their timestamp lies further ahead of or "
      "behind the collector's clock than --max-future / --max-past.");
  Counter& late_samples = Metrics::Get().GetCounter(
      "ringprof_late_samples_total",
      "Samples that arrived after their ticks were decided.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

WindowEncoderOptions EncoderOptions(const ringfile::FileInfo& info,
                                    const ProcessProfilerOptions& options) {
  WindowEncoderOptions out;
  out.limits = options.limits;
  out.tick_ns = options.tick_ns;
  out.unresolved_without_lines = options.unresolved_without_lines;
  out.executable = info.executable;
  out.max_threads = options.max_tag_values;
  return out;
}

}  // namespace

ProcessProfiler::ProcessProfiler(const ringfile::FileInfo& info,
                                 const ProcessProfilerOptions& options,
                                 Symbolizer* symbolizer, ProfileSink* sink,
                                 MemoryBudget* budget)
    : info_(info),
      options_(options),
      symbolizer_(symbolizer),
      sink_(sink),
      picker_(TickPicker::Options{options.tick_ns, options.max_distance_ns,
                                  options.idle_frame}),
      memory_(options.max_memory_bytes, budget),
      stacks_(info.pid, &memory_),
      labeler_(info.pid, options.max_tag_values, options.extra_labels,
               &memory_),
      encoder_(EncoderOptions(info, options), &stacks_, &labeler_, symbolizer),
      windows_(options.window_ns, static_cast<int64_t>(options.tick_ns)),
      facts_(info) {
  // The symbolizer keeps the process's root open while we may symbolize, so
  // its modules stay readable after it exits.
  if (symbolizer_ != nullptr) symbolizer_->AttachProcess(info_.pid);
}

ProcessProfiler::~ProcessProfiler() {
  if (symbolizer_ != nullptr) symbolizer_->DetachProcess(info_.pid);
}

const ProcessStats& ProcessProfiler::stats() const {
  stats_.budget_folded = memory_.folded();
  stats_.tag_labels_dropped = labeler_.stats().labels_dropped;
  stats_.tag_values_folded = labeler_.stats().values_folded;
  stats_.unknown_tag_sets = labeler_.stats().unknown_sets;
  stats_.replay_skipped = delivery_.replay_skipped();
  stats_.leaf_names = encoder_.leaf_names();
  return stats_;
}

ProcessStats& ProcessStats::operator+=(const ProcessStats& o) {
  alloc_samples += o.alloc_samples;
  cpu_samples += o.cpu_samples;
  wait_samples += o.wait_samples;
  timing_only_samples += o.timing_only_samples;
  ticks_picked += o.ticks_picked;
  late_samples += o.late_samples;
  emitter_lost += o.emitter_lost;
  malformed_records += o.malformed_records;
  windows_emitted += o.windows_emitted;
  out_of_range += o.out_of_range;
  budget_folded += o.budget_folded;
  replay_skipped += o.replay_skipped;
  tag_labels_dropped += o.tag_labels_dropped;
  tag_values_folded += o.tag_values_folded;
  unknown_tag_sets += o.unknown_tag_sets;
  leaf_names += o.leaf_names;
  return *this;
}

void ProcessProfiler::OnRecord(const ringfile::RecordView& record) {
  ringfile::DispatchRecord(record, *this).IgnoreError();  // OnMalformed
}

void ProcessProfiler::OnBatch(const DrainedBatch& batch) {
  // Module maps first: samples in the same batch may use them.
  for (const DrainedBatch::Record& record : batch.records) {
    if (record.type == RecordType::kModuleMap) OnRecord(batch.view(record));
  }
  for (const DrainedBatch::Record& record : batch.records) {
    if (record.type != RecordType::kModuleMap) OnRecord(batch.view(record));
  }
  if (!batch.positions.empty()) SetReadPositions(batch.positions);
  if (batch.watermark_ns != 0) Advance(batch.watermark_ns);
}

void ProcessProfiler::CountMalformed() {
  ++stats_.malformed_records;
  metrics().malformed_records.Add(1);
}

void ProcessProfiler::OnMalformed(const ringfile::RecordView& /*record*/,
                                  const absl::Status& /*status*/) {
  CountMalformed();
}

void ProcessProfiler::OnAllocSample(const ringfile::RecordView& record,
                                    const ringfile::AllocSampleView& sample) {
  const ringfile::AllocSample& head = sample.head;
  metrics().samples_read.Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(head.monotonic_ns);
  if (!InRange(unix_ns)) return;
  const int64_t weight = static_cast<int64_t>(head.weight_bytes);
  const int64_t count = ObjectsOf(weight, head.requested_size);
  const bool in_use =
      weight > 0 && (head.flags & (ringfile::kSampleUntracked |
                                   ringfile::kSampleTimingOnly)) == 0;
  // A record a predecessor already counted is not counted again, but the
  // in-use heap (idempotent per address) still takes it.
  const bool replayed = !Fresh(unix_ns, record);
  if (replayed && !in_use) return;
  uint32_t stack =
      stacks_.Intern(sample.frames, /*exact_leaf=*/false,
                     (head.flags & ringfile::kSampleTruncated) != 0,
                     labeler_.LabelsFor(head.tag_set, head.span_id));
  if (in_use) {
    inuse_.OnAlloc(head.monotonic_ns, head.address, stack, weight, count);
  }
  if (replayed) return;
  // The tick picked from this sample carries its labels (the stack).
  picker_.Add(head.tid, head.monotonic_ns, stack);
  // Its tick may be picked later: it counts for checkpoints either way.
  WindowSet::Window& window = WindowOf(unix_ns, record);
  if (head.flags & ringfile::kSampleTimingOnly) {
    ++stats_.timing_only_samples;  // for ticks only, never for memory
    return;
  }
  ++stats_.alloc_samples;
  auto& [objects, bytes] = Slot(window, window.aggregates.alloc, stack);
  bytes += weight;
  objects += count;
}

void ProcessProfiler::OnCpuSample(const ringfile::RecordView& record,
                                  const ringfile::CpuSampleView& sample) {
  metrics().samples_read.Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(sample.head.monotonic_ns);
  if (!InRange(unix_ns) || !Fresh(unix_ns, record)) return;
  ++stats_.cpu_samples;
  cpu_.timer = true;
  cpu_.period_ns = sample.head.cpu_period_ns;
  // A timer sample's leaf is the interrupted instruction; one taken at an
  // allocation sample (kSampleAtAllocation, written by earlier emitters)
  // has return addresses only.
  const bool exact_leaf =
      (sample.head.flags & ringfile::kSampleAtAllocation) == 0;
  uint32_t stack =
      (sample.head.flags & ringfile::kSampleThreadNotSampled) != 0
          ? StackTable::kNotSampledStack
          : stacks_.Intern(
                sample.frames, exact_leaf,
                (sample.head.flags & ringfile::kSampleTruncated) != 0,
                labeler_.LabelsFor(sample.head.tag_set, sample.head.span_id));
  WindowSet::Window& window = WindowOf(unix_ns, record);
  Slot(window, window.aggregates.timer_cpu_ns, stack) +=
      static_cast<int64_t>(sample.head.cpu_period_ns);
  const double ns = static_cast<double>(sample.head.cpu_period_ns);
  NoteCpuForWall(sample.head.tid, sample.head.monotonic_ns, unix_ns,
                 AddWall(window, stack, sample.head.tid, ns), ns);
}

void ProcessProfiler::OnWaitSample(const ringfile::RecordView& record,
                                   const ringfile::WaitSampleView& sample) {
  metrics().samples_read.Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(sample.head.monotonic_ns);
  if (!InRange(unix_ns) || !Fresh(unix_ns, record)) return;
  ++stats_.wait_samples;
  uint32_t stack = stacks_.Intern(
      sample.frames, /*exact_leaf=*/false,
      (sample.head.flags & ringfile::kSampleTruncated) != 0,
      labeler_.LabelsFor(sample.head.tag_set, sample.head.span_id));
  WindowSet::Window& window = WindowOf(unix_ns, record);
  const bool lock =
      sample.head.kind == static_cast<uint16_t>(ringfile::WaitKind::kLock);
  WaitTotals& totals = Slot(
      window, lock ? window.aggregates.mutex : window.aggregates.block, stack);
  const WaitTotals weight =
      WaitSampleWeight(sample.head.wait_ns, sample.head.sample_ns);
  totals.waits += weight.waits;
  totals.delay_ns += weight.delay_ns;
  AddWall(window, stack, sample.head.tid, weight.delay_ns);
  DropCpuInWait(window, unix_ns, sample.head);
}

void ProcessProfiler::OnThreadName(const ringfile::RecordView& /*record*/,
                                   const ringfile::ThreadNameView& thread) {
  const uint32_t tid = thread.head.tid;
  thread_exits_.erase(tid);  // the same thread renamed, or a new one
  auto it = thread_names_.find(tid);
  if (it == thread_names_.end()) {
    // Names of exited threads make room.
    if (!AdmitThreadEntry(thread_names_.size(), thread_name_slots_,
                          kThreadNameBytes)) {
      return;  // more live threads than the table holds: left unnamed
    }
    it = thread_names_.try_emplace(tid).first;
  }
  it->second = SanitizeLabelValue(thread.name);
}

void ProcessProfiler::OnThreadExit(const ringfile::RecordView& /*record*/,
                                   const ringfile::ThreadExit& exit) {
  last_cpu_.erase(exit.tid);
  if (thread_names_.contains(exit.tid)) {
    thread_exits_[exit.tid] = info_.ToRealtimeNs(exit.monotonic_ns);
  }
}

void ProcessProfiler::ForgetThreadsExitedBefore(int64_t unix_ns) {
  for (auto it = thread_exits_.begin(); it != thread_exits_.end();) {
    if (it->second < unix_ns) {
      thread_names_.erase(it->first);
      thread_exits_.erase(it++);
    } else {
      ++it;
    }
  }
}

bool ProcessProfiler::AdmitThreadEntry(size_t size, size_t& slots,
                                       uint64_t entry_bytes) {
  if (size >= kMaxThreadNames) return false;
  if (size == slots) {
    if (!memory_.Charge(entry_bytes)) return false;
    ++slots;
  }
  return true;
}

uint32_t ProcessProfiler::AddWall(WindowSet::Window& window, uint32_t stack,
                                  uint32_t tid, double ns) {
  StackAndThread key(stack, tid);
  Slot(window, window.aggregates.wall, key) += ns;
  return key.first;
}

void ProcessProfiler::NoteCpuForWall(uint32_t tid, uint64_t monotonic_ns,
                                     int64_t unix_ns, uint32_t stack,
                                     double ns) {
  auto it = last_cpu_.find(tid);
  if (it == last_cpu_.end()) {
    // Past the cap, not corrected.
    if (!AdmitThreadEntry(last_cpu_.size(), last_cpu_slots_, kLastCpuBytes)) {
      return;
    }
    it = last_cpu_.try_emplace(tid).first;
  }
  it->second = LastCpu{monotonic_ns, unix_ns, stack, ns};
}

void ProcessProfiler::DropCpuInWait(WindowSet::Window& window, int64_t unix_ns,
                                    const ringfile::WaitSample& wait) {
  auto it = last_cpu_.find(wait.tid);
  if (it == last_cpu_.end()) return;
  const LastCpu cpu = it->second;
  // Later waits of the thread start after this one ends.
  last_cpu_.erase(it);
  const uint64_t start =
      wait.monotonic_ns > wait.wait_ns ? wait.monotonic_ns - wait.wait_ns : 0;
  const int64_t window_ns = windows_.window_ns();
  if (cpu.monotonic_ns < start || cpu.monotonic_ns > wait.monotonic_ns ||
      cpu.unix_ns / window_ns != unix_ns / window_ns) {
    return;  // not in this wait, or in a window of its own
  }
  auto entry = window.aggregates.wall.find({cpu.stack, wait.tid});
  if (entry != window.aggregates.wall.end()) entry->second -= cpu.ns;
}

void ProcessProfiler::OnModuleMap(const ringfile::RecordView& /*record*/,
                                  const ringfile::ModuleMapView& map) {
  ModuleInfo module;
  module.path = std::string(map.path);
  module.build_id_hex = HexEncode(map.build_id.data(), map.build_id.size());
  module.start = map.head.start;
  module.size = map.head.size;
  module.file_offset = map.head.file_offset;
  module.load_bias = map.head.load_bias;
  stacks_.MapModule(std::move(module));
}

void ProcessProfiler::OnModuleUnmap(const ringfile::RecordView& /*record*/,
                                    const ringfile::ModuleUnmap& unmap) {
  stacks_.UnmapModule(unmap.start);
}

void ProcessProfiler::OnTagSet(const ringfile::RecordView& /*record*/,
                               const ringfile::TagSetView& tag_set) {
  // More sets than any emitter makes: the record is not believed.
  if (!labeler_.Define(tag_set.head.id, tag_set.tags)) CountMalformed();
}

void ProcessProfiler::OnLabel(const ringfile::RecordView& /*record*/,
                              const ringfile::LabelView& label) {
  facts_.OnLabel(label.key, label.value);
}

void ProcessProfiler::OnLostSamples(const ringfile::RecordView& record,
                                    const ringfile::LostSamples& lost) {
  const int64_t unix_ns = info_.ToRealtimeNs(lost.monotonic_ns);
  if (!InRange(unix_ns) || !Fresh(unix_ns, record)) return;
  stats_.emitter_lost += lost.samples;
  metrics().emitter_lost.Add(lost.samples);
  WindowSet::Window& window = WindowOf(unix_ns, record);
  auto& [objects, bytes] = window.aggregates.alloc[StackTable::kLostStack];
  objects += static_cast<int64_t>(lost.samples);
  bytes += static_cast<int64_t>(lost.weight_bytes);
}

void ProcessProfiler::OnEnvironmentFact(
    const ringfile::RecordView& /*record*/,
    const ringfile::EnvironmentFactView& fact) {
  facts_.OnEnvironmentFact(fact.head.kind, fact.detail);
}

void ProcessProfiler::OnProcessEnd(const ringfile::RecordView& /*record*/,
                                   const ringfile::ProcessEnd& end) {
  facts_.OnEnd(end.exit_status);
}

void ProcessProfiler::OnFreeSampled(const ringfile::RecordView& /*record*/,
                                    const ringfile::FreeSampled& free_sampled) {
  inuse_.OnFree(free_sampled.monotonic_ns, free_sampled.address);
}

void ProcessProfiler::OnLiveSample(const ringfile::RecordView& /*record*/,
                                   const ringfile::LiveSampleView& live) {
  const ringfile::LiveSample& head = live.head;
  const int64_t weight = static_cast<int64_t>(head.weight_bytes);
  if (weight <= 0 || (head.flags & ringfile::kSampleTimingOnly) != 0 ||
      !InRange(info_.ToRealtimeNs(head.monotonic_ns))) {
    return;
  }
  // No tags in a LiveSample: an entry keeps its AllocSample's stack (and
  // tags); only one first learned from a sweep goes without.
  uint32_t stack = stacks_.Intern(
      live.frames, /*exact_leaf=*/false,
      (head.flags & ringfile::kSampleTruncated) != 0, /*labels=*/0);
  inuse_.OnLive(head.monotonic_ns, head.sweep_id, head.alloc_ns, head.address,
                stack, weight, ObjectsOf(weight, head.requested_size));
  // A window for this time, so that an idle process's snapshot is emitted.
  windows_.At(info_.ToRealtimeNs(head.monotonic_ns));
}

void ProcessProfiler::OnLiveSweepEnd(const ringfile::RecordView& /*record*/,
                                     const ringfile::LiveSweepEnd& end) {
  inuse_.OnSweepEnd(end.monotonic_ns, end.sweep_id, end.begin_ns, end.entries,
                    end.untracked);
}

bool ProcessProfiler::InRange(int64_t unix_ns) {
  const int64_t now =
      options_.now_unix_ns != nullptr ? options_.now_unix_ns() : UnixNowNs();
  if (unix_ns <= now + options_.max_future_ns &&
      unix_ns >= now - options_.max_past_ns) {
    return true;
  }
  ++stats_.out_of_range;
  metrics().out_of_range.Add(1);
  LogWarningLimited(
      "record-time",
      absl::StrFormat("pid %u: dropping samples stamped %.0f s %s the "
                      "collector's clock (limits --max-future, --max-past)",
                      info_.pid, std::abs(unix_ns - now) / 1e9,
                      unix_ns > now ? "ahead of" : "behind"));
  return false;
}

bool ProcessProfiler::ChargeAggregate(WindowSet::Window& window) {
  if (!memory_.ChargeOrFold(kAggregateBytes)) return false;
  window.charged_bytes += kAggregateBytes;
  return true;
}

namespace {
uint32_t& StackOf(uint32_t& key) { return key; }
uint32_t& StackOf(StackAndThread& key) { return key.first; }
}  // namespace

template <typename Map>
typename Map::mapped_type& ProcessProfiler::Slot(WindowSet::Window& window,
                                                 Map& map,
                                                 typename Map::key_type& key) {
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  if (StackOf(key) != StackTable::kBudgetStack && !ChargeAggregate(window)) {
    StackOf(key) = StackTable::kBudgetStack;
  }
  return map[key];
}

WindowSet::Window& ProcessProfiler::WindowOf(
    int64_t unix_ns, const ringfile::RecordView& record) {
  WindowSet::Window& window = windows_.At(unix_ns);
  WindowSet::Contributes(window, record.ring, record.index);
  return window;
}

bool ProcessProfiler::Fresh(int64_t unix_ns,
                            const ringfile::RecordView& record) {
  return !delivery_.Replayed(unix_ns, record.ring, record.index);
}

void ProcessProfiler::OnPick(uint64_t tick_ns, uint32_t stack) {
  const int64_t unix_ns = info_.ToRealtimeNs(tick_ns);
  if (delivery_.Delivered(unix_ns)) return;  // a predecessor's tick
  ++stats_.ticks_picked;
  WindowSet::Window& window = windows_.At(unix_ns);
  if (stack == TickPicker::kNoSample) stack = StackTable::kNoSampleStack;
  Slot(window, window.aggregates.tick_cpu_ns, stack) +=
      static_cast<int64_t>(options_.tick_ns);
}

void ProcessProfiler::Advance(uint64_t watermark_monotonic_ns) {
  picker_.Advance(watermark_monotonic_ns,
                  [this](uint64_t t, uint32_t /*tid*/, uint32_t stack) {
                    OnPick(t, stack);
                  });
  const uint64_t late = picker_.late_samples() - stats_.late_samples;
  if (late > 0) metrics().late_samples.Add(late);
  stats_.late_samples = picker_.late_samples();
  if (watermark_monotonic_ns < options_.max_distance_ns) return;
  CloseWindowsBefore(
      info_.ToRealtimeNs(watermark_monotonic_ns - options_.max_distance_ns));
}

void ProcessProfiler::Finish() {
  picker_.Finish([this](uint64_t t, uint32_t /*tid*/, uint32_t stack) {
    OnPick(t, stack);
  });
  CloseWindowsBefore(INT64_MAX);
}

void ProcessProfiler::CloseWindowsBefore(int64_t unix_ns) {
  // In-use is a snapshot per window: while anything is in use, a window
  // without records (an idle stretch) still gets one.
  windows_.CloseBefore(unix_ns, /*idle=*/!inuse_.empty(),
                       [this](const WindowSet::Closed& closed) {
                         Emit(closed);
                         delivery_.Emitted(closed.until_unix_ns);
                       });
}

void ProcessProfiler::Resume(const Checkpoint& checkpoint) {
  for (const ModuleInfo& saved : checkpoint.modules) {
    if (!stacks_.RestoreModule(saved)) break;
  }
  facts_.RestoreLabels(checkpoint.labels);
  cpu_.timer = checkpoint.cpu_timer;
  cpu_.period_ns = checkpoint.cpu_period_ns;
  delivery_.Resume(checkpoint);
  windows_.ResumeAt(checkpoint.emitted_until_unix_ns);
}

void ProcessProfiler::SetReadPositions(absl::Span<const uint64_t> positions) {
  delivery_.SetReadPositions(positions);
}

std::optional<Checkpoint> ProcessProfiler::TakeCheckpoint(bool force) {
  std::optional<Checkpoint> checkpoint = delivery_.Take(force);
  if (!checkpoint) return std::nullopt;
  windows_.LowerPositions(checkpoint->positions);
  checkpoint->modules = stacks_.ActiveModules();
  checkpoint->labels = facts_.workload_labels();
  checkpoint->cpu_timer = cpu_.timer;
  checkpoint->cpu_period_ns = cpu_.period_ns;
  return checkpoint;
}

void ProcessProfiler::Emit(const WindowSet::Closed& closed) {
  // A window covers the process's time only: the first one starts when the
  // ring was created (or at its first event, stamped just before), not at
  // the window boundary, so a short process's duration is its own.
  int64_t from = closed.from_unix_ns;
  const int64_t until = closed.until_unix_ns;
  const int64_t started =
      std::min(static_cast<int64_t>(info_.created_realtime_ns),
               closed.window.first_event_unix_ns);
  if (started > from && started < until) from = started;
  // The in-use snapshot as of the window's end (everything, at the end of
  // the process).
  inuse_.ApplyBefore(closed.final_window ? UINT64_MAX : MonotonicOf(until));
  for (WindowProfile& profile :
       encoder_.Encode(closed.window.aggregates, inuse_.ByStack(), cpu_,
                       thread_names_, from, until)) {
    Labels labels = options_.extra_labels;
    for (auto& kv : profile.labels) labels.push_back(std::move(kv));
    profile.labels = std::move(labels);
    profile.service_name = facts_.service_name();
    profile.workload_labels = facts_.workload_labels();
    profile.session_id = facts_.session_id();
    profile.pid = info_.pid;
    ++stats_.windows_emitted;
    sink_->Submit(std::move(profile));
  }
  // The window's aggregates go with it.
  memory_.Release(closed.window.charged_bytes);
  // Their samples are all in this window or earlier ones.
  ForgetThreadsExitedBefore(until);
}

uint64_t ProcessProfiler::MonotonicOf(int64_t unix_ns) const {
  const int64_t ns = unix_ns - static_cast<int64_t>(info_.created_realtime_ns) +
                     static_cast<int64_t>(info_.created_monotonic_ns);
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

}  // namespace collector
}  // namespace ringprof
