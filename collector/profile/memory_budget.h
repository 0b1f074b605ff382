// The memory a process's profiling state may hold: interned stacks,
// locations and label sets (for the process's life) and the open windows'
// aggregates (until a window is emitted), as an estimate in bytes (not
// RSS). Each ProcessProfiler charges its own ProcessMemory, which also
// charges the MemoryBudget shared by the profilers of one collector.
//
// Thread-compatible: the shared MemoryBudget belongs to the collector's
// processing thread (not thread-safe). No allocation.
#ifndef RINGPROF_COLLECTOR_PROFILE_MEMORY_BUDGET_H_
#define RINGPROF_COLLECTOR_PROFILE_MEMORY_BUDGET_H_

#include <cstdint>

namespace ringprof {
namespace collector {

// The memory all ProcessProfilers of a collector may use.
struct MemoryBudget {
  uint64_t limit_bytes = uint64_t{1} << 30;
  uint64_t used_bytes = 0;
};

class ProcessMemory {
 public:
  // `shared` may be null (no shared limit); it must outlive this object.
  ProcessMemory(uint64_t limit_bytes, MemoryBudget* shared)
      : limit_bytes_(limit_bytes), shared_(shared) {}
  // Gives this process's bytes back to the shared budget.
  ~ProcessMemory();
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  // Charges `bytes` to both budgets; false (nothing charged) when either
  // would be exceeded.
  bool Charge(uint64_t bytes);
  // Charge, and when it fails counts one sample folded under the budget's
  // "[truncated]" stack (folded(), ringprof_budget_folded_total).
  bool ChargeOrFold(uint64_t bytes);
  // Charges `bytes` even past the budgets (what is already counted and
  // makes a location useful: its symbol names).
  void ChargeAlways(uint64_t bytes);
  // Gives back `bytes` charged before (what a closed window held).
  void Release(uint64_t bytes);

  uint64_t bytes() const { return bytes_; }
  uint64_t folded() const { return folded_; }

 private:
  void Publish() const;

  const uint64_t limit_bytes_;
  MemoryBudget* const shared_;
  uint64_t bytes_ = 0;
  uint64_t folded_ = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_MEMORY_BUDGET_H_
