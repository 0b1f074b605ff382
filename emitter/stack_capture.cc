// CaptureStack (runtime.h): the cached CFI walker (cfi_unwinder.h) when it
// can, libgcc's DWARF unwinder for everything else. libgcc is opened at run
// time (libc_features.h). Where it is missing, or where it may not run
// (inside a signal handler when it locates objects with dl_iterate_phdr,
// i.e. on glibc < 2.35), the stack is what the CFI walker got before it
// gave up, flagged truncated.
//
// Why DWARF at all: Debian builds libc and libstdc++ without frame
// pointers, so a frame-pointer walk stops at the first libc/libstdc++ frame.
// The unwinder follows .eh_frame CFI instead, which every x86-64 and
// AArch64 object of a Linux distribution has (musl's libc aside).
// On glibc >= 2.35 it locates each PC's object with _dl_find_object
// (libgcc_s from GCC 12 imports it; check with `objdump -T libgcc_s.so.1`),
// which is lock-free and async-signal-safe: no loader lock, no
// dl_iterate_phdr, no allocation. (Objects registered with __register_frame,
// i.e. JITs, are the exception: libgcc looks them up under a mutex first.)
//
// Bounds: the unwinder reads saved registers only at CFA-relative addresses
// that the CFI of the PC's own object describes. As a second line of defence
// the walk stops when a frame's CFA leaves the thread's stack (bounds from
// thread_state.h, recorded at thread start) after having been inside it:
// frames on a signal alternate stack come first and are allowed.
#include "emitter/stack_capture.h"

#include <unwind.h>

#include <cstdint>

#include "emitter/cfi_unwinder.h"
#include "emitter/libc_features.h"
#include "emitter/runtime.h"
#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {
namespace {

struct CaptureState {
  uint64_t* frames;
  int max_frames;
  int to_skip;  // frames still to skip, the capturing function's included
  int count;
  bool truncated;
  bool on_thread_stack;
  uintptr_t stack_low;
  uintptr_t stack_high;
};

_Unwind_Reason_Code OnFrame(struct _Unwind_Context* context, void* arg) {
  CaptureState& state = *static_cast<CaptureState*>(arg);
  if (state.stack_high != 0) {
    const uintptr_t cfa = Libgcc().get_cfa(context);
    const bool inside = cfa >= state.stack_low && cfa <= state.stack_high;
    if (inside) {
      state.on_thread_stack = true;
    } else if (state.on_thread_stack) {
      return _URC_END_OF_STACK;
    }
  }
  if (state.to_skip > 0) {
    --state.to_skip;
    return _URC_NO_REASON;
  }
  const uintptr_t pc = Libgcc().get_ip(context);
  if (pc == 0) return _URC_END_OF_STACK;
  if (state.count == state.max_frames) {
    state.truncated = true;
    return _URC_END_OF_STACK;
  }
  state.frames[state.count++] = pc;
  return _URC_NO_REASON;
}

}  // namespace

__attribute__((noinline)) int CaptureStackWithLibgcc(uint64_t* frames,
                                                     int max_frames, int skip,
                                                     bool* truncated) {
  const LibgccUnwinder& libgcc = Libgcc();
  if (libgcc.backtrace == nullptr) {
    *truncated = false;
    return 0;
  }
  CaptureState state;
  state.frames = frames;
  state.max_frames = max_frames;
  // The first frame reported is this function's own.
  state.to_skip = 1 + skip;
  state.count = 0;
  state.truncated = false;
  state.on_thread_stack = false;
  state.stack_low = tls_thread_state.stack_low;
  state.stack_high = tls_thread_state.stack_high;
  libgcc.backtrace(OnFrame, &state);
  *truncated = state.truncated;
  return state.count;
}

// Needs a frame pointer of its own (the BUILD compiles the emitter with
// -fno-omit-frame-pointer) to find its caller's registers.
__attribute__((noinline)) int CaptureStack(uint64_t* frames, int max_frames,
                                           int skip, bool* truncated) {
  const ThreadState& thread = tls_thread_state;
  if (thread.stack_high != 0) {
    // Our frame record holds the caller's frame pointer and the return
    // address into it; our CFA is the caller's stack pointer.
    const UnwindStart start =
        CallerOf(__builtin_frame_address(0), __builtin_dwarf_cfa());
    CfiWalkStop stop;
    const int count = CfiWalk(start, frames, max_frames, skip, truncated,
                              thread.stack_low, thread.stack_high, &stop);
    if (count >= 0) return count;
    if (Libgcc().backtrace == nullptr ||
        (stop.crossed_signal_frame && !LibgccIsSignalSafe())) {
      *truncated = true;
      return stop.frames_written;
    }
  }
  // skip + 1: CaptureStack's own frame. Not a tail call (that would remove
  // this frame from the stack and shift the skip by one).
  const int count =
      CaptureStackWithLibgcc(frames, max_frames, skip + 1, truncated);
  asm volatile("" ::: "memory");
  return count;
}

}  // namespace emitter
}  // namespace ringprof
