#include "collector/profile/window_encoder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/base/file.h"

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

// The one frame of a synthetic stack; null for a real one.
const char* SyntheticFrame(uint32_t stack) {
  switch (stack) {
    case StackTable::kLostStack:
      return "[lost]";
    case StackTable::kNoSampleStack:
      return "[no sample]";
    case StackTable::kBudgetStack:
      return "[truncated]";
    case StackTable::kNotSampledStack:
      return "[thread not sampled]";
    default:
      return nullptr;
  }
}

// Per thread id of `wall`, its sample labels: thread_id and thread_name
// (when known) for the `max_threads` threads with the most wall time in
// the window (ties: lower id first), thread_id "other" for the rest.
absl::flat_hash_map<uint32_t, Labels> ThreadLabels(
    const absl::flat_hash_map<StackAndThread, double>& wall,
    const ThreadNames& names, size_t max_threads) {
  absl::flat_hash_map<uint32_t, double> totals;
  for (const auto& [key, ns] : wall) totals[key.second] += ns;
  std::vector<std::pair<double, uint32_t>> busiest;
  for (const auto& [tid, ns] : totals) busiest.emplace_back(-ns, tid);
  std::sort(busiest.begin(), busiest.end());
  absl::flat_hash_map<uint32_t, Labels> labels;
  for (size_t i = 0; i < busiest.size(); ++i) {
    const uint32_t tid = busiest[i].second;
    Labels& out = labels[tid];
    if (i >= max_threads) {
      out.emplace_back(kThreadIdLabel, "other");
      continue;
    }
    out.emplace_back(kThreadIdLabel, absl::StrCat(tid));
    auto name = names.find(tid);
    if (name != names.end() && !name->second.empty()) {
      out.emplace_back(kThreadNameLabel, name->second);
    }
  }
  return labels;
}

}  // namespace

WindowEncoder::WindowEncoder(WindowEncoderOptions options, StackTable* stacks,
                             const TagLabeler* labeler, Symbolizer* symbolizer)
    : options_(std::move(options)),
      stacks_(stacks),
      labeler_(labeler),
      symbolizer_(symbolizer) {}

std::vector<WindowProfile> WindowEncoder::Encode(const WindowAggregates& window,
                                                 const InUseByStack& inuse,
                                                 const CpuSource& cpu,
                                                 const ThreadNames& threads,
                                                 int64_t from, int64_t until) {
  std::vector<WindowProfile> out;
  EncodeCpu(window, cpu, from, until, out);
  EncodeMemory(window, inuse, from, until, out);
  EncodeWaits(ProfileKind::kMutex, window.mutex, from, until, out);
  EncodeWaits(ProfileKind::kBlock, window.block, from, until, out);
  EncodeWall(window, cpu, threads, from, until, out);
  return out;
}

WindowEncoder::Build WindowEncoder::Start(ProfileSpec spec, int64_t from,
                                          int64_t until) const {
  spec.time_nanos = from;
  spec.duration_nanos = until - from;
  Build build(spec, options_.limits);
  // pprof takes the first mapping for the main binary ("File:" in -top).
  if (const auto* main = stacks_->FindModuleByPath(options_.executable)) {
    build.builder.InternMapping(MappingSpec{*main});
  }
  return build;
}

void WindowEncoder::EncodeCpu(const WindowAggregates& window,
                              const CpuSource& cpu, int64_t from, int64_t until,
                              std::vector<WindowProfile>& out) {
  const auto& values = cpu.timer ? window.timer_cpu_ns : window.tick_cpu_ns;
  if (values.empty()) return;
  Build build = Start(SpecOf(ProfileKind::kCpu,
                             static_cast<int64_t>(
                                 cpu.timer ? cpu.period_ns : options_.tick_ns)),
                      from, until);
  for (const auto& [stack, ns] : values) Add(build, stack, {ns});
  Finish(ProfileKind::kCpu,
         {{kCpuSourceLabel, cpu.timer ? "timer" : "alloc_ticks"}}, build, from,
         until, out);
}

