#include "collector/profile/memory_budget.h"

#include <algorithm>

#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& budget_folded = Metrics::Get().GetCounter(
      "ringprof_budget_folded_total",
      "Samples and ticks counted under a '[truncated]' stack because a "
      "process (or the collector) reached its memory budget.");
  Gauge& memory_in_use = Metrics::Get().GetGauge(
      "ringprof_profiler_memory_bytes",
      "Estimated bytes of interned stacks, locations and window aggregates "
      "held for all processes (bounded by --max-memory-mib).");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

}  // namespace

ProcessMemory::~ProcessMemory() {
  if (shared_ == nullptr) return;
  shared_->used_bytes -= std::min(shared_->used_bytes, bytes_);
  Publish();
}

bool ProcessMemory::Charge(uint64_t bytes) {
  if (bytes_ + bytes > limit_bytes_) return false;
  if (shared_ != nullptr) {
    if (shared_->used_bytes + bytes > shared_->limit_bytes) return false;
    shared_->used_bytes += bytes;
    Publish();
  }
  bytes_ += bytes;
  return true;
}

bool ProcessMemory::ChargeOrFold(uint64_t bytes) {
  if (Charge(bytes)) return true;
  ++folded_;
  metrics().budget_folded.Add(1);
  return false;
}

void ProcessMemory::ChargeAlways(uint64_t bytes) {
  bytes_ += bytes;
  if (shared_ != nullptr) shared_->used_bytes += bytes;
}

void ProcessMemory::Release(uint64_t bytes) {
  bytes = std::min(bytes, bytes_);
  bytes_ -= bytes;
  if (shared_ != nullptr) {
    shared_->used_bytes -= std::min(shared_->used_bytes, bytes);
    Publish();
  }
}

void ProcessMemory::Publish() const {
  metrics().memory_in_use.Set(static_cast<double>(shared_->used_bytes));
}

}  // namespace collector
}  // namespace ringprof
