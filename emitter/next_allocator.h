// The allocator the emitter forwards to: whichever definition of each entry
// point comes next in the dynamic linker's lookup order after
// libringprof.so (RTLD_NEXT, looked up by loaded_symbols.h) — glibc's, or
// jemalloc's / tcmalloc's when the program links or preloads one of them after
// the emitter. Every interposed entry point forwards to the definition the
// program would have called without the emitter, so a pointer never crosses
// allocators.
//
// Contract:
//  - One table, resolved once, by the first interposed call of any thread
//    (possibly before any constructor ran, possibly from inside the dynamic
//    loader). Concurrent first calls wait for the resolving thread.
//  - Resolving allocates nothing itself, but runs foreign code (the
//    loader's dl_iterate_phdr, IFUNC resolvers): should that allocate while
//    the calling thread resolves, it is served from a small static arena
//    (BootstrapAllocate); its blocks are never returned, and every free-like
//    entry point must drop them (InBootstrapArena) instead of forwarding.
//    free itself tests that only on its slow path: each block's cell in the
//    live-set filter (live_set.h) is pinned, so its free takes that path.
//  - Entry points the next allocator lacks (jemalloc's mallocx family on
//    glibc, free_sized before glibc 2.38) are emulated on top of the next
//    allocator's malloc/memalign/realloc/free/malloc_usable_size.
//  - Everything here is allocation-free, lock-free after resolution and
//    async-signal-safe after resolution.
#ifndef RINGPROF_EMITTER_NEXT_ALLOCATOR_H_
#define RINGPROF_EMITTER_NEXT_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace emitter {

struct NextAllocator {
  // The C allocation API. Never null once resolved.
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*memalign)(size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void*);
  // C23; emulated with free when missing.
  void (*free_sized)(void*, size_t);
  void (*free_aligned_sized)(void*, size_t, size_t);
  // jemalloc's non-standard API; emulated when missing.
  void* (*mallocx)(size_t, int);
  void* (*rallocx)(void*, size_t, int);
  size_t (*xallocx)(void*, size_t, size_t, int);
  size_t (*sallocx)(const void*, int);
  void (*dallocx)(void*, int);
  void (*sdallocx)(void*, size_t, int);
  size_t (*nallocx)(size_t, int);
  // C++ operator new/delete as the next object defines them (libstdc++'s,
  // or the allocator's own), at the ABI level (std::nothrow_t& is a pointer,
  // std::align_val_t a size_t).
  void* (*new_)(size_t);                            // _Znwm
  void* (*new_array)(size_t);                       // _Znam
  void* (*new_nothrow)(size_t, const void*);        // _ZnwmRKSt9nothrow_t
  void* (*new_array_nothrow)(size_t, const void*);  // _ZnamRKSt9nothrow_t
  void* (*new_aligned)(size_t, size_t);             // _ZnwmSt11align_val_t
  void* (*new_array_aligned)(size_t, size_t);       // _ZnamSt11align_val_t
  void* (*new_aligned_nothrow)(size_t, size_t, const void*);
  void* (*new_array_aligned_nothrow)(size_t, size_t, const void*);
  void (*delete_)(void*);       // _ZdlPv
  void (*delete_array)(void*);  // _ZdaPv
  void (*delete_nothrow)(void*, const void*);
  void (*delete_array_nothrow)(void*, const void*);
  void (*delete_aligned)(void*, size_t);
  void (*delete_array_aligned)(void*, size_t);
  void (*delete_aligned_nothrow)(void*, size_t, const void*);
  void (*delete_array_aligned_nothrow)(void*, size_t, const void*);
  void (*delete_sized)(void*, size_t);        // _ZdlPvm
  void (*delete_array_sized)(void*, size_t);  // _ZdaPvm
  void (*delete_sized_aligned)(void*, size_t,
                               size_t);  // _ZdlPvmSt11align_val_t
  void (*delete_array_sized_aligned)(void*, size_t, size_t);
  // Whether the next operator new reaches the interposed malloc family
  // itself (libstdc++'s does; so does jemalloc's, through its PLT) — then
  // the allocation is sampled there — or allocates on its own (tcmalloc's),
  // so the operator new wrapper must sample it, or is the C++ runtime's,
  // which the wrappers bypass. NewMode values, for the plain and the
  // aligned variants apart (jemalloc's aligned new calls aligned_alloc
  // through its PLT, its plain new does not).
  std::atomic<int> new_mode;
  std::atomic<int> aligned_new_mode;
};

