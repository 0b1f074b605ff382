// RingState: how far the collector has delivered one ring file, persisted
// under --state-dir so that a restarted collector neither counts a record
// twice nor reports records it skipped on purpose as lost.
//
// Per ring file `NAME.ring` the state is `STATE_DIR/NAME.ring.state`
// (RingStateProto, ring_state.proto), written atomically by the processing
// thread each time a window of that process has been handed to the sinks,
// and removed when the process has ended. It holds the reader positions to
// resume at (per ring: no record below it contributes to an open window),
// the end of the last delivered window (samples stamped before it are
// skipped on replay), and what the profiler learned from records that may
// have been overwritten since: module maps, labels and the CPU source.
//
// State files are untrusted input (any process that can write the state
// directory could have written them): ParseRingState bounds every count and
// size and rejects anything else; a file that does not parse, or belongs to
// another file of the same name, is ignored and replaced.
//
// Thread-compatible; functions touching files are not async-signal-safe.
#ifndef RINGPROF_COLLECTOR_INGEST_RING_STATE_H_
#define RINGPROF_COLLECTOR_INGEST_RING_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/ingest/checkpoint.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace collector {

// A Checkpoint and the identity of the ring file it belongs to.
struct RingState : Checkpoint {
  uint32_t pid = 0;
  uint64_t process_start_ticks = 0;
  uint64_t created_monotonic_ns = 0;
  uint64_t created_realtime_ns = 0;
};

// The state to save for `checkpoint` of the ring file `info`: one position
// per ring (0 for a ring not read yet), and no ring consumed below its
// position.
RingState RingStateOf(const ringfile::FileInfo& info, Checkpoint checkpoint);

// Bounds of a valid state.
inline constexpr size_t kMaxStateBytes = 4 << 20;
inline constexpr size_t kMaxSavedModules = 4096;
inline constexpr size_t kMaxSavedLabels = 64;
inline constexpr size_t kMaxSavedStringBytes = 4096;

// InvalidArgument naming the problem for anything out of bounds.
absl::StatusOr<RingState> ParseRingState(absl::string_view bytes);
std::string SerializeRingState(const RingState& state);

// Whether `state` was written for the file with this header.
bool StateMatches(const RingState& state, const ringfile::FileInfo& info);

// STATE_DIR/<basename of ring_path>.state
std::string RingStatePath(const std::string& state_dir,
                          const std::string& ring_path);

// nullopt when there is none; an error for an unreadable or invalid file
// (regular files of at most kMaxStateBytes only; never blocks on a FIFO).
absl::StatusOr<std::optional<RingState>> LoadRingState(
    const std::string& state_dir, const std::string& ring_path);
absl::Status SaveRingState(const std::string& state_dir,
                           const std::string& ring_path,
                           const RingState& state);
void RemoveRingState(const std::string& state_dir,
                     const std::string& ring_path);
// Removes state files whose ring file no longer exists in `ring_dir`.
void RemoveOrphanedStates(const std::string& state_dir,
                          const std::string& ring_dir);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_RING_STATE_H_