void WindowEncoder::EncodeMemory(const WindowAggregates& window,
                                 const InUseByStack& inuse, int64_t from,
                                 int64_t until,
                                 std::vector<WindowProfile>& out) {
  if (window.alloc.empty() && inuse.empty()) return;
  Build build = Start(SpecOf(ProfileKind::kMemory), from, until);
  for (const auto& [stack, v] : window.alloc) {
    Add(build, stack, {v.first, v.second, 0, 0});
  }
  for (const auto& [stack, v] : inuse) {
    Add(build, stack, {0, 0, v.first, v.second});
  }
  Finish(ProfileKind::kMemory, {}, build, from, until, out);
}

void WindowEncoder::EncodeWaits(ProfileKind kind, const WaitsByStack& waits,
                                int64_t from, int64_t until,
                                std::vector<WindowProfile>& out) {
  if (waits.empty()) return;
  Build build = Start(SpecOf(kind), from, until);
  for (const auto& [stack, totals] : waits) {
    int64_t values[2];
    WaitSampleValues(totals, values);
    Add(build, stack, {values[0], values[1]});
  }
  Finish(kind, {}, build, from, until, out);
}

void WindowEncoder::EncodeWall(const WindowAggregates& window,
                               const CpuSource& cpu, const ThreadNames& threads,
                               int64_t from, int64_t until,
                               std::vector<WindowProfile>& out) {
  if (!cpu.timer || window.wall.empty()) return;
  const absl::flat_hash_map<uint32_t, Labels> labels =
      ThreadLabels(window.wall, threads, options_.max_threads);
  // In (stack, thread) order: the same window makes the same bytes.
  std::vector<std::pair<StackAndThread, double>> entries(window.wall.begin(),
                                                         window.wall.end());
  std::sort(entries.begin(), entries.end());
  Build build = Start(SpecOf(ProfileKind::kWall), from, until);
  for (const auto& [key, ns] : entries) {
    Add(build, key.first, {std::llround(ns)}, labels.at(key.second));
  }
  Finish(ProfileKind::kWall, {}, build, from, until, out);
}

void WindowEncoder::Finish(ProfileKind kind, Labels labels, const Build& build,
                           int64_t from, int64_t until,
                           std::vector<WindowProfile>& out) {
  if (build.builder.empty()) return;
  ExportLeafNames(kind, build.leaves);
  leaf_names_[kind] += build.leaves;
  WindowProfile profile;
  profile.kind = kind;
  profile.labels = std::move(labels);
  profile.from_unix_ns = from;
  profile.until_unix_ns = until;
  profile.profile = std::make_shared<const perftools::profiles::Profile>(
      build.builder.Build());
  out.push_back(std::move(profile));
}

void WindowEncoder::Add(Build& build, uint32_t stack,
                        absl::Span<const int64_t> values, const Labels& more) {
  AppendStack(build, stack);
  if (build.primary < values.size()) {
    CountLeaf(build, stack, values[build.primary]);
  }
  const Labels* tags = nullptr;
  if (stacks_->IsReal(stack) && stacks_->stack(stack).labels != 0) {
    tags = &labeler_->labels(stacks_->stack(stack).labels);
  }
  PprofBuilder::LabelSetId labels = 0;
  if (more.empty()) {
    if (tags != nullptr) labels = build.builder.InternLabels(*tags);
  } else {
    // `more` replaces a tag of the same name (a workload's own thread_id).
    Labels all = more;
    if (tags != nullptr) {
      for (const auto& tag : *tags) {
        if (!HasLabel(more, tag.first)) all.push_back(tag);
      }
    }
    std::sort(all.begin(), all.end());
    labels = build.builder.InternLabels(all);
  }
  build.builder.AddSample(build.stack, values, labels);
}

void WindowEncoder::AppendStack(Build& build, uint32_t stack) {
  std::vector<PprofBuilder::LocationId>& out = build.stack;
  out.clear();
  if (const char* frame = SyntheticFrame(stack)) {
    out.push_back(build.builder.InternSyntheticLocation(frame));
    return;
  }
  for (uint32_t location : stacks_->ProgramFrames(stack)) {
    out.push_back(Location(build, location));
  }
  if (stacks_->stack(stack).truncated) {
    out.push_back(build.builder.InternSyntheticLocation("[truncated]"));
  }
  if (out.empty()) {
    out.push_back(build.builder.InternSyntheticLocation("[unknown]"));
  }
}

