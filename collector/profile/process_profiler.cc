#include "collector/profile/process_profiler.h"

#include <algorithm>
#include <cmath>

#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/base/clock.h"
#include "collector/base/hex.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/pprof/label_rules.h"

namespace ringprof {
namespace collector {
namespace {

// The address addr2line wants for `pc` (link-time virtual address), except
// where the object was linked at a kernel-half address (the vDSO on some
// kernels: 0xffffffffff700000), which reads as garbage: there, the offset
// into the file.
uint64_t LinkTimeAddress(const ModuleInfo& module, uint64_t pc) {
  const uint64_t address = pc - module.load_bias;
  if ((address >> 63) == 0) return address;
  return pc - module.start + module.file_offset;
}

using ringfile::RecordType;

// Key of a location in location_index_: the exact-PC bit below the address.
uint64_t LocationKey(uint64_t address, bool exact_pc) {
  return (address << 1) | (exact_pc ? 1 : 0);
}
// Marks a stack whose capture was cut short; no real LocationKey is 1
// (address 0 is never a frame).
constexpr uint64_t kTruncatedMarker = 1;
// Followed by the stack's sample-label index; no real LocationKey is 2.
constexpr uint64_t kLabelsMarker = 2;

constexpr char kOtherTagValue[] = "other";
// The emitter interns at most this many tag sets per process.
constexpr size_t kMaxTagSets = 4096;
// Memory charged per distinct sample label set, besides its strings.
constexpr uint64_t kLabelSetBytes = 96;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A sample of an s-byte allocation standing for w bytes stands for about
// w / s allocations (at least one; one when s is unknown; none for w = 0).
int64_t ObjectsOf(int64_t weight, uint64_t requested_size) {
  if (weight <= 0) return 0;
  if (requested_size == 0) return 1;
  return std::max<int64_t>(
      1, std::llround(static_cast<double>(weight) / requested_size));
}

Counter& MalformedRecords() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_malformed_records_total",
      "Ring records that failed to decode and were skipped.");
  return c;
}
Counter& SamplesRead() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_samples_read_total",
      "Allocation and CPU samples read from ring files.");
  return c;
}
Counter& EmitterLost() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_emitter_lost_samples_total",
      "Samples the emitters reported they could not record.");
  return c;
}
Counter& OutOfRange() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_records_out_of_range_total",
      "Samples dropped because their timestamp lies further ahead of or "
      "behind the collector's clock than --max-future / --max-past.");
  return c;
}
Counter& BudgetFolded() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_budget_folded_total",
      "Samples and ticks counted under a '[truncated]' stack because a "
      "process (or the collector) reached its memory budget.");
  return c;
}
Counter& TagLabelsDropped() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_tag_labels_dropped_total",
      "Application tags left off their samples by the label rules (invalid "
      "name, empty value, or a name the collector owns).");
  return c;
}
Counter& TagValuesFolded() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_tag_values_folded_total",
      "Tag sets whose value of some key became \"other\" because the key "
      "already had --max-tag-values distinct values in its process.");
  return c;
}
Counter& UnknownTagSets() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_tag_sets_unknown_total",
      "Samples naming a tag set whose definition was not read (lost in the "
      "ring, or read after the sample); they go without their tags.");
  return c;
}
Gauge& MemoryInUse() {
  static Gauge& g = Metrics::Get().GetGauge(
      "ringprof_profiler_memory_bytes",
      "Estimated bytes of interned stacks, locations and window aggregates "
      "held for all processes (bounded by --max-memory-mib).");
  return g;
}

// Estimated costs charged to the memory budgets.
constexpr uint64_t kStackBytes = 96;        // Stack, index entry
constexpr uint64_t kFrameBytes = 24;        // per frame: key + location id
constexpr uint64_t kLocationBytes = 128;    // Location, index entry
constexpr uint64_t kAggregateBytes = 48;    // one stack in one window map
constexpr uint64_t kSymbolFrameBytes = 96;  // per symbolized frame + text

Counter& LateSamples() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_late_samples_total",
      "Samples that arrived after their ticks were decided.");
  return c;
}

}  // namespace

size_t ProcessProfiler::SpanHash::operator()(
    absl::Span<const uint64_t> s) const {
  return absl::HashOf(s);
}

bool ProcessProfiler::SpanEq::operator()(absl::Span<const uint64_t> a,
                                         absl::Span<const uint64_t> b) const {
  return a == b;
}

