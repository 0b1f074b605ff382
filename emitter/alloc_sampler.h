// The allocation sample source: decides, per allocation, whether to record
// it, and records the sampled ones (AllocSample: time, tid, size, weight,
// address, stack) into the ring file.
//
// Contract: every interposed allocation function calls AllocationNeedsSample
// and, when it returns true, SampleAllocation after the real allocator
// succeeded; from any thread, possibly before the session started or after
// it ended. Neither allocates, takes a lock or blocks. The cost when not
// sampling is one initial-exec TLS subtract and a predicted branch; see
// sampler.h for the maths.
#ifndef RINGPROF_EMITTER_ALLOC_SAMPLER_H_
#define RINGPROF_EMITTER_ALLOC_SAMPLER_H_

#include <cstddef>

#include "emitter/sampler.h"
#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {

// The slow path: runs when the thread's byte countdown expired.
void SampleAllocation(void* address, size_t size);

// The fast path, called *before* the real allocation so that the common
// case is a tail call into glibc: true when the allocation of `size` bytes
// must be passed to SampleAllocation once it succeeded, or to
// SampledAllocationFailed if it failed.
inline bool AllocationNeedsSample(size_t size) {
  return CountdownExpired(tls_thread_state.sampler, size);
}

// The allocation AllocationNeedsSample said to sample failed: its bytes are
// given back, leaving the countdown as it was before. (Kept, they would be
// a debt the next sample pays off one random gap at a time: after a failed
// malloc(SIZE_MAX / 4), billions of draws.) A failed allocation that did not
// expire the countdown stays counted: less than one sampling interval.
inline void SampledAllocationFailed(size_t size) {
  tls_thread_state.sampler.countdown += static_cast<int64_t>(size);
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ALLOC_SAMPLER_H_