void WindowEncoder::CountLeaf(Build& build, uint32_t stack, int64_t value) {
  if (!stacks_->IsReal(stack) || value <= 0) return;
  const absl::Span<const uint32_t> frames = stacks_->ProgramFrames(stack);
  if (frames.empty()) return;
  build.leaves.total += value;
  // Symbolized by AppendStack, innermost frame first.
  const StackTable::Location& leaf = stacks_->location(frames[0]);
  if (!leaf.frames.empty() && !leaf.frames[0].unnamed &&
      !leaf.frames[0].function.empty()) {
    return;
  }
  build.leaves.unnamed += value;
  const ModuleInfo* module = stacks_->ModuleOf(frames[0]);
  UnnamedModule& entry =
      build.leaves.modules[module != nullptr ? module->path : ""];
  if (entry.reason.empty()) entry.reason = UnnamedReason(module);
  entry.value += value;
}

std::string WindowEncoder::UnnamedReason(const ModuleInfo* module) const {
  if (module == nullptr) return "in no module the process reported mapping";
  if (symbolizer_ == nullptr) {
    return "not symbolized by the collector (--symbolize=false)";
  }
  std::string reason = symbolizer_->UnnamedReason(*module);
  return reason.empty() ? "no reason recorded" : reason;
}

std::vector<LineSpec> WindowEncoder::LinesOf(uint32_t index,
                                             const ModuleInfo* module,
                                             bool& resolved, bool& has_lines) {
  const StackTable::Location& location = stacks_->location(index);
  // Symbolized once its module is known: until then (its map record was
  // lost, and comes again with the emitter's next re-emission) it stays
  // open, since in-use stacks come back in every window.
  if (!location.symbolized && module != nullptr) {
    stacks_->SetSymbols(
        index, symbolizer_ == nullptr
                   ? std::vector<SymbolizedFrame>()
                   : symbolizer_->Symbolize(*module, location.address,
                                            location.exact_pc
                                                ? AddressKind::kInstruction
                                                : AddressKind::kReturnAddress));
  }
  std::vector<LineSpec> lines;
  for (const SymbolizedFrame& frame : location.frames) {
    if (frame.function.empty() && frame.file.empty()) continue;
    has_lines |= frame.line != 0;
    lines.push_back({frame.function.empty() ? "[unknown]" : frame.function,
                     frame.file, frame.line});
  }
  resolved = !lines.empty();
  if (!resolved && (module == nullptr || !options_.unresolved_without_lines)) {
    // Return addresses point after the call; name the call instruction.
    const uint64_t pc =
        location.exact_pc ? location.address : location.address - 1;
    // Unresolved: name it so a person (or addr2line) can still place it.
    lines.push_back({module != nullptr
                         ? absl::StrFormat("%s+0x%x", Basename(module->path),
                                           LinkTimeAddress(*module, pc))
                         : absl::StrFormat("0x%x", pc),
                     "", 0});
  }
  return lines;
}

PprofBuilder::LocationId WindowEncoder::Location(Build& build, uint32_t index) {
  auto found = build.memo.find(index);
  if (found != build.memo.end()) return found->second;
  const ModuleInfo* module = stacks_->ModuleOf(index);
  bool resolved = false, has_lines = false;
  const std::vector<LineSpec> lines =
      LinesOf(index, module, resolved, has_lines);
  PprofBuilder::MappingId mapping = 0;
  if (module != nullptr) {
    MappingSpec spec{*module};
    spec.has_functions = resolved;
    spec.has_filenames = resolved && !lines.front().filename.empty();
    spec.has_line_numbers = has_lines;
    spec.has_inline_frames = lines.size() > 1;
    mapping = build.builder.InternMapping(spec);
  }
  const PprofBuilder::LocationId id = build.builder.InternLocation(
      mapping, stacks_->location(index).address, lines);
  build.memo.emplace(index, id);
  return id;
}

}  // namespace collector
}  // namespace ringprof
