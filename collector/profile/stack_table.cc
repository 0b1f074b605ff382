#include "collector/profile/stack_table.h"

#include <utility>

#include "absl/hash/hash.h"
#include "collector/base/file.h"

namespace ringprof {
namespace collector {
namespace {

// Key of a location in location_index_: the exact-PC bit below the address.
uint64_t LocationKey(uint64_t address, bool exact_pc) {
  return (address << 1) | (exact_pc ? 1 : 0);
}
// Marks a stack whose capture was cut short; no real LocationKey is 1
// (address 0 is never a frame).
constexpr uint64_t kTruncatedMarker = 1;
// Followed by the stack's sample-label id; no real LocationKey is 2.
constexpr uint64_t kLabelsMarker = 2;

// Estimated costs charged to the memory budget.
constexpr uint64_t kStackBytes = 96;        // Stack, index entry
constexpr uint64_t kFrameBytes = 24;        // per frame: key + location id
constexpr uint64_t kSymbolFrameBytes = 96;  // per symbolized frame + text

}  // namespace

size_t StackTable::SpanHash::operator()(absl::Span<const uint64_t> s) const {
  return absl::HashOf(s);
}

bool StackTable::SpanEq::operator()(absl::Span<const uint64_t> a,
                                    absl::Span<const uint64_t> b) const {
  return a == b;
}

StackTable::StackTable(uint32_t pid, ProcessMemory* memory)
    : pid_(pid), memory_(memory) {}

bool StackTable::MapModule(ModuleInfo module) {
  if (!memory_->ChargeOrFold(kLocationBytes + module.path.size())) {
    return false;  // its addresses stay unresolved (0xADDR)
  }
  // Locations seen before this mapping arrived resolve to it lazily
  // (ModuleOf), so the caches stay valid.
  AddModule(std::move(module));
  return true;
}

bool StackTable::RestoreModule(ModuleInfo module) {
  if (!memory_->Charge(kLocationBytes + module.path.size())) return false;
  AddModule(std::move(module));
  return true;
}

void StackTable::AddModule(ModuleInfo module) {
  module.pid = pid_;
  is_emitter_.push_back(Basename(module.path) == "libringprof.so");
  active_modules_[module.start] = static_cast<int>(modules_.size());
  modules_.push_back(std::move(module));
}

void StackTable::UnmapModule(uint64_t start) {
  active_modules_.erase(start);
  location_index_.clear();
  stack_index_.clear();
}

std::vector<ModuleInfo> StackTable::ActiveModules() const {
  std::vector<ModuleInfo> modules;
  for (const auto& [start, index] : active_modules_) {
    modules.push_back(modules_[index]);
  }
  return modules;
}

const ModuleInfo* StackTable::FindModuleByPath(const std::string& path) const {
  for (const ModuleInfo& module : modules_) {
    if (module.path == path) return &module;
  }
  return nullptr;
}

int StackTable::FindModule(uint64_t address) const {
  auto it = active_modules_.upper_bound(address);
  if (it == active_modules_.begin()) return -1;
  --it;
  const ModuleInfo& m = modules_[it->second];
  return address - m.start < m.size ? it->second : -1;
}

uint32_t StackTable::InternLocation(uint64_t address, bool exact_pc) {
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

uint64_t StackTable::CostOf(absl::Span<const uint64_t> frames,
                            bool exact_leaf) const {
  uint64_t cost = kStackBytes + kFrameBytes * frames.size();
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!location_index_.contains(
            LocationKey(frames[i], exact_leaf && i == 0))) {
      cost += kLocationBytes;
    }
  }
  return cost;
}

uint32_t StackTable::Intern(absl::Span<const uint64_t> frames, bool exact_leaf,
                            bool truncated, uint32_t labels) {
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
  if (!memory_->ChargeOrFold(CostOf(frames, exact_leaf))) return kBudgetStack;

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

absl::Span<const uint32_t> StackTable::ProgramFrames(uint32_t id) {
  const std::vector<uint32_t>& locations = stacks_[id].locations;
  // The emitter's own frames (its malloc wrapper, sampler) at the leaf end
  // say nothing about the program: the stack starts at malloc's caller.
  size_t first = 0;
  while (first + 1 < locations.size()) {
    if (ModuleOf(locations[first]) == nullptr ||
        !is_emitter_[locations_[locations[first]].module]) {
      break;
    }
    ++first;
  }
  return absl::MakeConstSpan(locations).subspan(first);
}

const ModuleInfo* StackTable::ModuleOf(uint32_t id) {
  Location& location = locations_[id];
  if (location.module < 0 && !location.symbolized) {
    location.module = FindModule(location.address);
  }
  return location.module >= 0 ? &modules_[location.module] : nullptr;
}

void StackTable::SetSymbols(uint32_t id, std::vector<SymbolizedFrame> frames) {
  Location& location = locations_[id];
  location.symbolized = true;
  // Charged even past the budget: the location is already counted and its
  // names are what makes it useful; the stack budget bounds them.
  uint64_t bytes = 0;
  for (const SymbolizedFrame& frame : frames) {
    bytes += kSymbolFrameBytes + frame.function.size() + frame.file.size();
  }
  memory_->ChargeAlways(bytes);
  location.frames = std::move(frames);
}

}  // namespace collector
}  // namespace ringprof
