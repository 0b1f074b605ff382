// The free side of the in-use heap (on by default; RINGPROF_TRACK_FREES=0
// turns it off): every free() and realloc() asks the live set whether the
// block was a tracked allocation sample, and if so appends FreeSampled
// *before* the allocator sees the pointer, so the address cannot be reused
// and sampled again before its free is recorded.
//
// Cost: the check (FreeNeedsTracking) is inlined into the interposer: a few
// shifts and one byte load from live_set.h's filter, false for every
// address that was never sampled (bar filter collisions). With tracking off
// the filter holds no samples, so the same test fails.
//
// All functions are lock-free, allocation-free and async-signal-safe.
#ifndef RINGPROF_EMITTER_FREE_TRACKER_H_
#define RINGPROF_EMITTER_FREE_TRACKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "emitter/live_set.h"

namespace ringprof {
namespace emitter {

// Set once at start: allocation samples are entered into the live set.
extern std::atomic<bool> g_free_tracking;

inline bool FreeTrackingOn() {
  return g_free_tracking.load(std::memory_order_relaxed);
}

// The interposer's one-line hook: true (rarely) when `ptr` must go through
// OnFreeOfPossiblySampled / the realloc pair below. Null is never live.
inline bool FreeNeedsTracking(const void* ptr) {
  return __builtin_expect(MaybeLive(reinterpret_cast<uintptr_t>(ptr)), 0) &&
         ptr != nullptr;
}

// Before `address` is freed: appends FreeSampled when it was live.
void OnFreeOfPossiblySampled(uint64_t address);

// realloc of a possibly sampled block: BeforeRealloc detaches it (and reads
// the free's timestamp while the address is still ours); AfterRealloc
// reports the free when the old block is gone (`succeeded`), or puts it
// back when realloc failed and the block lives on.
struct PendingRealloc {
  uint32_t entry = kNoEntry;
  uint64_t address = 0;
  uint64_t free_ns = 0;
};
PendingRealloc BeforeRealloc(uint64_t address);
void AfterRealloc(const PendingRealloc& pending, bool succeeded);

// The sampled path: reserve before appending the AllocSample (kNoEntry:
// flag it kSampleUntracked), publish after.
uint32_t ReserveLiveEntry(uint64_t address);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FREE_TRACKER_H_
