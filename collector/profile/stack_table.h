// StackTable: one process's mapped modules, the locations (addresses) its
// samples name, and its interned stacks, within the process's memory
// budget.
//
//   frames (leaf first) --Intern--> stack id --stack()--> location ids
//   location id --location()--> address, module (resolved on first sight
//                               or, if its map record came later, on use),
//                               symbols (SetSymbols, once)
//
// A stack is interned by its frames, whether its leaf is an exact PC (a
// timer sample's interrupted instruction) or a return address, whether its
// capture was cut short, and its sample-label set (TagLabeler id): the same
// frames with other labels are another stack. Once the budget is spent, a
// stack not seen before is kBudgetStack ("[truncated]"), and a module map
// is dropped (its addresses stay unresolved). ProgramFrames trims the
// emitter's own frames (libringprof.so) from the leaf end.
//
// Ids below size() are real stacks; the k*Stack ids above are synthetic
// ones the encoder names itself.
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_STACK_TABLE_H_
#define RINGPROF_COLLECTOR_PROFILE_STACK_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "collector/profile/memory_budget.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {

class StackTable {
 public:
  // Synthetic stack ids (never returned by Intern for a real stack).
  static constexpr uint32_t kLostStack = 0xfffffff0;      // "[lost]"
  static constexpr uint32_t kNoSampleStack = 0xfffffff1;  // "[no sample]"
  static constexpr uint32_t kBudgetStack = 0xfffffff2;    // "[truncated]"
  static constexpr uint32_t kNotSampledStack =
      0xfffffff3;  // thread not sampled

  // Memory charged per module besides its path (and per location).
  static constexpr uint64_t kLocationBytes = 128;

  struct Location {
    uint64_t address;  // as recorded
    bool exact_pc;     // leaf of a CPU sample; others are return addresses
    int module = -1;   // index into the modules; -1 while unknown
    bool symbolized = false;
    std::vector<SymbolizedFrame> frames;
  };
  struct Stack {
    std::vector<uint32_t> locations;  // leaf first
    bool truncated = false;
    uint32_t labels = 0;  // TagLabeler id; 0 = none
  };

  // `memory` must outlive this object.
  StackTable(uint32_t pid, ProcessMemory* memory);
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // A ModuleMap record: false (counted as folded) past the budget.
  bool MapModule(ModuleInfo module);
  // A module a predecessor knew (Checkpoint): false past the budget.
  bool RestoreModule(ModuleInfo module);
  // A ModuleUnmap record: stacks keep their resolved locations; new
  // sightings re-resolve.
  void UnmapModule(uint64_t start);
  // The modules mapped now, by start address.
  std::vector<ModuleInfo> ActiveModules() const;
  // The first module (mapped now or before) at `path`; null if none.
  const ModuleInfo* FindModuleByPath(const std::string& path) const;

  // The stack of `frames` (leaf first; zero frames are skipped), or
  // kBudgetStack once the budget is spent (counted as folded).
  uint32_t Intern(absl::Span<const uint64_t> frames, bool exact_leaf,
                  bool truncated, uint32_t labels);
  bool IsReal(uint32_t stack) const { return stack < stacks_.size(); }
  const Stack& stack(uint32_t id) const { return stacks_[id]; }
  size_t size() const { return stacks_.size(); }
  // The stack's locations from its first frame outside the emitter.
  absl::Span<const uint32_t> ProgramFrames(uint32_t stack);

  const Location& location(uint32_t id) const { return locations_[id]; }
  // The location's module, resolved now if it was unknown when first seen
  // (its map record may come after the first sample using it); null if
  // none.
  const ModuleInfo* ModuleOf(uint32_t location);
  // Stores the location's symbols (once its module is known); charged even
  // past the budget.
  void SetSymbols(uint32_t location, std::vector<SymbolizedFrame> frames);

 private:
  struct SpanHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const uint64_t> s) const;
  };
  struct SpanEq {
    using is_transparent = void;
    bool operator()(absl::Span<const uint64_t> a,
                    absl::Span<const uint64_t> b) const;
  };

  int FindModule(uint64_t address) const;
  void AddModule(ModuleInfo module);
  uint32_t InternLocation(uint64_t address, bool exact_pc);
  // The memory a new stack of `frames` costs (and its new locations).
  uint64_t CostOf(absl::Span<const uint64_t> frames, bool exact_leaf) const;

  const uint32_t pid_;
  ProcessMemory* const memory_;
  std::vector<ModuleInfo> modules_;
  // Per module: libringprof.so, trimmed from stack leaves.
  std::vector<bool> is_emitter_;
  // Active modules by start address -> index into modules_.
  std::map<uint64_t, int> active_modules_;
  std::vector<Location> locations_;
  absl::flat_hash_map<uint64_t, uint32_t> location_index_;  // key: addr*2+pc
  std::vector<Stack> stacks_;
  absl::flat_hash_map<std::vector<uint64_t>, uint32_t, SpanHash, SpanEq>
      stack_index_;
  std::vector<uint64_t> scratch_key_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_STACK_TABLE_H_