namespace {

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
  std::string out;
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&out, absl::Hex((h >> (8 * i)) & 0xff, absl::kZeroPad2));
  }
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
      session_id_(SessionId(info)),
      budget_(budget) {
  // The symbolizer keeps the process's root open while we may symbolize, so
  // its modules stay readable after it exits.
  if (symbolizer_ != nullptr) symbolizer_->AttachProcess(info_.pid);
}

ProcessProfiler::~ProcessProfiler() {
  if (symbolizer_ != nullptr) symbolizer_->DetachProcess(info_.pid);
  if (budget_ != nullptr) {
    budget_->used_bytes -= std::min(budget_->used_bytes, memory_bytes_);
    MemoryInUse().Set(static_cast<double>(budget_->used_bytes));
  }
}

bool ProcessProfiler::Charge(uint64_t bytes) {
  if (memory_bytes_ + bytes > options_.max_memory_bytes) return false;
  if (budget_ != nullptr) {
    if (budget_->used_bytes + bytes > budget_->limit_bytes) return false;
    budget_->used_bytes += bytes;
    MemoryInUse().Set(static_cast<double>(budget_->used_bytes));
  }
  memory_bytes_ += bytes;
  return true;
}

bool ProcessProfiler::InRange(int64_t unix_ns) {
  const int64_t now =
      options_.now_unix_ns != nullptr ? options_.now_unix_ns() : UnixNowNs();
  if (unix_ns <= now + options_.max_future_ns &&
      unix_ns >= now - options_.max_past_ns) {
    return true;
  }
  ++stats_.out_of_range;
  OutOfRange().Add(1);
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
  if (stack != kBudgetStack && !Charge(kAggregateBytes)) {
    ++stats_.budget_folded;
    BudgetFolded().Add(1);
    stack = kBudgetStack;
  }
  return map[stack];
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

void ProcessProfiler::OnMalformed(const ringfile::RecordView& /*record*/,
                                  const absl::Status& /*status*/) {
  ++stats_.malformed_records;
  MalformedRecords().Add(1);
}

void ProcessProfiler::OnAllocSample(const ringfile::RecordView& record,
                                    const ringfile::AllocSampleView& sample) {
  const ringfile::AllocSample& head = sample.head;
  SamplesRead().Add(1);
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
      InternStack(sample.frames, /*exact_leaf=*/false,
                  (head.flags & ringfile::kSampleTruncated) != 0,
                  SampleLabels(head.tag_set, head.span_id));
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
  auto& [objects, bytes] = Slot(window.alloc, stack);
  bytes += weight;
  objects += count;
}

void ProcessProfiler::OnCpuSample(const ringfile::RecordView& record,
                                  const ringfile::CpuSampleView& sample) {
  SamplesRead().Add(1);
  const int64_t unix_ns = info_.ToRealtimeNs(sample.head.monotonic_ns);
  if (!InRange(unix_ns) || Replayed(unix_ns, record)) return;
  ++stats_.cpu_samples;
  timer_mode_ = true;
  timer_period_ns_ = sample.head.cpu_period_ns;
  // A timer sample's leaf is the interrupted instruction; one taken at an
  // allocation sample (covered tick) has return addresses only.
  const bool exact_leaf =
      (sample.head.flags & ringfile::kSampleAtAllocation) == 0;
  const uint32_t stack =
      (sample.head.flags & ringfile::kSampleThreadNotSampled) != 0
          ? kNotSampledStack
          : InternStack(sample.frames, exact_leaf,
                        (sample.head.flags & ringfile::kSampleTruncated) != 0,
                        SampleLabels(sample.head.tag_set, sample.head.span_id));
  Window& window = WindowAt(unix_ns);
  Contributes(window, record);
  Slot(window.timer_cpu_ns, stack) +=
      static_cast<int64_t>(sample.head.cpu_period_ns);
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
  EmitterLost().Add(lost.samples);
  Window& window = WindowAt(unix_ns);
  Contributes(window, record);
  auto& [objects, bytes] = window.alloc[kLostStack];
  objects += static_cast<int64_t>(lost.samples);
  bytes += static_cast<int64_t>(lost.weight_bytes);
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
  const uint32_t stack =
      InternStack(live.frames, /*exact_leaf=*/false,
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

int ProcessProfiler::FindModule(uint64_t address) const {
  auto it = active_modules_.upper_bound(address);
  if (it == active_modules_.begin()) return -1;
  --it;
  const Module& m = modules_[it->second];
  return address - m.start < m.size ? it->second : -1;
}

void ProcessProfiler::OnModuleMap(const ringfile::RecordView& /*record*/,
                                  const ringfile::ModuleMapView& map) {
  if (!Charge(kLocationBytes + map.path.size())) {
    ++stats_.budget_folded;
    BudgetFolded().Add(1);
    return;  // its addresses stay unresolved (0xADDR)
  }
  Module module;
  module.path = std::string(map.path);
  module.build_id_hex = HexEncode(map.build_id.data(), map.build_id.size());
  module.start = map.head.start;
  module.size = map.head.size;
  module.file_offset = map.head.file_offset;
  module.load_bias = map.head.load_bias;
  module.pid = info_.pid;
  module.is_emitter = Basename(module.path) == "libringprof.so";
  active_modules_[module.start] = static_cast<int>(modules_.size());
  modules_.push_back(std::move(module));
  // Locations seen before this mapping arrived resolve to it lazily
  // (ModuleOf), so the caches stay valid.
}

void ProcessProfiler::OnModuleUnmap(const ringfile::RecordView& /*record*/,
                                    const ringfile::ModuleUnmap& unmap) {
  active_modules_.erase(unmap.start);
  // Stacks keep their resolved locations; new sightings re-resolve.
  location_index_.clear();
  stack_index_.clear();
}

uint32_t ProcessProfiler::InternLocation(uint64_t address, bool exact_pc) {
  auto [it, inserted] = location_index_.try_emplace(
      LocationKey(address, exact_pc), static_cast<uint32_t>(locations_.size()));
  if (inserted) {
    Location location;
    location.address = address;
    location.exact_pc = exact_pc;
    location.module = FindModule(address);
    locations_.push_back(std::move(location));
  }
  return it->second;
}

void ProcessProfiler::OnTagSet(const ringfile::RecordView& /*record*/,
                               const ringfile::TagSetView& tag_set) {
  // An id keeps its first definition: the emitter re-sends the same one,
  // and samples already counted under it must not change meaning.
  if (tag_sets_.contains(tag_set.head.id)) return;
  if (tag_sets_.size() >= kMaxTagSets) {
    ++stats_.malformed_records;  // more sets than any emitter makes
    MalformedRecords().Add(1);
    return;
  }
  Labels labels;
  for (const auto& [key, value] : tag_set.tags) {
    absl::StatusOr<std::string> name = SanitizeLabelName(key);
    std::string text = SanitizeLabelValue(value);
    // A workload may not set a name the collector or the server owns, nor
    // a series label of the collector's, nor span_id (ringprof_span_set's).
    bool refused = !name.ok() || text.empty() || IsCollectorOwnedLabel(*name) ||
                   *name == kSpanIdLabel || *name == kCpuSourceLabel;
    for (const auto& [extra, unused] : options_.extra_labels) {
      refused |= name.ok() && *name == extra;
    }
    for (const auto& [have, unused] : labels) {
      refused |= name.ok() && *name == have;  // "a.b" and "a_b"
    }
    if (refused) {
      ++stats_.tag_labels_dropped;
      TagLabelsDropped().Add(1);
      LogWarningLimited(
          "tag-label",
          absl::StrFormat("pid %u: tag %s left out of its samples (%s)",
                          info_.pid, absl::CHexEscape(key.substr(0, 64)),
                          !name.ok()     ? std::string(name.status().message())
                          : text.empty() ? "empty value"
                                         : "a name the collector owns"));
      continue;
    }
    absl::flat_hash_set<std::string>& seen = tag_values_[*name];
    if (!seen.contains(text)) {
      if (seen.size() >= options_.max_tag_values) {
        ++stats_.tag_values_folded;
        TagValuesFolded().Add(1);
        text = kOtherTagValue;
      } else {
        seen.insert(text);
      }
    }
    labels.emplace_back(*std::move(name), std::move(text));
  }
  std::sort(labels.begin(), labels.end());
  tag_sets_.emplace(tag_set.head.id, std::move(labels));
}

uint32_t ProcessProfiler::SampleLabels(uint32_t tag_set, uint64_t span_id) {
  if (tag_set == 0 && span_id == 0) return 0;
  auto known = tag_sets_.find(tag_set);
  if (tag_set != 0 && known == tag_sets_.end()) {
    // Its TagSet record was lost or is yet to come (the emitter re-sends it
    // within seconds): this sample goes without its tags.
    ++stats_.unknown_tag_sets;
    UnknownTagSets().Add(1);
    tag_set = 0;
    if (span_id == 0) return 0;
  }
  auto [it, inserted] = sample_labels_index_.try_emplace({tag_set, span_id}, 0);
  if (!inserted) return it->second;
  Labels labels;
  if (tag_set != 0) labels = known->second;
  if (span_id != 0) {
    labels.emplace_back(kSpanIdLabel, absl::StrFormat("%016x", span_id));
    std::sort(labels.begin(), labels.end());
  }
  uint64_t cost = kLabelSetBytes;
  for (const auto& [name, value] : labels) cost += name.size() + value.size();
  if (!Charge(cost)) {
    // Past the memory budget: keep the tags, drop the span.
    sample_labels_index_.erase(it);
    return span_id != 0 && tag_set != 0 ? SampleLabels(tag_set, 0) : 0;
  }
  it->second = static_cast<uint32_t>(sample_labels_.size());
  sample_labels_.push_back(std::move(labels));
  return it->second;
}

uint32_t ProcessProfiler::InternStack(absl::Span<const uint64_t> frames,
                                      bool exact_leaf, bool truncated,
                                      uint32_t labels) {
  scratch_key_.clear();
  for (size_t i = 0; i < frames.size(); ++i) {
    scratch_key_.push_back(LocationKey(frames[i], exact_leaf && i == 0));
  }
  if (truncated) scratch_key_.push_back(kTruncatedMarker);
  if (labels != 0) {
    scratch_key_.push_back(kLabelsMarker);
    scratch_key_.push_back(labels);
  }
  auto it = stack_index_.find(absl::MakeConstSpan(scratch_key_));
  if (it != stack_index_.end()) return it->second;

  uint64_t cost = kStackBytes + kFrameBytes * frames.size();
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!location_index_.contains(
            LocationKey(frames[i], exact_leaf && i == 0))) {
      cost += kLocationBytes;
    }
  }
  if (!Charge(cost)) {
    ++stats_.budget_folded;
    BudgetFolded().Add(1);
    return kBudgetStack;
  }
  Stack stack;
  stack.truncated = truncated;
  stack.labels = labels;
  stack.locations.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i] == 0) continue;
    stack.locations.push_back(InternLocation(frames[i], exact_leaf && i == 0));
  }
  const uint32_t id = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back(std::move(stack));
  stack_index_.emplace(scratch_key_, id);
  return id;
}

