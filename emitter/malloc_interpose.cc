// The interposed C allocation API: each entry point forwards to the next
// definition in lookup order (next_allocator.h: glibc's, or jemalloc's /
// tcmalloc's) and reports successful allocations to the sampler.
//
// Every entry point that takes a pointer forwards it to the same allocator
// that made it: the whole family (malloc_usable_size, the jemalloc extension
// API, free_sized, ...) is interposed so that the program never reaches a
// different allocator than the one the emitter allocated from. Results,
// errno, alignment and failure rules are the next allocator's own.
//
// Before the table is resolved (the first call of the process), allocations
// made by dlsym itself come from the bootstrap arena; free-like entry points
// drop arena blocks. C++ operator new/delete: new_interpose.cc.
#include <errno.h>

#include <cstddef>
#include <cstring>

#include "emitter/alloc_sampler.h"
#include "emitter/forward.h"
#include "emitter/free_tracker.h"
#include "emitter/next_allocator.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace ringprof {
namespace emitter {

// forward.h's out-of-line paths.

// The table's malloc until resolved: the resolved allocator's, or the
// bootstrap arena while this thread resolves.
void* MallocUnready(size_t size) {
  if (!ResolveNextAllocator()) return BootstrapAllocate(size, 16);
  return g_next.malloc(size);
}

void* MallocSampled(size_t size) {
  return AllocateAndSample(size, [size] { return g_next.malloc(size); });
}

void* AlignedAllocSampled(size_t alignment, size_t size) {
  return AllocateAndSample(size, [alignment, size] {
    return g_next.aligned_alloc(alignment, size);
  });
}

// The table's free until resolved: while this thread resolves, nothing the
// next allocator made can exist yet.
void FreeUnready(void* ptr) {
  if (!ResolveNextAllocator()) return;
  g_next.free(ptr);
}

// The table's calloc until resolved. The arena is static storage that is
// never reused: already zero.
void* CallocUnready(size_t count, size_t size) {
  if (ResolveNextAllocator()) return g_next.calloc(count, size);
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return BootstrapAllocate(bytes, 16);
}

// The table's realloc until resolved. realloc's interposer has already
// moved bootstrap blocks; no other block can exist before the table does.
void* ReallocUnready(void* ptr, size_t size) {
  if (ResolveNextAllocator()) return g_next.realloc(ptr, size);
  return BootstrapAllocate(size, 16);
}

// Reported first, so that its address cannot be reused and sampled again
// before the free is recorded.
__attribute__((noinline)) void FreeTracked(void* ptr) {
  if (InBootstrapArena(ptr)) return;  // never returned
  OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(ptr));
  g_next.free(ptr);
}

}  // namespace emitter
}  // namespace ringprof

