#include "collector/profile/process_profiler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "collector/base/clock.h"
#include "collector/base/file.h"
#include "collector/base/hex.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/profile/environment_facts.h"

namespace ringprof {
namespace collector {
namespace {

using ringfile::RecordType;

// Estimated memory of one stack's aggregate in one window map.
constexpr uint64_t kAggregateBytes = 48;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

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

// Pyroscope's __session_id__ (pyroscope-go session_id.go: 8 bytes,
// little-endian hex) for one process: a hash of what identifies it, so it
// stays the same when the collector restarts.
std::string SessionId(const ringfile::FileInfo& info) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (uint64_t v : {uint64_t{info.pid}, info.process_start_ticks,
                     info.created_realtime_ns}) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(h >> (8 * i));
  return HexEncode(bytes, sizeof(bytes));
}

WindowEncoderOptions EncoderOptions(const ringfile::FileInfo& info,
                                    const ProcessProfilerOptions& options) {
  WindowEncoderOptions out;
  out.limits = options.limits;
  out.tick_ns = options.tick_ns;
  out.unresolved_without_lines = options.unresolved_without_lines;
  out.executable = info.executable;
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
      session_id_(SessionId(info)) {
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
  return stats_;
}

void ProcessProfiler::OnRecord(const ringfile::RecordView& record) {
  ringfile::DispatchRecord(record, *this).IgnoreError();  // OnMalformed
}

void ProcessProfiler::OnRecords(
    absl::Span<const ringfile::RecordView> records) {
  // Module maps first: samples in the same batch may use them.
  for (const ringfile::RecordView& record : records) {
    if (record.type == RecordType::kModuleMap) OnRecord(record);
  }
  for (const ringfile::RecordView& record : records) {
    if (record.type != RecordType::kModuleMap) OnRecord(record);
  }
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
  const bool replayed = Replayed(unix_ns, record);
  if (replayed && !in_use) return;
  const uint32_t stack =
      stacks_.Intern(sample.frames, /*exact_leaf=*/false,
                     (head.flags & ringfile::kSampleTruncated) != 0,
                     labeler_.LabelsFor(head.tag_set, head.span_id));
  if (in_use) {
    inuse_.OnAlloc(head.monotonic_ns, head.address, stack, weight, count);
  }
  if (replayed) return;
  // The tick picked from this sample carries its labels (the stack).
  picker_.Add(head.tid, head.monotonic_ns, stack);
  Window& window = WindowAt(unix_ns);
  // Its tick may be picked later: it counts for checkpoints either way.
  Contributes(window, record);
  if (head.flags & ringfile::kSampleTimingOnly) {
    ++stats_.timing_only_samples;  // for ticks only, never for memory
    return;
  }
  ++stats_.alloc_samples;
  auto& [objects, bytes] = Slot(window.aggregates.alloc, stack);
  bytes += weight;
  objects += count;
}

void ProcessProfiler::OnCpuSample(const ringfile::RecordView& record,
                                  const ringfile::CpuSampleView& sample) {
  metrics().samples_read.Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(sample.head.monotonic_ns);
  if (!InRange(unix_ns) || Replayed(unix_ns, record)) return;
  ++stats_.cpu_samples;
  cpu_.timer = true;
  cpu_.period_ns = sample.head.cpu_period_ns;
  // A timer sample's leaf is the interrupted instruction; one taken at an
  // allocation sample (kSampleAtAllocation, written by earlier emitters)
  // has return addresses only.
  const bool exact_leaf =
      (sample.head.flags & ringfile::kSampleAtAllocation) == 0;
  const uint32_t stack =
      (sample.head.flags & ringfile::kSampleThreadNotSampled) != 0
          ? StackTable::kNotSampledStack
          : stacks_.Intern(
                sample.frames, exact_leaf,
                (sample.head.flags & ringfile::kSampleTruncated) != 0,
                labeler_.LabelsFor(sample.head.tag_set, sample.head.span_id));
  Window& window = WindowAt(unix_ns);
  Contributes(window, record);
  Slot(window.aggregates.timer_cpu_ns, stack) +=
      static_cast<int64_t>(sample.head.cpu_period_ns);
}

void ProcessProfiler::OnWaitSample(const ringfile::RecordView& record,
                                   const ringfile::WaitSampleView& sample) {
  metrics().samples_read.Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(sample.head.monotonic_ns);
  if (!InRange(unix_ns) || Replayed(unix_ns, record)) return;
  ++stats_.wait_samples;
  const uint32_t stack = stacks_.Intern(
      sample.frames, /*exact_leaf=*/false,
      (sample.head.flags & ringfile::kSampleTruncated) != 0,
      labeler_.LabelsFor(sample.head.tag_set, sample.head.span_id));
  Window& window = WindowAt(unix_ns);
  Contributes(window, record);
  const bool lock =
      sample.head.kind == static_cast<uint16_t>(ringfile::WaitKind::kLock);
  WaitTotals& totals =
      Slot(lock ? window.aggregates.mutex : window.aggregates.block, stack);
  const WaitTotals weight =
      WaitSampleWeight(sample.head.wait_ns, sample.head.sample_ns);
  totals.waits += weight.waits;
  totals.delay_ns += weight.delay_ns;
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
  std::string key(label.key), value(label.value);
  for (auto& kv : process_labels_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  if (process_labels_.size() < kMaxProcessLabels) {
    process_labels_.emplace_back(std::move(key), std::move(value));
  }
}

void ProcessProfiler::OnLostSamples(const ringfile::RecordView& record,
                                    const ringfile::LostSamples& lost) {
  const int64_t unix_ns = info_.ToRealtimeNs(lost.monotonic_ns);
  if (!InRange(unix_ns) || Replayed(unix_ns, record)) return;
  stats_.emitter_lost += lost.samples;
  metrics().emitter_lost.Add(lost.samples);
  Window& window = WindowAt(unix_ns);
  Contributes(window, record);
  auto& [objects, bytes] = window.aggregates.alloc[StackTable::kLostStack];
  objects += static_cast<int64_t>(lost.samples);
  bytes += static_cast<int64_t>(lost.weight_bytes);
}

void ProcessProfiler::OnEnvironmentFact(
    const ringfile::RecordView& /*record*/,
    const ringfile::EnvironmentFactView& fact) {
  if (facts_seen_.size() >= kMaxProcessFacts) return;
  if (!facts_seen_.emplace(fact.head.kind, std::string(fact.detail)).second) {
    return;
  }
  ReportEnvironmentFact(SeriesLabels().front().second, info_.pid,
                        fact.head.kind, fact.detail);
}

void ProcessProfiler::OnProcessEnd(const ringfile::RecordView& /*record*/,
                                   const ringfile::ProcessEnd& end) {
  ended_ = true;
  exit_status_ = end.exit_status;
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
  const uint32_t stack = stacks_.Intern(
      live.frames, /*exact_leaf=*/false,
      (head.flags & ringfile::kSampleTruncated) != 0, /*labels=*/0);
  inuse_.OnLive(head.monotonic_ns, head.sweep_id, head.alloc_ns, head.address,
                stack, weight, ObjectsOf(weight, head.requested_size));
  // A window for this time, so that an idle process's snapshot is emitted.
  WindowAt(info_.ToRealtimeNs(head.monotonic_ns));
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

template <typename Map>
typename Map::mapped_type& ProcessProfiler::Slot(Map& map, uint32_t stack) {
  auto it = map.find(stack);
  if (it != map.end()) return it->second;
  if (stack != StackTable::kBudgetStack &&
      !memory_.ChargeOrFold(kAggregateBytes)) {
    stack = StackTable::kBudgetStack;
  }
  return map[stack];
}

ProcessProfiler::Window& ProcessProfiler::WindowAt(int64_t unix_ns) {
  int64_t index = FloorDiv(unix_ns, options_.window_ns);
  // Data older than an emitted window goes to the oldest open one, so
  // totals stay right even when a record arrives very late.
  index = std::max(index, first_open_window_);
  Window& window = windows_[index];
  window.first_event_unix_ns = std::min(window.first_event_unix_ns, unix_ns);
  window.last_event_unix_ns = std::max(window.last_event_unix_ns, unix_ns);
  return window;
}

void ProcessProfiler::OnPick(uint64_t tick_ns, uint32_t stack) {
  const int64_t unix_ns = info_.ToRealtimeNs(tick_ns);
  if (unix_ns < resumed_until_unix_ns_) return;  // a predecessor's tick
  ++stats_.ticks_picked;
  Window& window = WindowAt(unix_ns);
  Slot(window.aggregates.tick_cpu_ns,
       stack == TickPicker::kNoSample ? StackTable::kNoSampleStack : stack) +=
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
  EmitWindowsBefore(
      info_.ToRealtimeNs(watermark_monotonic_ns - options_.max_distance_ns));
}

void ProcessProfiler::Finish() {
  picker_.Finish([this](uint64_t t, uint32_t /*tid*/, uint32_t stack) {
    OnPick(t, stack);
  });
  EmitWindowsBefore(INT64_MAX);
}

void ProcessProfiler::EmitWindowsBefore(int64_t unix_ns) {
  const bool final_flush = unix_ns == INT64_MAX;
  // In-use is a snapshot per window: while anything is in use, a window
  // without records (an idle stretch) still gets one.
  if (!inuse_.empty()) FillIdleWindows(unix_ns);
  while (!windows_.empty()) {
    auto it = windows_.begin();
    const int64_t from = it->first * options_.window_ns;
    const bool complete = from + options_.window_ns <= unix_ns;
    if (!complete && !final_flush) break;
    const bool last = final_flush && std::next(it) == windows_.end();
    EmitWindow(it->first, it->second, last);
    emitted_until_unix_ns_ = std::max(emitted_until_unix_ns_,
                                      WindowUntil(it->first, it->second, last));
    first_open_window_ = it->first + 1;
    windows_.erase(it);
  }
}

void ProcessProfiler::Contributes(Window& window,
                                  const ringfile::RecordView& record) {
  if (window.min_index.size() <= record.ring) {
    window.min_index.resize(record.ring + 1, UINT64_MAX);
  }
  window.min_index[record.ring] =
      std::min(window.min_index[record.ring], record.index);
}

bool ProcessProfiler::Replayed(int64_t unix_ns,
                               const ringfile::RecordView& record) {
  if (unix_ns >= resumed_until_unix_ns_) return false;
  if (record.ring >= resumed_consumed_.size() ||
      record.index >= resumed_consumed_[record.ring]) {
    return false;  // the predecessor never read it: late, not delivered
  }
  ++stats_.replay_skipped;
  return true;
}

void ProcessProfiler::Resume(const Checkpoint& checkpoint) {
  for (const ModuleInfo& saved : checkpoint.modules) {
    if (!stacks_.RestoreModule(saved)) break;
  }
  for (const auto& kv : checkpoint.labels) {
    if (process_labels_.size() >= kMaxProcessLabels) break;
    process_labels_.push_back(kv);
  }
  cpu_.timer = checkpoint.cpu_timer;
  cpu_.period_ns = checkpoint.cpu_period_ns;
  read_positions_ = checkpoint.consumed;
  resumed_consumed_ = checkpoint.consumed;
  resumed_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
  emitted_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
  checkpointed_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
  if (resumed_until_unix_ns_ != INT64_MIN) {
    first_open_window_ = FloorDiv(resumed_until_unix_ns_, options_.window_ns);
  }
}

void ProcessProfiler::SetReadPositions(absl::Span<const uint64_t> positions) {
  read_positions_.assign(positions.begin(), positions.end());
}

std::optional<Checkpoint> ProcessProfiler::TakeCheckpoint(bool force) {
  if (!force && emitted_until_unix_ns_ == checkpointed_until_unix_ns_) {
    return std::nullopt;
  }
  checkpointed_until_unix_ns_ = emitted_until_unix_ns_;
  Checkpoint checkpoint;
  checkpoint.positions = read_positions_;
  checkpoint.consumed = read_positions_;
  for (const auto& [index, window] : windows_) {
    for (size_t ring = 0;
         ring < window.min_index.size() && ring < checkpoint.positions.size();
         ++ring) {
      checkpoint.positions[ring] =
          std::min(checkpoint.positions[ring], window.min_index[ring]);
    }
  }
  checkpoint.emitted_until_unix_ns = emitted_until_unix_ns_;
  checkpoint.modules = stacks_.ActiveModules();
  checkpoint.labels = process_labels_;
  checkpoint.cpu_timer = cpu_.timer;
  checkpoint.cpu_period_ns = cpu_.period_ns;
  return checkpoint;
}

void ProcessProfiler::FillIdleWindows(int64_t unix_ns) {
  int64_t first = first_open_window_;
  if (first == INT64_MIN) {
    if (windows_.empty()) return;
    first = windows_.begin()->first;
  }
  // Up to the last complete window, or at the end up to the last one.
  int64_t last = unix_ns == INT64_MAX
                     ? (windows_.empty() ? first - 1 : windows_.rbegin()->first)
                     : FloorDiv(unix_ns, options_.window_ns) - 1;
  // Bounded: timestamps are the workload's (a corrupt one must not make us
  // build millions of windows); a longer idle stretch keeps its ends.
  last = std::min(last, first + kMaxIdleWindows);
  for (int64_t index = first; index <= last; ++index) {
    windows_.try_emplace(index);
  }
}

std::vector<std::pair<std::string, std::string>> ProcessProfiler::SeriesLabels()
    const {
  std::vector<std::pair<std::string, std::string>> labels;
  std::string service = info_.service_name;
  if (service.empty()) service = std::string(Basename(info_.executable));
  if (service.empty()) service = "unknown_service";
  labels.emplace_back("service_name", service);
  for (const auto& kv : options_.extra_labels) labels.push_back(kv);
  return labels;
}

int64_t ProcessProfiler::WindowUntil(int64_t index, const Window& window,
                                     bool final_window) const {
  const int64_t from = index * options_.window_ns;
  const int64_t until = from + options_.window_ns;
  if (!final_window) return until;
  return std::min(
      until, std::max(from + 1, window.last_event_unix_ns +
                                    static_cast<int64_t>(options_.tick_ns)));
}

void ProcessProfiler::EmitWindow(int64_t index, const Window& window,
                                 bool final_window) {
  // A window covers the process's time only: the first one starts when the
  // ring was created (or at its first event, stamped just before), not at
  // the window boundary, so a short process's duration is its own.
  int64_t from = index * options_.window_ns;
  const int64_t until = WindowUntil(index, window, final_window);
  const int64_t started =
      std::min(static_cast<int64_t>(info_.created_realtime_ns),
               window.first_event_unix_ns);
  if (started > from && started < until) from = started;
  // The in-use snapshot as of the window's end (everything, at the end of
  // the process).
  inuse_.ApplyBefore(final_window ? UINT64_MAX : MonotonicOf(until));
  std::vector<EncodedProfile> encoded =
      encoder_.Encode(window.aggregates, inuse_.ByStack(), cpu_, from, until);
  const std::vector<std::pair<std::string, std::string>> labels =
      SeriesLabels();
  for (EncodedProfile& one : encoded) {
    WindowProfile profile;
    profile.kind = one.kind;
    profile.labels = labels;
    for (auto& kv : one.labels) profile.labels.push_back(std::move(kv));
    profile.from_unix_ns = from;
    profile.until_unix_ns = until;
    profile.workload_labels = process_labels_;
    profile.session_id = session_id_;
    profile.pid = info_.pid;
    profile.service_name = labels.front().second;
    profile.profile = std::make_shared<const perftools::profiles::Profile>(
        std::move(one.pprof));
    ++stats_.windows_emitted;
    sink_->Submit(std::move(profile));
  }
}

uint64_t ProcessProfiler::MonotonicOf(int64_t unix_ns) const {
  const int64_t ns = unix_ns - static_cast<int64_t>(info_.created_realtime_ns) +
                     static_cast<int64_t>(info_.created_monotonic_ns);
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

}  // namespace collector
}  // namespace ringprof