void ProcessProfiler::OnPick(uint64_t tick_ns, uint32_t /*tid*/,
                             uint32_t stack) {
  const int64_t unix_ns = info_.ToRealtimeNs(tick_ns);
  if (unix_ns < resumed_until_unix_ns_) return;  // a predecessor's tick
  ++stats_.ticks_picked;
  Window& window = WindowAt(unix_ns);
  Slot(window.tick_cpu_ns,
       stack == TickPicker::kNoSample ? kNoSampleStack : stack) +=
      static_cast<int64_t>(options_.tick_ns);
}

void ProcessProfiler::Advance(uint64_t watermark_monotonic_ns) {
  picker_.Advance(watermark_monotonic_ns,
                  [this](uint64_t t, uint32_t tid, uint32_t stack) {
                    OnPick(t, tid, stack);
                  });
  const uint64_t late = picker_.late_samples() - stats_.late_samples;
  if (late > 0) LateSamples().Add(late);
  stats_.late_samples = picker_.late_samples();
  if (watermark_monotonic_ns < options_.max_distance_ns) return;
  EmitWindowsBefore(
      info_.ToRealtimeNs(watermark_monotonic_ns - options_.max_distance_ns));
}

void ProcessProfiler::Finish() {
  picker_.Finish([this](uint64_t t, uint32_t tid, uint32_t stack) {
    OnPick(t, tid, stack);
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
    if (!Charge(kLocationBytes + saved.path.size())) break;
    Module module;
    static_cast<ModuleInfo&>(module) = saved;
    module.pid = info_.pid;
    module.is_emitter = Basename(module.path) == "libringprof.so";
    active_modules_[module.start] = static_cast<int>(modules_.size());
    modules_.push_back(std::move(module));
  }
  for (const auto& kv : checkpoint.labels) {
    if (process_labels_.size() >= kMaxProcessLabels) break;
    process_labels_.push_back(kv);
  }
  timer_mode_ = checkpoint.cpu_timer;
  timer_period_ns_ = checkpoint.cpu_period_ns;
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
  for (const auto& [start, index] : active_modules_) {
    checkpoint.modules.push_back(modules_[index]);
  }
  checkpoint.labels = process_labels_;
  checkpoint.cpu_timer = timer_mode_;
  checkpoint.cpu_period_ns = timer_period_ns_;
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

MappingSpec ProcessProfiler::MappingOf(const ModuleInfo& module) {
  MappingSpec spec;
  spec.memory_start = module.start;
  spec.memory_limit = module.start + module.size;
  spec.file_offset = module.file_offset;
  spec.filename = module.path;
  spec.build_id = module.build_id_hex;
  return spec;
}

void ProcessProfiler::InternMainMapping(PprofBuilder& builder) const {
  // pprof takes the first mapping for the main binary ("File:" in -top).
  for (const Module& module : modules_) {
    if (module.path == info_.executable) {
      builder.InternMapping(MappingOf(module));
      return;
    }
  }
}

PprofBuilder::LocationId ProcessProfiler::BuilderLocation(
    uint32_t index, PprofBuilder& builder,
    absl::flat_hash_map<uint32_t, uint32_t>& memo) {
  auto found = memo.find(index);
  if (found != memo.end()) return found->second;
  Location& location = locations_[index];
  // Return addresses point after the call; look up the call instruction.
  const uint64_t pc =
      location.exact_pc ? location.address : location.address - 1;
  const int module_index = ModuleOf(index);
  const ModuleInfo* module =
      module_index >= 0 ? &modules_[module_index] : nullptr;
  // Symbolized once its module is known: until then (its map record was
  // lost, and comes again with the emitter's next re-emission) it stays
  // open, since in-use stacks come back in every window.
  if (!location.symbolized && module != nullptr) {
    location.symbolized = true;
    if (symbolizer_ != nullptr) {
      location.frames = symbolizer_->Symbolize(
          *module, location.address,
          location.exact_pc ? AddressKind::kInstruction
                            : AddressKind::kReturnAddress);
      // Charged even past the budget: the location is already counted and
      // its names are what makes it useful; the stack budget bounds them.
      uint64_t bytes = 0;
      for (const SymbolizedFrame& frame : location.frames) {
        bytes += kSymbolFrameBytes + frame.function.size() + frame.file.size();
      }
      memory_bytes_ += bytes;
      if (budget_ != nullptr) budget_->used_bytes += bytes;
    }
  }
  std::vector<LineSpec> lines;
  bool has_lines = false;
  for (const SymbolizedFrame& frame : location.frames) {
    if (frame.function.empty() && frame.file.empty()) continue;
    has_lines |= frame.line != 0;
    lines.push_back({frame.function, frame.file, frame.line});
  }
  const bool resolved = !lines.empty();
  for (LineSpec& line : lines) {
    if (line.function.empty()) line.function = "[unknown]";
  }
  if (!resolved && (module == nullptr || !options_.unresolved_without_lines)) {
    // Unresolved: name it so a person (or addr2line) can still place it.
    lines.push_back({module != nullptr
                         ? absl::StrFormat("%s+0x%x", Basename(module->path),
                                           LinkTimeAddress(*module, pc))
                         : absl::StrFormat("0x%x", pc),
                     "", 0});
  }
  PprofBuilder::MappingId mapping = 0;
  if (module != nullptr) {
    MappingSpec spec = MappingOf(*module);
    spec.has_functions = resolved;
    spec.has_filenames = resolved && !lines.front().filename.empty();
    spec.has_line_numbers = has_lines;
    spec.has_inline_frames = lines.size() > 1;
    mapping = builder.InternMapping(spec);
  }
  const PprofBuilder::LocationId id =
      builder.InternLocation(mapping, location.address, lines);
  memo.emplace(index, id);
  return id;
}

int ProcessProfiler::ModuleOf(uint32_t index) {
  Location& location = locations_[index];
  // The module's map record may have come after the first sample using it
  // (records of different threads travel in different rings).
  if (location.module < 0 && !location.symbolized) {
    location.module = FindModule(location.address);
  }
  return location.module;
}

void ProcessProfiler::AppendStack(uint32_t stack, PprofBuilder& builder,
                                  absl::flat_hash_map<uint32_t, uint32_t>& memo,
                                  std::vector<PprofBuilder::LocationId>& out) {
  out.clear();
  if (stack == kLostStack) {
    out.push_back(builder.InternSyntheticLocation("[lost]"));
    return;
  }
  if (stack == kNoSampleStack) {
    out.push_back(builder.InternSyntheticLocation("[no sample]"));
    return;
  }
  if (stack == kBudgetStack) {
    out.push_back(builder.InternSyntheticLocation("[truncated]"));
    return;
  }
  if (stack == kNotSampledStack) {
    out.push_back(builder.InternSyntheticLocation("[thread not sampled]"));
    return;
  }
  const Stack& s = stacks_[stack];
  // The emitter's own frames (its malloc wrapper, sampler) at the leaf end
  // say nothing about the program: the stack starts at malloc's caller.
  size_t first = 0;
  while (first + 1 < s.locations.size()) {
    const int module = ModuleOf(s.locations[first]);
    if (module < 0 || !modules_[module].is_emitter) break;
    ++first;
  }
  for (size_t i = first; i < s.locations.size(); ++i) {
    out.push_back(BuilderLocation(s.locations[i], builder, memo));
  }
  if (s.truncated)
    out.push_back(builder.InternSyntheticLocation("[truncated]"));
  if (out.empty()) out.push_back(builder.InternSyntheticLocation("[unknown]"));
}

PprofBuilder::LabelSetId ProcessProfiler::BuilderLabels(
    uint32_t stack, PprofBuilder& builder) const {
  if (stack >= stacks_.size() || stacks_[stack].labels == 0) return 0;
  return builder.InternLabels(sample_labels_[stacks_[stack].labels]);
}

std::vector<std::pair<std::string, std::string>> ProcessProfiler::SeriesLabels()
    const {
  std::vector<std::pair<std::string, std::string>> labels;
  std::string service = info_.service_name;
  if (service.empty()) service = Basename(info_.executable);
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
  const std::vector<std::pair<std::string, std::string>> labels =
      SeriesLabels();

  auto submit = [&](const std::string& name, PprofBuilder& builder,
                    std::vector<std::pair<std::string, std::string>> extra) {
    WindowProfile profile;
    profile.name = name;
    profile.labels = labels;
    for (auto& kv : extra) profile.labels.push_back(std::move(kv));
    profile.from_unix_ns = from;
    profile.until_unix_ns = until;
    profile.workload_labels = process_labels_;
    profile.session_id = session_id_;
    profile.pid = info_.pid;
    profile.service_name = labels.front().second;
    profile.pprof = builder.Build().SerializeAsString();
    ++stats_.windows_emitted;
    sink_->Submit(std::move(profile));
  };

  std::vector<PprofBuilder::LocationId> stack;
  const auto& cpu = timer_mode_ ? window.timer_cpu_ns : window.tick_cpu_ns;
  if (!cpu.empty()) {
    ProfileSpec spec = CpuProfileSpec(static_cast<int64_t>(
        timer_mode_ ? timer_period_ns_ : options_.tick_ns));
    spec.time_nanos = from;
    spec.duration_nanos = until - from;
    PprofBuilder builder(spec, options_.limits);
    InternMainMapping(builder);
    absl::flat_hash_map<uint32_t, uint32_t> memo;
    for (const auto& [id, ns] : cpu) {
      AppendStack(id, builder, memo, stack);
      builder.AddSample(stack, {ns}, BuilderLabels(id, builder));
    }
    if (!builder.empty()) {
      submit("process_cpu", builder,
             {{kCpuSourceLabel, timer_mode_ ? "timer" : "alloc_ticks"}});
    }
  }
  // The in-use snapshot as of the window's end (everything, at the end of
  // the process).
  inuse_.ApplyBefore(final_window ? UINT64_MAX : MonotonicOf(until));
  const auto inuse = inuse_.ByStack();
  if (!window.alloc.empty() || !inuse.empty()) {
    ProfileSpec spec = MemoryProfileSpec();
    spec.time_nanos = from;
    spec.duration_nanos = until - from;
    PprofBuilder builder(spec, options_.limits);
    InternMainMapping(builder);
    absl::flat_hash_map<uint32_t, uint32_t> memo;
    for (const auto& [id, values] : window.alloc) {
      AppendStack(id, builder, memo, stack);
      builder.AddSample(stack, {values.first, values.second, 0, 0},
                        BuilderLabels(id, builder));
    }
    for (const auto& [id, values] : inuse) {
      AppendStack(id, builder, memo, stack);
      builder.AddSample(stack, {0, 0, values.first, values.second},
                        BuilderLabels(id, builder));
    }
    if (!builder.empty()) submit("memory", builder, {});
  }
}

uint64_t ProcessProfiler::MonotonicOf(int64_t unix_ns) const {
  const int64_t ns = unix_ns - static_cast<int64_t>(info_.created_realtime_ns) +
                     static_cast<int64_t>(info_.created_monotonic_ns);
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

}  // namespace collector
}  // namespace ringprof
