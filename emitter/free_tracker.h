// Opt-in (RINGPROF_TRACK_FREES=1): FreeSampled records for the frees of
// sampled allocations, from which the collector can estimate the in-use
// heap (each sample's weight stays "in use" until its address is freed).
//
// A fixed lock-free open-addressing set (kSlots addresses) remembers the
// addresses of recorded allocation samples; free() and realloc() look the
// pointer up there and report it *before* handing it to glibc, so the
// address cannot be reused and sampled again before its free is recorded.
// Probing is bounded (kMaxProbes): when the set is that crowded a sampled
// address is not remembered and its free goes unreported (the collector
// then over-estimates the in-use heap by that sample's weight).
//
// Cost: off (the default), free() pays one load of a global flag and a
// predicted branch. On, every free() also hashes its pointer and reads one
// or a few slots of a 128 KiB table.
//
// All functions are lock-free, allocation-free and async-signal-safe.
#ifndef RINGPROF_EMITTER_FREE_TRACKER_H_
#define RINGPROF_EMITTER_FREE_TRACKER_H_

#include <atomic>
#include <cstdint>

namespace ringprof {
namespace emitter {

inline constexpr int kFreeTrackerSlots = 1 << 14;
inline constexpr int kFreeTrackerMaxProbes = 16;

extern std::atomic<bool> g_free_tracking;

inline bool FreeTrackingOn() {
  return g_free_tracking.load(std::memory_order_relaxed);
}

// After an allocation sample at `address` was recorded.
void RememberSampledAddress(uint64_t address);

// Before `address` (non-null) is freed or reallocated: appends FreeSampled
// when it was a remembered sample.
void OnFreeOfPossiblySampled(uint64_t address);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FREE_TRACKER_H_
