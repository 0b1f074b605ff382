// AArch64 (arch.h has the contract). Included through arch.h only.
#ifndef RINGPROF_EMITTER_ARCH_AARCH64_H_
#define RINGPROF_EMITTER_ARCH_AARCH64_H_

#include <elf.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ucontext.h>

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace emitter {
namespace arch {

// ---------------------------------------------------------------------------
// Signal context. The kernel (and qemu-user, and musl's and glibc's
// expectations) lays the signal frame out as struct rt_sigframe {siginfo_t;
// ucontext_t;} at the handler's stack pointer, then a frame record {the
// interrupted x29, the interrupted x30} that the handler's x29 points at;
// the handler returns to the rt_sigreturn trampoline (the vDSO's
// __kernel_rt_sigreturn, musl's __restore_rt, or a page qemu-user maps).
// glibc's and musl's ucontext_t both have the kernel's layout.

inline constexpr uint64_t kSignalContextOffset = sizeof(siginfo_t);
static_assert(sizeof(siginfo_t) == 128, "the kernel's siginfo is 128 bytes");
inline constexpr int64_t kContextPcOffset =
    offsetof(ucontext_t, uc_mcontext.pc);
inline constexpr int64_t kContextSpOffset =
    offsetof(ucontext_t, uc_mcontext.sp);
inline constexpr int64_t kContextFpOffset =
    offsetof(ucontext_t, uc_mcontext.regs) + 8 * 29;
inline constexpr int64_t kContextLrOffset =
    offsetof(ucontext_t, uc_mcontext.regs) + 8 * 30;

// "mov x8, #139; svc #0" (rt_sigreturn), little-endian.
inline constexpr uint8_t kSigreturnCode[] = {0x68, 0x11, 0x80, 0xd2,
                                             0x01, 0x00, 0x00, 0xd4};

inline Registers FromSignalContext(const void* ucontext) {
  const auto& context = static_cast<const ucontext_t*>(ucontext)->uc_mcontext;
  return {context.pc, context.sp, context.regs[29], context.regs[30]};
}

// ---------------------------------------------------------------------------
// DWARF CFI (DWARF for the Arm 64-bit Architecture, AADWARF64): x29 (the
// frame pointer) 29, x30 (the link register, also the return-address
// column) 30, sp 31. A function that has not saved x30 (a leaf, or one
// still in its prologue) has its return address in x30: the column's
// "same value" rule, the default in GCC's and LLVM's CIEs.

inline constexpr uint64_t kDwarfFp = 29;
inline constexpr uint64_t kDwarfSp = 31;
inline constexpr uint64_t kDwarfReturnAddress = 30;
inline constexpr bool kReturnAddressInRegister = true;
inline constexpr int64_t kMinCfaOffset = 0;

// DW_CFA_AARCH64_negate_ra_state: from here on, the saved return address is
// (or is no longer) signed with pointer authentication (PAC; code built with
// -mbranch-protection=pac-ret or =standard: paciasp ... autiasp). The
// walker strips every return address it reads anyway, so it only has to
// accept the opcode.
inline constexpr uint8_t kNegateRaStateOpcode = 0x2d;

// A signed return address carries its PAC in the bits above the virtual
// address; the function that signed it authenticates it before `ret`, but a
// stack walker only reads it and must drop the PAC. XPACLRI ("hint #7")
// strips x30 the way the processor itself interprets the address: the PAC
// field's position follows the configured address size and whether the top
// byte is ignored (both the kernel's choice), so no mask has to be guessed
// (a mask with 48 address bits would cut a 52-bit address), and on cores
// without pointer authentication it is a NOP in the hint space: there
// nothing is signed. One instruction, no memory access.
inline uint64_t StripReturnAddress(uint64_t address) {
  register uint64_t x30 __asm__("x30") = address;
  __asm__("hint #7" : "+r"(x30));  // xpaclri
  return x30;
}

// ---------------------------------------------------------------------------
// Frames: a function that keeps a frame record (AAPCS64 6.2.3; GCC and
// LLVM do by default on Linux, also musl's libc) stores {x29, x30} at the
// bottom of its frame and points x29 there: [x29] = the caller's x29,
// [x29 + 8] = the return address. `bl` leaves the return address in x30,
// not on the stack.

inline constexpr int64_t kFrameRecordFpOffset = 0;
inline constexpr int64_t kFrameRecordRaOffset = 8;
inline constexpr bool kCallPushesReturnAddress = false;

// The handler's x29 points at the frame record the kernel pushed with the
// signal frame: a trampoline outside every object (qemu-user's) is
// recognised by it (cfi_unwinder.cc).
inline constexpr bool kSignalFrameHasFrameRecord = true;

inline constexpr int kMaxCallBytes = 4;

// Whether the instruction before `address` is a branch with link: bl,
// blr, and the pointer-authenticating blraa/blrab, blraaz/blrabz.
inline bool FollowsCall(uint64_t address) {
  uint32_t insn;
  __builtin_memcpy(&insn, reinterpret_cast<const void*>(address - 4), 4);
  return (insn & 0xfc000000u) == 0x94000000u ||  // bl
         (insn & 0xfffffc1fu) == 0xd63f0000u ||  // blr
         (insn & 0xfffff81fu) == 0xd63f081fu ||  // blraaz, blrabz
         (insn & 0xfffff800u) == 0xd73f0800u;    // blraa, blrab
}

// ---------------------------------------------------------------------------
// The generic timer's virtual count (CNTVCT_EL0): what the vDSO's
// clock_gettime reads itself. Linux lets user code read it (CNTKCTL_EL1.
// EL0VCTEN), and traps and emulates the read where an erratum makes it
// unreliable; the ISB keeps the read from being taken early, as the vDSO
// does.
inline uint64_t ReadCycleCounter() {
  uint64_t value;
  __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(value)::"memory");
  return value;
}

inline bool CycleCounterUsable() { return true; }

// A vDSO clock_gettime is a counter read and a few multiplications; a system
// call costs several hundred nanoseconds (qemu-user 7.2, which has no vDSO
// for aarch64: 770-1030 ns; its counter read 125-180 ns).
inline constexpr uint64_t kSystemCallClockReadNs = 300;

// libgcc's unwinder is kept out of signal handlers. Its AArch64 fallback
// for frames without unwind tables reads the instruction at the return
// address it computed without checking that the address is mapped: under
// qemu-user, unwinding from a CPU-timer handler crashed there (a garbage
// return address, in ~1 of 30 runs of the timer at 1000 Hz). A CPU sample
// the CFI walker cannot finish keeps the frames it has, flagged truncated
// (~0.3% of samples under qemu: _dl_runtime_resolve's CFI, which saves the
// return address above the CFA).
inline constexpr bool kLibgccInSignalHandlers = false;

// ---------------------------------------------------------------------------
// The dynamic loader.

// The version of glibc's symbols as old as the port: AArch64's first glibc
// (2.17).
inline constexpr char kGlibcFirstVersion[] = "GLIBC_2.17";

inline constexpr uint32_t kJumpSlotRelocation = R_AARCH64_JUMP_SLOT;
inline constexpr uint32_t kGlobDatRelocation = R_AARCH64_GLOB_DAT;

// glibc passes AArch64 resolvers the hardware capabilities with
// _IFUNC_ARG_HWCAP set and its __ifunc_arg_t (the loader's
// elf_ifunc_invoke); resolvers of glibc < 2.30 read the first argument
// only.
struct IfuncArg {
  uint64_t size;
  uint64_t hwcap;
  uint64_t hwcap2;
};

inline void* CallIfuncResolver(uint64_t resolver) {
  constexpr uint64_t kIfuncArgHwcap = uint64_t{1} << 62;
  const IfuncArg arg = {sizeof(IfuncArg), getauxval(AT_HWCAP),
                        getauxval(AT_HWCAP2)};
  return reinterpret_cast<void* (*)(uint64_t, const IfuncArg*)>(resolver)(
      arg.hwcap | kIfuncArgHwcap, &arg);
}

}  // namespace arch
}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ARCH_AARCH64_H_
