// The interposers' common paths (malloc_interpose.cc, new_interpose.cc):
// count the bytes, forward to the next allocator, and leave everything
// rare to out-of-line functions.
//
// Contract: allocation-free, lock-free and async-signal-safe like the
// entry points that inline them. Why the split: an entry point whose only
// calls are tail calls needs no stack frame, so the common case of malloc
// is a TLS subtract, a predicted branch and a jump through the next
// allocator's table, and the common case of free the live-set
// filter's byte load, a predicted branch and the jump. No "is the table
// resolved yet" test: the table's malloc and free start out as MallocUnready
// and FreeUnready, which resolve it on the process's first call. The
// out-of-line functions (the sampled path, the first call of the process, a
// free of a possibly sampled block) are `noinline`: their frame, not the
// entry point's, is the innermost recorded one, and the collector trims
// the emitter's frames from stack leaves anyway.
#ifndef RINGPROF_EMITTER_FORWARD_H_
#define RINGPROF_EMITTER_FORWARD_H_

#include <atomic>
#include <cstddef>

#include "emitter/alloc_sampler.h"
#include "emitter/free_tracker.h"
#include "emitter/next_allocator.h"

namespace ringprof {
namespace emitter {

// malloc whose countdown expired: allocate, then sample on success.
void* MallocSampled(size_t size);
// aligned_alloc, likewise.
void* AlignedAllocSampled(size_t alignment, size_t size);
// free of a block the filter says may be a tracked sample or a bootstrap
// block (whose cells are pinned; dropped).
void FreeTracked(void* ptr);

// The sampled path of every entry point: allocate, then record the block
// on success, or give its bytes back to the countdown on failure (or, if
// `allocate` throws, the sampler clamps what it did not get back).
template <typename Allocate>
__attribute__((noinline)) void* AllocateAndSample(size_t size,
                                                  Allocate allocate) {
  void* ptr = allocate();
  if (ptr != nullptr) {
    SampleAllocation(ptr, size);
  } else {
    SampledAllocationFailed(size);
  }
  return ptr;
}

// malloc(size) as the interposed malloc does it.
__attribute__((always_inline)) inline void* ForwardMalloc(size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.malloc(size);
  }
  return MallocSampled(size);
}

// aligned_alloc(alignment, size) with the table known to be resolved.
__attribute__((always_inline)) inline void* ForwardAlignedAllocReady(
    size_t alignment, size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.aligned_alloc(alignment, size);
  }
  return AlignedAllocSampled(alignment, size);
}

// free(ptr) as the interposed free does it.
__attribute__((always_inline)) inline void ForwardFree(void* ptr) {
  if (FreeNeedsTracking(ptr)) return FreeTracked(ptr);
  return g_next.free(ptr);
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FORWARD_H_
