// A fast stack walker: DWARF CFI rules, interpreted once per return address
// and cached, then applied with a few loads per frame. The registers and
// encodings it needs are the architecture's (arch/arch.h); the walk is the
// same on every architecture.
//
// Why: libgcc's _Unwind_Backtrace re-locates and re-interprets the CFI of
// every frame on every walk (~120-160 ns per frame on x86-64). Most frames
// of compiled code obey a rule of one shape: "CFA = sp + k" or "CFA = fp +
// k", the return address saved at CFA - 8n (or, on AArch64, still in the
// link register), the frame pointer untouched or saved at CFA - 8m; this
// walker knows exactly those and nothing else. Return addresses signed by
// pointer authentication (AArch64) are stripped as they are read.
//
// Contract:
//  - Also steps through the kernel's signal frame into the interrupted
//    frame, whose registers are in the pushed ucontext_t: a trampoline
//    recognised by its 'S' FDE and its rt_sigreturn instructions (glibc's
//    __restore_rt on x86-64, the vDSO's __kernel_rt_sigreturn on AArch64),
//    by its bytes in an object without unwind tables (musl's __restore_rt),
//    or, on AArch64, outside every object (qemu-user's trampoline page) by
//    the frame record the kernel pushes with the signal frame.
//  - On musl only (FramePointerFallback(), libc_features.h), a frame in
//    code without unwind tables (musl's libc) is left by finding the return
//    address it was called from: on x86-64 by scanning up to 256 stack
//    words for it (just past a call instruction in code with unwind tables,
//    whose frame unwinds one step further), with rbp recovered from the
//    words below it when an rbp-based frame needs it; on AArch64 from the
//    link register (the interrupted frame of a leaf) or the x29 frame
//    record (musl's libc keeps them), the caller's CFA then from its own
//    frame record. musl's untabled __restore_rt is recognised by its bytes.
//    Reads stay within the stack bounds and, for code bytes, within the
//    page of a return address FindObject knows.
//  - Returns -1 whenever a frame needs anything else (CFA expressions,
//    stack realignment, 64-bit DWARF, unknown augmentations, a stack
//    address outside [stack_low, stack_high]): the caller then uses
//    libgcc's unwinder for the whole stack, so results never depend on
//    which walker ran (stack_capture_test compares the two).
//  - Reads only: the caller's stack between the current frame and
//    stack_high, and the .eh_frame_hdr/.eh_frame of objects that
//    FindObject (libc_features.h: _dl_find_object, or on older glibc the
//    objects loaded at start) reports loaded. Lock-free, allocation-free and
//    async-signal-safe; the rule cache is a fixed 64 KiB table of
//    self-validating 64-bit words shared by all threads.
#ifndef RINGPROF_EMITTER_CFI_UNWINDER_H_
#define RINGPROF_EMITTER_CFI_UNWINDER_H_

#include <cstdint>
#include <cstring>

#include "emitter/arch/arch.h"

namespace ringprof {
namespace emitter {

// The starting point: the registers of the frame whose return address is
// `pc` (i.e. of the function that `pc` returns into): its stack pointer and
// frame pointer values.
struct UnwindStart {
  uint64_t pc;
  uint64_t sp;
  uint64_t fp;
};

// The start of a walk from the caller of the function whose frame record
// `frame_address` points at (__builtin_frame_address(0), in a function
// compiled with frame pointers) and whose CFA is `cfa`
// (__builtin_dwarf_cfa()).
inline UnwindStart CallerOf(const void* frame_address, const void* cfa) {
  const auto* record = static_cast<const char*>(frame_address);
  UnwindStart start;
  memcpy(&start.pc, record + arch::kFrameRecordRaOffset, 8);
  memcpy(&start.fp, record + arch::kFrameRecordFpOffset, 8);
  start.pc = arch::StripReturnAddress(start.pc);
  start.sp = reinterpret_cast<uintptr_t>(cfa);
  return start;
}

// Where a walk that returned -1 stopped.
struct CfiWalkStop {
  // Frames written before the step that failed (innermost first, correct).
  int frames_written = 0;
  // Whether the walk had stepped through a signal frame: the caller runs
  // in a signal handler.
  bool crossed_signal_frame = false;
};

// Walks from `start`, writing return addresses (start.pc first) to frames
// after skipping `skip` of them. Returns the count, or -1 (see above; `stop`,
// when given, then says where).
int CfiWalk(const UnwindStart& start, uint64_t* frames, int max_frames,
            int skip, bool* truncated, uint64_t stack_low, uint64_t stack_high,
            CfiWalkStop* stop = nullptr);

// Forgets every cached rule: called when an object was unloaded, since
// another one may be loaded at the same addresses. (Until then, the rules of
// the old object could make a walk produce wrong return addresses; reads
// stay within the thread's stack either way.)
void FlushUnwindRules();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_CFI_UNWINDER_H_
