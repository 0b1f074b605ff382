// The interposed malloc family: each entry point forwards to glibc's own
// implementation (__libc_malloc & co., exported by libc.so.6 for exactly
// this purpose) and reports successful allocations to the sampler.
//
// Forwarding to __libc_* instead of dlsym(RTLD_NEXT) needs no bootstrap
// (dlsym itself calls calloc) and works from the very first allocation,
// before any constructor ran. The price: the emitter always forwards to
// glibc's allocator, so it cannot be stacked on top of another preloaded
// allocator (jemalloc, tcmalloc) — see README "Limits".
//
// Semantics are glibc 2.36's, including errno and EINVAL rules:
// aligned_alloc is glibc's alias of memalign (no size/alignment check);
// posix_memalign rejects alignments that are not a power-of-two multiple of
// sizeof(void*). malloc_usable_size is not interposed: every pointer is
// glibc's own. C++ operator new/delete (all variants, aligned included) are
// libstdc++'s, which call malloc / aligned_alloc / free through the PLT, so
// they arrive here (tested by emitter_workload_test).
#include <errno.h>

#include <cstddef>

#include "emitter/alloc_sampler.h"
#include "emitter/free_tracker.h"

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
}

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ringprof::emitter::AllocationNeedsSample;
using ringprof::emitter::FreeTrackingOn;
using ringprof::emitter::OnFreeOfPossiblySampled;
using ringprof::emitter::SampleAllocation;

// The rare path of every entry point: allocate, then record on success.
// Inlined, so that the entry point itself (malloc, calloc, ...) is the
// innermost frame of the recorded stack; the compiler shrink-wraps the
// entry point's frame into this branch.
template <typename Allocate>
__attribute__((always_inline)) inline void* AllocateAndSample(
    size_t size, Allocate allocate) {
  void* ptr = allocate();
  if (ptr != nullptr) SampleAllocation(ptr, size);
  return ptr;
}

}  // namespace

// Each entry point: the countdown first, so that the common case ends in a
// tail call to glibc (no frame, no work after the call).
RINGPROF_EXPORT void* malloc(size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_malloc(size);
  }
  return AllocateAndSample(size, [size] { return __libc_malloc(size); });
}

RINGPROF_EXPORT void free(void* ptr) {
  if (__builtin_expect(FreeTrackingOn(), 0) && ptr != nullptr) {
    OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(ptr));
  }
  __libc_free(ptr);
}

RINGPROF_EXPORT void* calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes) ||
      __builtin_expect(!AllocationNeedsSample(bytes), 1)) {
    return __libc_calloc(count, size);
  }
  return AllocateAndSample(
      bytes, [count, size] { return __libc_calloc(count, size); });
}

RINGPROF_EXPORT void* realloc(void* ptr, size_t size) {
  // The old block may move or be freed: its free is reported first (if
  // realloc then fails, the block lives on unreported; rare).
  if (__builtin_expect(FreeTrackingOn(), 0) && ptr != nullptr) {
    OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(ptr));
  }
  // realloc(p, 0) frees p: not an allocation.
  if (size == 0 || __builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_realloc(ptr, size);
  }
  return AllocateAndSample(size,
                           [ptr, size] { return __libc_realloc(ptr, size); });
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
  if (alignment % sizeof(void*) != 0 || alignment == 0 ||
      ((alignment / sizeof(void*)) & (alignment / sizeof(void*) - 1)) != 0) {
    return EINVAL;
  }
  const bool sample = AllocationNeedsSample(size);
  void* ptr = __libc_memalign(alignment, size);
  if (ptr == nullptr) return ENOMEM;
  *result = ptr;
  if (__builtin_expect(sample, 0)) SampleAllocation(ptr, size);
  return 0;
}

RINGPROF_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_memalign(alignment, size);
  }
  return AllocateAndSample(
      size, [alignment, size] { return __libc_memalign(alignment, size); });
}

RINGPROF_EXPORT void* memalign(size_t alignment, size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_memalign(alignment, size);
  }
  return AllocateAndSample(
      size, [alignment, size] { return __libc_memalign(alignment, size); });
}

RINGPROF_EXPORT void* valloc(size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_valloc(size);
  }
  return AllocateAndSample(size, [size] { return __libc_valloc(size); });
}

RINGPROF_EXPORT void* pvalloc(size_t size) {
  if (__builtin_expect(!AllocationNeedsSample(size), 1)) {
    return __libc_pvalloc(size);
  }
  return AllocateAndSample(size, [size] { return __libc_pvalloc(size); });
}
