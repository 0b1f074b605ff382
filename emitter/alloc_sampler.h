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
// must be passed to SampleAllocation once it succeeded. (Bytes of a failed
// allocation are counted nonetheless; failures are rare enough not to
// matter.)
inline bool AllocationNeedsSample(size_t size) {
  return CountdownExpired(tls_thread_state.sampler, size);
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ALLOC_SAMPLER_H_
