#include "collector/profile/delivery_tracker.h"

#include <algorithm>

namespace ringprof {
namespace collector {

void DeliveryTracker::Resume(const Checkpoint& checkpoint) {
  read_positions_ = checkpoint.consumed;
  resumed_consumed_ = checkpoint.consumed;
  resumed_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
  emitted_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
  checkpointed_until_unix_ns_ = checkpoint.emitted_until_unix_ns;
}

bool DeliveryTracker::Replayed(int64_t unix_ns, uint32_t ring, uint64_t index) {
  if (unix_ns >= resumed_until_unix_ns_) return false;
  if (ring >= resumed_consumed_.size() || index >= resumed_consumed_[ring]) {
    return false;  // the predecessor never read it: late, not delivered
  }
  ++replay_skipped_;
  return true;
}

void DeliveryTracker::SetReadPositions(absl::Span<const uint64_t> positions) {
  read_positions_.assign(positions.begin(), positions.end());
}

void DeliveryTracker::Emitted(int64_t until_unix_ns) {
  emitted_until_unix_ns_ = std::max(emitted_until_unix_ns_, until_unix_ns);
}

std::optional<Checkpoint> DeliveryTracker::Take(bool force) {
  if (!force && emitted_until_unix_ns_ == checkpointed_until_unix_ns_) {
    return std::nullopt;
  }
  checkpointed_until_unix_ns_ = emitted_until_unix_ns_;
  Checkpoint checkpoint;
  checkpoint.positions = read_positions_;
  checkpoint.consumed = read_positions_;
  checkpoint.emitted_until_unix_ns = emitted_until_unix_ns_;
  return checkpoint;
}

}  // namespace collector
}  // namespace ringprof
