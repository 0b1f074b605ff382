// The off-CPU sample source: time a thread spends waiting in a contended
// lock (the "mutex" profile) or in a call that blocked (the "block"
// profile), sampled like Go's block profile and recorded as WaitSample
// (ringfile/format.h, FORMAT.md §5.3).
//
// The interposers (lock_interpose.cc, block_interpose.cc) test
// WaitProfileOn, read WaitClock before a call that may wait, and hand the
// reading to SampleWait after it. SampleWait keeps a wait of d ns with
// probability min(1, d / rate) (rate: RINGPROF_MUTEX_SAMPLE_NS or
// RINGPROF_BLOCK_SAMPLE_NS), so that the weights the collector gives a kept
// wait — max(d, rate) ns, max(1, rate / d) waits — sum to unbiased totals;
// the expected number of samples per thread is at most (time it waited) /
// rate plus its waits longer than rate.
//
// Contract: from any thread, a signal handler, before the session started
// or after it ended, in a fork child. No allocation, no lock; errno is left
// as the wrapped call set it. A wait that ends inside the emitter (its own
// write of a warning) or in a signal handler that interrupted it is not
// recorded.
#ifndef RINGPROF_EMITTER_WAIT_SAMPLER_H_
#define RINGPROF_EMITTER_WAIT_SAMPLER_H_

#include <cstdint>

#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

// Bit (1 << kind) set while that profile is on; written once at start.
// (Default visibility: in the fastbuild split the interposers are another
// library.)
extern uint32_t g_wait_profiles;

inline bool WaitProfileOn(ringfile::WaitKind kind) {
  return __builtin_expect((g_wait_profiles >> static_cast<uint32_t>(kind)) & 1u,
                          1);
}

// True when the C library is glibc, whose lock words the lock wrappers may
// peek at (lock_interpose.cc); written once at start.
extern bool g_glibc_lock_words;

// Turns the profiles on as configured (sample rate 0: off). From the library
// constructor only, once the session started; also after fork (unchanged).
void StartWaitProfiles(uint64_t mutex_sample_ns, uint64_t block_sample_ns,
                       bool glibc_lock_words);

inline uint64_t WaitClock() { return MonotonicNowNs(); }

// The wait that began at `start_ns` (a WaitClock reading) ended now. The
// stack recorded starts in the interposed function (the caller).
void SampleWait(ringfile::WaitKind kind, uint64_t start_ns);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_WAIT_SAMPLER_H_
