// Everything the emitter knows about the processor it runs on, behind one
// interface: one header per architecture (x86_64.h, aarch64.h), chosen
// here. A new architecture is one more such header; nothing outside
// emitter/arch/ tests for an architecture.
//
// Each header defines, in namespace ringprof::emitter::arch:
//
//  - the registers of an interrupted thread, from its signal context:
//      Registers FromSignalContext(const void* ucontext);
//    and where the kernel's signal frame keeps them (the unwinder reads
//    them from the stack): kSignalContextOffset (the ucontext_t's offset
//    from the stack pointer at the signal trampoline's return address),
//    kContextPcOffset, kContextSpOffset, kContextFpOffset,
//    kContextLrOffset (-1: no link register), and kSigreturnCode, the
//    bytes of the rt_sigreturn trampoline at its return address;
//  - the DWARF view of the registers the CFI walker tracks (cfi_unwinder.cc):
//    kDwarfSp, kDwarfFp, kDwarfReturnAddress (the return-address column),
//    kReturnAddressInRegister (a frame may keep its return address in the
//    link register: "same value" for that column), kMinCfaOffset (the
//    smallest CFA offset from the stack pointer, at a function's entry),
//    kNegateRaStateOpcode (the DW_CFA_* opcode that toggles return-address
//    signing, or 0), and StripReturnAddress() (a return address as the
//    frame saved it -> the address the function returns to);
//  - the frame record a frame pointer points at: kFrameRecordFpOffset,
//    kFrameRecordRaOffset (from the frame pointer), and
//    kCallPushesReturnAddress (the call instruction leaves the return
//    address at the callee's CFA - 8, i.e. the caller's stack pointer is
//    just above it: x86-64; else the callee saves it where it likes);
//  - FollowsCall(address): whether the instruction before `address` is a
//    call (address - kMaxCallBytes must be readable);
//  - the cycle counter sample timestamps may be extrapolated from
//    (sample_clock.cc): ReadCycleCounter(), CycleCounterUsable(), and
//    kSystemCallClockReadNs, the clock_gettime cost above which a read
//    left user space;
//  - kLibgccInSignalHandlers: whether libgcc's unwinder may finish a stack
//    in a signal handler (libc_features.h, LibgccIsSignalSafe);
//  - what the dynamic loader does that the emitter repeats: ElfRelocation
//    types of GOT slots (kJumpSlotRelocation, kGlobDatRelocation) and
//    CallIfuncResolver(); kGlibcFirstVersion, the symbol version of what
//    glibc has had since its port to the architecture.
//
// Every function here is async-signal-safe, lock-free and allocation-free.
#ifndef RINGPROF_EMITTER_ARCH_ARCH_H_
#define RINGPROF_EMITTER_ARCH_ARCH_H_

#include <cstdint>

namespace ringprof {
namespace emitter {
namespace arch {

// An interrupted thread's registers. lr: the link register (the return
// address of a function that has not saved it yet), 0 where there is none.
struct Registers {
  uint64_t pc;
  uint64_t sp;
  uint64_t fp;
  uint64_t lr;
};

}  // namespace arch
}  // namespace emitter
}  // namespace ringprof

#if defined(__x86_64__)
#include "emitter/arch/x86_64.h"
#elif defined(__aarch64__)
#include "emitter/arch/aarch64.h"
#else
#error "ringprof's emitter: no emitter/arch/ header for this architecture"
#endif

#endif  // RINGPROF_EMITTER_ARCH_ARCH_H_
