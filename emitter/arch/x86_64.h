// x86-64 (arch.h has the contract). Included through arch.h only.
#ifndef RINGPROF_EMITTER_ARCH_X86_64_H_
#define RINGPROF_EMITTER_ARCH_X86_64_H_

#include <cpuid.h>
#include <elf.h>
#include <sys/prctl.h>
#include <sys/ucontext.h>
#include <x86intrin.h>

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace emitter {
namespace arch {

// ---------------------------------------------------------------------------
// Signal context. The kernel's rt_sigframe starts with the return address
// (the trampoline, glibc's and musl's __restore_rt), popped by the handler's
// return, so the ucontext_t is at the trampoline frame's stack pointer.

inline constexpr uint64_t kSignalContextOffset = 0;
inline constexpr int64_t kContextPcOffset =
    offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RIP;
inline constexpr int64_t kContextSpOffset =
    offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RSP;
inline constexpr int64_t kContextFpOffset =
    offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RBP;
inline constexpr int64_t kContextLrOffset = -1;

// "mov $15, %rax; syscall" (rt_sigreturn).
inline constexpr uint8_t kSigreturnCode[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                             0x00, 0x00, 0x0f, 0x05};

inline Registers FromSignalContext(const void* ucontext) {
  const auto& gregs =
      static_cast<const ucontext_t*>(ucontext)->uc_mcontext.gregs;
  return {static_cast<uint64_t>(gregs[REG_RIP]),
          static_cast<uint64_t>(gregs[REG_RSP]),
          static_cast<uint64_t>(gregs[REG_RBP]), 0};
}

// ---------------------------------------------------------------------------
// DWARF CFI (System V AMD64 psABI, figure 3.36): rbp 6, rsp 7, the return
// address column 16. The return address is always on the stack, at CFA - 8.

inline constexpr uint64_t kDwarfFp = 6;
inline constexpr uint64_t kDwarfSp = 7;
inline constexpr uint64_t kDwarfReturnAddress = 16;
inline constexpr bool kReturnAddressInRegister = false;
inline constexpr int64_t kMinCfaOffset = 8;
inline constexpr uint8_t kNegateRaStateOpcode = 0;

inline uint64_t StripReturnAddress(uint64_t address) { return address; }

// ---------------------------------------------------------------------------
// Frames: `push %rbp; mov %rsp, %rbp` leaves [rbp] = the caller's rbp and
// [rbp + 8] = the return address `call` pushed.

inline constexpr int64_t kFrameRecordFpOffset = 0;
inline constexpr int64_t kFrameRecordRaOffset = 8;
inline constexpr bool kCallPushesReturnAddress = true;

// The kernel's signal frame has no frame record.
inline constexpr bool kSignalFrameHasFrameRecord = false;

inline constexpr int kMaxCallBytes = 7;

// Whether the bytes before `address` end in a call instruction: call rel32
// (e8), call through a register or memory operand (ff /2 in its 2, 3, 6
// and 7 byte forms).
inline bool FollowsCall(uint64_t address) {
  const auto* code = reinterpret_cast<const uint8_t*>(address);
  if (code[-5] == 0xe8) return true;
  constexpr int kLengths[] = {2, 3, 6, 7};
  for (int length : kLengths) {
    if (code[-length] == 0xff && ((code[1 - length] >> 3) & 7) == 2) {
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// The TSC.

inline uint64_t ReadCycleCounter() { return __rdtsc(); }

// Whether the TSC ticks at a constant rate in every power state (CPUID
// 0x80000007 EDX bit 8) and user code may read it (no PR_TSC_SIGSEGV).
inline bool CycleCounterUsable() {
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((edx & (1u << 8)) == 0) return false;
  int tsc_state = 0;
  if (prctl(PR_GET_TSC, &tsc_state, 0, 0, 0) == 0 &&
      tsc_state != PR_TSC_ENABLE) {
    return false;
  }
  return true;
}

// A vDSO clock_gettime costs ~20-40 ns; in gVisor, where it may be a system
// call into the sandbox's kernel, microseconds.
inline constexpr uint64_t kSystemCallClockReadNs = 1000;

// libgcc's unwinder may run in a signal handler (where libc_features.h
// says it finds objects without locks).
inline constexpr bool kLibgccInSignalHandlers = true;

// ---------------------------------------------------------------------------
// The dynamic loader.

// The version of glibc's symbols as old as the port: x86-64's first glibc
// (2.2.5).
inline constexpr char kGlibcFirstVersion[] = "GLIBC_2.2.5";

inline constexpr uint32_t kJumpSlotRelocation = R_X86_64_JUMP_SLOT;
inline constexpr uint32_t kGlobDatRelocation = R_X86_64_GLOB_DAT;

// x86-64 resolvers take no arguments (the loader's elf_ifunc_invoke).
inline void* CallIfuncResolver(uint64_t resolver) {
  return reinterpret_cast<void* (*)()>(resolver)();
}

}  // namespace arch
}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ARCH_X86_64_H_
