// The allocation sample source: decides, per allocation, whether to record
// it, and records the sampled ones (AllocSample: time, tid, size, weight,
// address, stack) into the ring file.
//
// Contract: OnAllocation is called by every interposed allocation function
// after the real allocator succeeded, from any thread, possibly before the
// session started or after it ended. It never allocates, never takes a
// lock, never blocks. Its cost when not sampling is one initial-exec TLS
// subtract and a predicted branch; see sampler.h for the maths.
#ifndef RINGPROF_EMITTER_ALLOC_SAMPLER_H_
#define RINGPROF_EMITTER_ALLOC_SAMPLER_H_

#include <cstddef>

#include "emitter/sampler.h"
#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {

// The slow path: runs when the thread's byte countdown expired.
void SampleAllocation(void* address, size_t size);

inline void OnAllocation(void* address, size_t size) {
  if (CountdownExpired(tls_thread_state.sampler, size)) {
    SampleAllocation(address, size);
  }
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ALLOC_SAMPLER_H_