enum NewMode : int {
  kNewUnknown = 0,    // the allocator's own: to be probed on first use
  kNewViaMalloc = 1,  // reaches the interposed malloc family
  kNewOwn = 2,        // allocates without it
  // The C++ runtime's (libstdc++, libc++): new is malloc (aligned new:
  // aligned_alloc of the size rounded up to the alignment) in a
  // new-handler loop, every delete is free. The wrappers then call the
  // malloc family themselves and reach the runtime only when an
  // allocation fails (for the new-handler and bad_alloc): one hop instead
  // of up to three (libstdc++'s new[] calls new, which calls malloc, each
  // through the interposer).
  kNewRuntime = 3,
};

// Until resolved, the table's malloc, free, calloc and realloc are these
// (malloc_interpose.cc), which resolve it on the process's first call, so
// that those four interposers need no "resolved yet" test; every other
// entry is read only after NextReady().
void* MallocUnready(size_t size);
void FreeUnready(void* ptr);
void* CallocUnready(size_t count, size_t size);
void* ReallocUnready(void* ptr, size_t size);

// Declared hidden (as -fvisibility=hidden makes their definitions), so that
// the interposers address them directly: a default-visibility declaration
// costs a GOT load (which the linker relaxes to a lea) on every call.
extern NextAllocator g_next __attribute__((visibility("hidden")));
extern std::atomic<bool> g_next_ready __attribute__((visibility("hidden")));

// Resolves the table unless done; false when the calling thread is itself
// resolving (the caller must then use the bootstrap arena).
bool ResolveNextAllocator();

// True when the table may be used.
inline bool NextReady() {
  return __builtin_expect(g_next_ready.load(std::memory_order_acquire), 1) ||
         ResolveNextAllocator();
}

// (Re-)resolves the operator new/delete entries: ResolveNextAllocator does
// it once; an operator new wrapper that finds its entry null (libstdc++
// dlopen'ed after the first allocation) calls it again. Not during
// bootstrap; idempotent, racing calls store the same values.
void ResolveNextOperatorNew();

// The bootstrap arena (see above). Returns nullptr when exhausted.
void* BootstrapAllocate(size_t size, size_t alignment);
// The size requested for a bootstrap block.
size_t BootstrapBlockSize(const void* ptr);

extern unsigned char g_bootstrap_arena[] __attribute__((visibility("hidden")));
inline constexpr size_t kBootstrapArenaSize = 64 * 1024;

inline bool InBootstrapArena(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) -
             reinterpret_cast<uintptr_t>(g_bootstrap_arena) <
         kBootstrapArenaSize;
}

// With another allocator preloaded before libringprof.so (its malloc
// shadows the emitter's), takes over: every shadowed entry point of the
// table is pointed at that allocator's definition, and the GOT slots that
// bind the objects loaded so far (the program, libc, libstdc++, ...) to it
// are pointed at the emitter's (through RELRO with mprotect). Objects
// dlopen'ed later still call the allocator directly (unsampled, same
// allocator). From the library constructor only, before other threads
// allocate; true when something was taken over.
bool TakeOverShadowedAllocator();

// A description of the next allocator for the one diagnostic line the
// emitter prints when the program's malloc is not the emitter's (another
// allocator preloaded before libringprof.so): fills `path` with the object
// that provides the program's malloc and returns true in that case.
bool MallocShadowedBy(char* path, size_t path_size);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_NEXT_ALLOCATOR_H_
