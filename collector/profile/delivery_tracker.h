// DeliveryTracker: how far one process's records were delivered, so that a
// collector that restarts neither loses nor repeats a window.
//
//   Resume(checkpoint)  a predecessor delivered every sample stamped before
//                       its emitted_until and read the records below its
//                       consumed positions
//   Replayed(...)       a record both stamped and read before that: counted
//                       and skipped (a record the predecessor never read is
//                       late, not delivered, and counts)
//   SetReadPositions    where the reader is now, per ring
//   Emitted(until)      a window up to `until` went to the sink
//   Take(force)         the delivery part of a checkpoint, when a window
//                       was emitted since the last one taken
//
// The caller lowers the checkpoint's positions to the records of windows
// still open (WindowSet::LowerPositions) and adds what the profiler knows
// (modules, labels, CPU source).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_DELIVERY_TRACKER_H_
#define RINGPROF_COLLECTOR_PROFILE_DELIVERY_TRACKER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "collector/ingest/checkpoint.h"

namespace ringprof {
namespace collector {

class DeliveryTracker {
 public:
  // Continue where a predecessor's `checkpoint` says it stopped.
  void Resume(const Checkpoint& checkpoint);

  // True (and counted) for record `index` of ring `ring`, stamped
  // `unix_ns`, that a predecessor already delivered.
  bool Replayed(int64_t unix_ns, uint32_t ring, uint64_t index);
  // True when a predecessor's windows covered `unix_ns` (a tick picked
  // there was delivered).
  bool Delivered(int64_t unix_ns) const {
    return unix_ns < resumed_until_unix_ns_;
  }

  void SetReadPositions(absl::Span<const uint64_t> positions);
  // A window that ends at `until_unix_ns` was handed to the sink.
  void Emitted(int64_t until_unix_ns);

  // A checkpoint (positions and consumed: the read positions;
  // emitted_until) if a window was emitted since the last one taken, or
  // always with `force`; nullopt otherwise.
  std::optional<Checkpoint> Take(bool force);

  // The end of the delivered windows (INT64_MIN: none yet).
  int64_t emitted_until_unix_ns() const { return emitted_until_unix_ns_; }
  uint64_t replay_skipped() const { return replay_skipped_; }

 private:
  std::vector<uint64_t> read_positions_;
  int64_t resumed_until_unix_ns_ = INT64_MIN;  // samples before: delivered
  std::vector<uint64_t> resumed_consumed_;     // ... if read before
  int64_t emitted_until_unix_ns_ = INT64_MIN;
  int64_t checkpointed_until_unix_ns_ = INT64_MIN;
  uint64_t replay_skipped_ = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_DELIVERY_TRACKER_H_
