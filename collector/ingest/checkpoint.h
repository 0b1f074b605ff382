// Checkpoint: the resume state of one profiled process, as the profiler
// takes it (ProcessProfiler::TakeCheckpoint) and a successor resumes from
// it (ProcessProfiler::Resume).
//
// Thread-compatible plain data.
#ifndef RINGPROF_COLLECTOR_INGEST_CHECKPOINT_H_
#define RINGPROF_COLLECTOR_INGEST_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collector/base/labels.h"
#include "collector/base/module_info.h"

namespace ringprof {
namespace collector {

// How far a profiler has delivered its process's records, for a successor
// to resume exactly there (ring_state.h persists it, with the ring
// file's identity).
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
  Labels labels;
  bool cpu_timer = false;
  uint64_t cpu_period_ns = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_CHECKPOINT_H_
