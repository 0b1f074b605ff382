// Per-thread emitter state, in initial-exec TLS.
//
// Initial-exec TLS is a fixed offset from the thread pointer: reading it is a
// single load relative to the thread pointer (%fs, tpidr_el0), never calls
// __tls_get_addr (which may allocate, i.e. recurse into malloc) and is valid
// from the first instruction of a new thread and in signal handlers. A
// preloaded library gets its static TLS from the surplus glibc reserves;
// dlopen()ing libringprof.so later may fail with "cannot allocate memory in
// static TLS block" (not supported).
//
// Zero-initialised means "fresh thread"; every field's zero is meaningful.
#ifndef RINGPROF_EMITTER_THREAD_STATE_H_
#define RINGPROF_EMITTER_THREAD_STATE_H_

#include <cstdint>

#include "emitter/sampler.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

struct ThreadState {
  SamplerState sampler;
  uint32_t tid = 0;         // kernel tid; 0 = not cached yet
  uint32_t in_emitter = 0;  // non-zero while inside the emitter (re-entry)
  // Value of the process-wide thread-name generation when this thread last
  // recorded its name; 0 = never.
  uint32_t name_generation = 0;
  // Calls on pipes, sockets and terminals until the next one re-reads its
  // descriptor's kind (fd_class.h).
  uint32_t fd_recheck = 0;
  // This thread's stack, [stack_low, stack_high); 0 when unknown.
  uintptr_t stack_low = 0;
  uintptr_t stack_high = 0;
  // Application tags (tags.h): the current tag-set id (0 = none), how many
  // pushes are open, and the id each open push replaced (the first
  // kMaxTagsPerSet of them; deeper pushes change nothing).
  uint32_t tag_set = 0;
  uint32_t tag_depth = 0;
  uint32_t tag_saved[ringfile::kMaxTagsPerSet] = {};
  uint64_t span_id = 0;  // 0 = no span
  uint64_t wait_rng =
      0;  // off-CPU waits' generator (wait_sampler.h); 0 = unseeded
};

extern __thread ThreadState tls_thread_state
    __attribute__((tls_model("initial-exec")));

// Marks the calling thread as inside the emitter for the lifetime of the
// scope; entered() is false when it already was (the caller must then drop
// whatever it was about to record).
class ReentryGuard {
 public:
  ReentryGuard() : entered_(tls_thread_state.in_emitter++ == 0) {}
  ~ReentryGuard() { --tls_thread_state.in_emitter; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
  bool entered() const { return entered_; }

 private:
  const bool entered_;
};

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_THREAD_STATE_H_
