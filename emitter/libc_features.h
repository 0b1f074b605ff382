// What the running glibc (and libgcc_s) offers beyond glibc 2.17, looked up
// once when the library loads, so that libringprof.so imports nothing newer
// (glibc_compat.h) and loads everywhere, degrading where a function is
// missing:
//
//  - _dl_find_object (glibc >= 2.35): lock-free, async-signal-safe lookup
//    of the object containing an address. Without it, FindObject answers
//    from a table of the objects loaded before the emitter started (filled
//    once, at load; an entry goes when a rescan finds its object gone:
//    ForgetUnloadedStartupObjects), and nothing else:
//    objects loaded later are found by the module map's rescans
//    (module_map.h), and stacks through them by libgcc's unwinder, which is
//    then kept out of signal handlers (LibgccIsSignalSafe()).
//  - strerrorname_np (glibc >= 2.32): errno names in messages; without it
//    the number is printed.
//  - libgcc_s.so.1's unwinder (_Unwind_Backtrace), looked up at load rather
//    than linked, so that an image without libgcc_s still starts: used when
//    the process has it loaded already, opened only when glibc lacks
//    _dl_find_object; without it, stacks the CFI walker cannot follow are
//    cut short.
//
// Thread-safety: everything is resolved by a constructor before any other
// emitter code runs; afterwards every function here is lock-free,
// allocation-free and async-signal-safe, except the ones that say
// otherwise.
#ifndef RINGPROF_EMITTER_LIBC_FEATURES_H_
#define RINGPROF_EMITTER_LIBC_FEATURES_H_

#include <dlfcn.h>
#include <stdint.h>
#include <unwind.h>

namespace ringprof {
namespace emitter {

// _dl_find_object's contract (0 and *result filled, or -1). Without
// _dl_find_object, only dlfo_map_start, dlfo_map_end and dlfo_eh_frame are
// filled (dlfo_link_map is null), and only for objects loaded at start.
int FindObject(const void* address, dl_find_object* result);

// True when FindObject is glibc's _dl_find_object.
bool HaveDlFindObject();

// Without _dl_find_object: drops from FindObject's table the objects
// dl_iterate_phdr no longer lists (an object dlopen'ed before the emitter
// started, dlclose'd since), so that their unmapped .eh_frame_hdr is never
// read. Takes the loader's lock: from an allocation's sampled path or at
// start, never in a signal handler; one caller at a time. True when it
// dropped something (cached unwind rules may be stale).
bool ForgetUnloadedStartupObjects();

// strerrorname_np(error), or nullptr (unknown error, or no such function).
const char* ErrnoName(int error);

// libgcc_s's unwinder; every pointer null when libgcc_s.so.1 was not loaded
// (or not found).
struct LibgccUnwinder {
  _Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void*);
  _Unwind_Ptr (*get_ip)(struct _Unwind_Context*);
  _Unwind_Word (*get_cfa)(struct _Unwind_Context*);
};
const LibgccUnwinder& Libgcc();

// The top of the initial thread's stack for the unwinder's bounds: just
// above glibc's __libc_stack_end (looked up at load, not imported), or on
// musl, which has none, above the environment vector; 0 when unknown.
// Valid once the library's constructors ran; for the initial thread only.
uintptr_t InitialStackTop();

// Whether libgcc's unwinder may run in a signal handler. It finds objects
// with _dl_find_object when built for glibc >= 2.35 (GCC >= 12), and with
// dl_iterate_phdr (the loader's lock; a static cache it updates unlocked)
// before: that is safe in malloc, not in a handler that may have
// interrupted it. Never on AArch64 (arch::kLibgccInSignalHandlers).
bool LibgccIsSignalSafe();

// glibc's version ("2.36"), or null when the C library is not glibc
// (musl).
const char* GlibcVersion();

// GlibcVersion() != nullptr, without calling into libc.
bool OnGlibc();

// True on musl (not glibc): the CFI walker continues through code without
// unwind tables by finding the return address it was called from
// (cfi_unwinder.cc, ScanForReturnAddress).
bool FramePointerFallback();

// True when libgcc_s.so.1 was looked for (opened on purpose) and is
// missing, so stacks the CFI walker cannot follow are cut short.
bool LibgccMissing();

// Tests only, with no other thread running: `false` makes the emitter
// behave as on a glibc without _dl_find_object (FindObject answers from the
// start-up table, filled now); `true` goes back.
void UseDlFindObjectForTest(bool use);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_LIBC_FEATURES_H_
