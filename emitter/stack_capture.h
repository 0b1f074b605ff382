// Internal to the emitter: the two stack walkers behind CaptureStack
// (runtime.h), exposed so that tests can compare them.
#ifndef RINGPROF_EMITTER_STACK_CAPTURE_H_
#define RINGPROF_EMITTER_STACK_CAPTURE_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

// CaptureStack's contract, always through libgcc's _Unwind_Backtrace
// (skip = 0: the caller's return address first).
int CaptureStackWithLibgcc(uint64_t* frames, int max_frames, int skip,
                           bool* truncated);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_STACK_CAPTURE_H_