namespace {

using ringprof::emitter::AfterRealloc;
using ringprof::emitter::AllocateAndSample;
using ringprof::emitter::AllocationNeedsSample;
using ringprof::emitter::BeforeRealloc;
using ringprof::emitter::BootstrapAllocate;
using ringprof::emitter::BootstrapBlockSize;
using ringprof::emitter::FreeNeedsTracking;
using ringprof::emitter::FreeTracked;
using ringprof::emitter::g_next;
using ringprof::emitter::InBootstrapArena;
using ringprof::emitter::NextReady;
using ringprof::emitter::PendingRealloc;
using ringprof::emitter::SampleAllocation;
using ringprof::emitter::SampledAllocationFailed;

// The free side of the less common free-like entry points: true when the
// caller must forward `ptr`, after reporting it if it may be a tracked
// sample.
__attribute__((always_inline)) inline bool PrepareFree(void* ptr) {
  if (__builtin_expect(InBootstrapArena(ptr), 0) || !NextReady()) return false;
  if (FreeNeedsTracking(ptr)) {
    ringprof::emitter::OnFreeOfPossiblySampled(
        reinterpret_cast<uintptr_t>(ptr));
  }
  return true;
}

// A resize that may move or free a sampled block (realloc, rallocx): the
// block is taken out of the live set first and put back if the resize
// failed (it then lives on); `resize` returns the result.
template <typename Resize>
__attribute__((noinline)) void* ResizeSampled(void* ptr, bool frees,
                                              Resize resize) {
  const PendingRealloc pending =
      BeforeRealloc(reinterpret_cast<uintptr_t>(ptr));
  void* result = resize();
  AfterRealloc(pending, result != nullptr || frees);
  return result;
}

__attribute__((noinline)) int PosixMemalignSampled(void** result,
                                                   size_t alignment,
                                                   size_t size) {
  const int error = g_next.posix_memalign(result, alignment, size);
  if (error == 0 && *result != nullptr) {
    SampleAllocation(*result, size);
  } else {
    SampledAllocationFailed(size);
  }
  return error;
}

// realloc of a bootstrap block: a fresh block from `allocate`, the old
// contents copied; the arena block is never reused.
template <typename Allocate>
void* MoveOutOfArena(void* ptr, size_t size, Allocate allocate) {
  if (size == 0) return nullptr;
  void* moved = allocate(size);
  if (moved == nullptr) return nullptr;
  const size_t old_size = BootstrapBlockSize(ptr);
  memcpy(moved, ptr, old_size < size ? old_size : size);
  return moved;
}

__attribute__((noinline)) void* CallocSampled(size_t count, size_t size) {
  return AllocateAndSample(
      count * size, [count, size] { return g_next.calloc(count, size); });
}

__attribute__((noinline)) void* ReallocSampled(void* ptr, size_t size) {
  return AllocateAndSample(size,
                           [ptr, size] { return g_next.realloc(ptr, size); });
}

// realloc as it is for a block that is not a tracked sample.
__attribute__((always_inline)) inline void* ForwardRealloc(void* ptr,
                                                           size_t size) {
  // realloc(p, 0) frees p: not an allocation.
  if (size == 0 || __builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.realloc(ptr, size);
  }
  return ReallocSampled(ptr, size);
}

// realloc of a block the filter says may be a tracked sample (reported
// freed only if realloc succeeds or, with size 0, frees it) or a bootstrap
// block.
__attribute__((noinline)) void* ReallocTracked(void* ptr, size_t size) {
  if (InBootstrapArena(ptr)) {
    return MoveOutOfArena(ptr, size, [](size_t n) {
      return NextReady() ? g_next.malloc(n) : BootstrapAllocate(n, 16);
    });
  }
  return ResizeSampled(ptr, size == 0,
                       [ptr, size] { return ForwardRealloc(ptr, size); });
}

}  // namespace

// Each entry point: the countdown first, so that the common case ends in a
// tail call to the next allocator (no frame, no work after the call).
RINGPROF_EXPORT void* malloc(size_t size) {
  return ringprof::emitter::ForwardMalloc(size);
}

RINGPROF_EXPORT void free(void* ptr) { ringprof::emitter::ForwardFree(ptr); }

RINGPROF_EXPORT void* calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes) ||
      __builtin_expect(!AllocationNeedsSample(bytes), 1)) {
    return g_next.calloc(count, size);
  }
  return CallocSampled(count, size);
}

RINGPROF_EXPORT void* realloc(void* ptr, size_t size) {
  // A sampled old block or a bootstrap block (their filter cells are set).
  if (FreeNeedsTracking(ptr)) return ReallocTracked(ptr, size);
  return ForwardRealloc(ptr, size);
}

RINGPROF_EXPORT void* reallocarray(void* ptr, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(ptr, bytes);
}

RINGPROF_EXPORT int posix_memalign(void** result, size_t alignment,
                                   size_t size) {
  if (__builtin_expect(!NextReady(), 0)) {
    void* ptr = BootstrapAllocate(size, alignment);
    if (ptr == nullptr) return ENOMEM;
    *result = ptr;
    return 0;
  }
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.posix_memalign(result, alignment, size);
  }
  return PosixMemalignSampled(result, alignment, size);
}

RINGPROF_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (__builtin_expect(!NextReady(), 0)) {
    return BootstrapAllocate(size, alignment);
  }
  return ringprof::emitter::ForwardAlignedAllocReady(alignment, size);
}

RINGPROF_EXPORT void* memalign(size_t alignment, size_t size) {
  if (__builtin_expect(!NextReady(), 0)) {
    return BootstrapAllocate(size, alignment);
  }
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.memalign(alignment, size);
  }
  return AllocateAndSample(
      size, [alignment, size] { return g_next.memalign(alignment, size); });
}

RINGPROF_EXPORT void* valloc(size_t size) {
  if (__builtin_expect(!NextReady(), 0)) return BootstrapAllocate(size, 4096);
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.valloc(size);
  }
  return AllocateAndSample(size, [size] { return g_next.valloc(size); });
}

RINGPROF_EXPORT void* pvalloc(size_t size) {
  if (__builtin_expect(!NextReady(), 0)) return BootstrapAllocate(size, 4096);
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.pvalloc(size);
  }
  return AllocateAndSample(size, [size] { return g_next.pvalloc(size); });
}

RINGPROF_EXPORT size_t malloc_usable_size(void* ptr) {
  if (__builtin_expect(InBootstrapArena(ptr), 0)) {
    return BootstrapBlockSize(ptr);
  }
  if (!NextReady()) return 0;
  return g_next.malloc_usable_size(ptr);
}

// C23's sized frees.
RINGPROF_EXPORT void free_sized(void* ptr, size_t size) {
  if (PrepareFree(ptr)) g_next.free_sized(ptr, size);
}

RINGPROF_EXPORT void free_aligned_sized(void* ptr, size_t alignment,
                                        size_t size) {
  if (PrepareFree(ptr)) g_next.free_aligned_sized(ptr, alignment, size);
}

// jemalloc's extension API (forwarded to jemalloc when it is the next
// allocator, emulated on the next allocator otherwise).
RINGPROF_EXPORT void* mallocx(size_t size, int flags) {
  if (__builtin_expect(!NextReady(), 0)) return BootstrapAllocate(size, 16);
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return g_next.mallocx(size, flags);
  }
  return AllocateAndSample(
      size, [size, flags] { return g_next.mallocx(size, flags); });
}

RINGPROF_EXPORT void* rallocx(void* ptr, size_t size, int flags) {
  if (__builtin_expect(InBootstrapArena(ptr), 0)) {
    return MoveOutOfArena(ptr, size, [flags](size_t n) {
      return NextReady() ? g_next.mallocx(n, flags) : BootstrapAllocate(n, 16);
    });
  }
  if (!NextReady()) return nullptr;
  auto resize = [ptr, size, flags]() -> void* {
    if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
      return g_next.rallocx(ptr, size, flags);
    }
    return AllocateAndSample(
        size, [ptr, size, flags] { return g_next.rallocx(ptr, size, flags); });
  };
  if (FreeNeedsTracking(ptr)) return ResizeSampled(ptr, false, resize);
  return resize();
}

RINGPROF_EXPORT size_t xallocx(void* ptr, size_t size, size_t extra,
                               int flags) {
  // Resizes in place only: the address stays, so nothing to report.
  if (__builtin_expect(InBootstrapArena(ptr), 0)) {
    return BootstrapBlockSize(ptr);
  }
  if (!NextReady()) return 0;
  return g_next.xallocx(ptr, size, extra, flags);
}

RINGPROF_EXPORT size_t sallocx(const void* ptr, int flags) {
  if (__builtin_expect(InBootstrapArena(ptr), 0)) {
    return BootstrapBlockSize(ptr);
  }
  if (!NextReady()) return 0;
  return g_next.sallocx(ptr, flags);
}

RINGPROF_EXPORT void dallocx(void* ptr, int flags) {
  if (PrepareFree(ptr)) g_next.dallocx(ptr, flags);
}

RINGPROF_EXPORT void sdallocx(void* ptr, size_t size, int flags) {
  if (PrepareFree(ptr)) g_next.sdallocx(ptr, size, flags);
}

RINGPROF_EXPORT size_t nallocx(size_t size, int flags) {
  if (!NextReady()) return size;
  return g_next.nallocx(size, flags);
}
