// C++ operator new/delete, every variant, forwarded to the next definition
// (next_allocator.h). libstdc++'s operator new calls malloc, where the
// allocation is sampled. jemalloc and tcmalloc define their own: jemalloc's
// still calls malloc through its PLT (reaching the emitter), tcmalloc's
// allocates on its own. Which one it is, is probed once, at the first
// operator new of an allocator's own (ProbeNewMode): the wrapper samples
// only where malloc would not, so every allocation is counted once.
// Deletes are forwarded likewise; where new allocates on its own they
// report the free first (free_tracker.h).
//
// The C++ runtime's own (libstdc++, libc++; kNewRuntime) are not called at
// all in the common case: their new is malloc in a new-handler loop and
// their delete is free, so the wrappers do that themselves (forward.h) and
// call the runtime's new only when the allocation failed, for its
// new-handler loop and bad_alloc. (libstdc++'s new[] calls new through its
// PLT, which calls malloc through its PLT: three trips through the
// interposer, and as many for delete[], for what is one malloc or free.)
//
// Definitions at the ABI level (std::nothrow_t& is a pointer,
// std::align_val_t a size_t), so that no libstdc++ header or runtime is
// needed; the exported names are the Itanium-mangled ones (libringprof.map).
// A failing operator new throws from the next definition, through the
// wrapper's frame (which has unwind tables and nothing to clean up).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "emitter/alloc_sampler.h"
#include "emitter/forward.h"
#include "emitter/free_tracker.h"
#include "emitter/next_allocator.h"
#include "emitter/thread_state.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ringprof::emitter::AllocationNeedsSample;
using ringprof::emitter::ForwardAlignedAllocReady;
using ringprof::emitter::ForwardFree;
using ringprof::emitter::ForwardMalloc;
using ringprof::emitter::FreeNeedsTracking;
using ringprof::emitter::g_next;
using ringprof::emitter::kNewOwn;
using ringprof::emitter::kNewRuntime;
using ringprof::emitter::kNewViaMalloc;
using ringprof::emitter::NextAllocator;
using ringprof::emitter::NextReady;
using ringprof::emitter::OnFreeOfPossiblySampled;
using ringprof::emitter::ResolveNextOperatorNew;
using ringprof::emitter::SamplerState;
using ringprof::emitter::tls_thread_state;

// The entry of the next allocator for `member`, resolved again if the
// library defining it was loaded after the table was made. Null only when
// no loaded object defines it (the caller then falls back to malloc/free).
template <typename Fn>
__attribute__((always_inline)) inline Fn Next(Fn NextAllocator::*member) {
  NextReady();  // only false inside dlsym's own allocations, never here
  Fn fn = g_next.*member;
  if (__builtin_expect(fn == nullptr, 0)) {
    ResolveNextOperatorNew();
    fn = g_next.*member;
  }
  return fn;
}

// Calls the next operator new (`aligned`: its aligned form) once with the
// thread's byte countdown set to a marker: if the interposed malloc family
// ran, it counted the bytes.
__attribute__((noinline)) int ProbeNewMode(bool aligned) {
  constexpr int64_t kMarker = INT64_MAX / 2;
  SamplerState& state = tls_thread_state.sampler;
  const int64_t saved = state.countdown;
  state.countdown = kMarker;
  void* probe = aligned ? g_next.new_aligned(64, 64) : g_next.new_(64);
  const int mode = state.countdown != kMarker ? kNewViaMalloc : kNewOwn;
  state.countdown = saved;
  if (aligned && g_next.delete_aligned != nullptr) {
    g_next.delete_aligned(probe, 64);
  } else if (!aligned && g_next.delete_ != nullptr) {
    g_next.delete_(probe);
  } else {
    g_next.free(probe);
  }
  (aligned ? g_next.aligned_new_mode : g_next.new_mode)
      .store(mode, std::memory_order_relaxed);
  return mode;
}

int NewMode(bool aligned) {
  const int mode = (aligned ? g_next.aligned_new_mode : g_next.new_mode)
                       .load(std::memory_order_relaxed);
  return __builtin_expect(mode != ringprof::emitter::kNewUnknown, 1)
             ? mode
             : ProbeNewMode(aligned);
}

// Counts and samples the allocation when the next operator new allocates
// on its own; `allocate` calls it.
template <typename Allocate>
__attribute__((always_inline)) inline void* NewAndSample(bool aligned,
                                                         size_t size,
                                                         Allocate allocate) {
  if (NewMode(aligned) != kNewOwn ||
      __builtin_expect(!AllocationNeedsSample(size), 1)) {
    return allocate();
  }
  return ringprof::emitter::AllocateAndSample(size, allocate);
}

__attribute__((always_inline)) inline void BeforeDelete(bool aligned,
                                                        void* ptr) {
  const int mode = (aligned ? g_next.aligned_new_mode : g_next.new_mode)
                       .load(std::memory_order_relaxed);
  if (mode != kNewViaMalloc && mode != kNewRuntime && FreeNeedsTracking(ptr)) {
    OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(ptr));
  }
}

__attribute__((always_inline)) inline bool RuntimeMode(bool aligned) {
  return __builtin_expect(
      (aligned ? g_next.aligned_new_mode : g_next.new_mode)
              .load(std::memory_order_relaxed) == kNewRuntime,
      1);
}

// What the runtime's new does, without its new-handler loop: null when the
// allocation failed (the caller then calls the runtime's new).
__attribute__((always_inline)) inline void* RuntimeNew(size_t size) {
  return ForwardMalloc(size == 0 ? 1 : size);
}
__attribute__((always_inline)) inline void* RuntimeAlignedNew(
    size_t size, size_t alignment) {
  // libstdc++ rounds the size up to a multiple of the alignment for
  // aligned_alloc; anything unusual is left to the runtime itself.
  if (__builtin_expect((alignment & (alignment - 1)) != 0 || alignment == 0 ||
                           size > SIZE_MAX - alignment,
                       0)) {
    return nullptr;
  }
  const size_t bytes =
      size == 0 ? alignment : (size + alignment - 1) & ~(alignment - 1);
  return ForwardAlignedAllocReady(alignment, bytes);
}

// No object defines operator new (none is loaded that calls it, so this is
// all but unreachable): malloc, and abort where new would throw.
void* MallocOrAbort(size_t size) {
  void* ptr = g_next.malloc(size == 0 ? 1 : size);
  if (ptr == nullptr) abort();
  return ptr;
}
void* AlignedOrAbort(size_t size, size_t alignment) {
  void* ptr = g_next.memalign(alignment, size == 0 ? 1 : size);
  if (ptr == nullptr) abort();
  return ptr;
}

}  // namespace

// Each new: the runtime's path inline, the rest out of line (the first
// call, another allocator's new, a failed allocation).
#define RINGPROF_NEW(name, member)                                         \
  namespace {                                                              \
  __attribute__((noinline)) void* name##_next(size_t size) {               \
    auto next = Next(&NextAllocator::member);                              \
    if (next == nullptr) return MallocOrAbort(size);                       \
    return NewAndSample(false, size, [next, size] { return next(size); }); \
  }                                                                        \
  }                                                                        \
  RINGPROF_EXPORT void* name(size_t size) {                                \
    if (RuntimeMode(false)) {                                              \
      void* ptr = RuntimeNew(size);                                        \
      if (__builtin_expect(ptr != nullptr, 1)) return ptr;                 \
    }                                                                      \
    return name##_next(size);                                              \
  }
#define RINGPROF_NEW_NOTHROW(name, member)                                    \
  namespace {                                                                 \
  __attribute__((noinline)) void* name##_next(size_t size, const void* tag) { \
    auto next = Next(&NextAllocator::member);                                 \
    if (next == nullptr) return g_next.malloc(size == 0 ? 1 : size);          \
    return NewAndSample(false, size,                                          \
                        [next, size, tag] { return next(size, tag); });       \
  }                                                                           \
  }                                                                           \
  RINGPROF_EXPORT void* name(size_t size, const void* tag) {                  \
    if (RuntimeMode(false)) {                                                 \
      void* ptr = RuntimeNew(size);                                           \
      if (__builtin_expect(ptr != nullptr, 1)) return ptr;                    \
    }                                                                         \
    return name##_next(size, tag);                                            \
  }
#define RINGPROF_NEW_ALIGNED(name, member)                                     \
  namespace {                                                                  \
  __attribute__((noinline)) void* name##_next(size_t size, size_t alignment) { \
    auto next = Next(&NextAllocator::member);                                  \
    if (next == nullptr) return AlignedOrAbort(size, alignment);               \
    return NewAndSample(true, size, [next, size, alignment] {                  \
      return next(size, alignment);                                            \
    });                                                                        \
  }                                                                            \
  }                                                                            \
  RINGPROF_EXPORT void* name(size_t size, size_t alignment) {                  \
    if (RuntimeMode(true)) {                                                   \
      void* ptr = RuntimeAlignedNew(size, alignment);                          \
      if (__builtin_expect(ptr != nullptr, 1)) return ptr;                     \
    }                                                                          \
    return name##_next(size, alignment);                                       \
  }
#define RINGPROF_NEW_ALIGNED_NOTHROW(name, member)                             \
  namespace {                                                                  \
  __attribute__((noinline)) void* name##_next(size_t size, size_t alignment,   \
                                              const void* tag) {               \
    auto next = Next(&NextAllocator::member);                                  \
    if (next == nullptr) {                                                     \
      return g_next.memalign(alignment, size == 0 ? 1 : size);                 \
    }                                                                          \
    return NewAndSample(true, size, [next, size, alignment, tag] {             \
      return next(size, alignment, tag);                                       \
    });                                                                        \
  }                                                                            \
  }                                                                            \
  RINGPROF_EXPORT void* name(size_t size, size_t alignment, const void* tag) { \
    if (RuntimeMode(true)) {                                                   \
      void* ptr = RuntimeAlignedNew(size, alignment);                          \
      if (__builtin_expect(ptr != nullptr, 1)) return ptr;                     \
    }                                                                          \
    return name##_next(size, alignment, tag);                                  \
  }

RINGPROF_NEW(_Znwm, new_)
RINGPROF_NEW(_Znam, new_array)
RINGPROF_NEW_NOTHROW(_ZnwmRKSt9nothrow_t, new_nothrow)
RINGPROF_NEW_NOTHROW(_ZnamRKSt9nothrow_t, new_array_nothrow)
RINGPROF_NEW_ALIGNED(_ZnwmSt11align_val_t, new_aligned)
RINGPROF_NEW_ALIGNED(_ZnamSt11align_val_t, new_array_aligned)
RINGPROF_NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t,
                             new_aligned_nothrow)
RINGPROF_NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t,
                             new_array_aligned_nothrow)

// Every delete: free for the runtime's; else report, then the next
// definition (or free).
#define RINGPROF_DELETE(name, member, aligned, params, args) \
  namespace {                                                \
  __attribute__((noinline)) void name##_next params {        \
    auto next = Next(&NextAllocator::member);                \
    BeforeDelete(aligned, ptr);                              \
    if (next == nullptr) return g_next.free(ptr);            \
    next args;                                               \
  }                                                          \
  }                                                          \
  RINGPROF_EXPORT void name params {                         \
    if (RuntimeMode(aligned)) return ForwardFree(ptr);       \
    name##_next args;                                        \
  }

RINGPROF_DELETE(_ZdlPv, delete_, false, (void* ptr), (ptr))
RINGPROF_DELETE(_ZdaPv, delete_array, false, (void* ptr), (ptr))
RINGPROF_DELETE(_ZdlPvRKSt9nothrow_t, delete_nothrow, false,
                (void* ptr, const void* tag), (ptr, tag))
RINGPROF_DELETE(_ZdaPvRKSt9nothrow_t, delete_array_nothrow, false,
                (void* ptr, const void* tag), (ptr, tag))
RINGPROF_DELETE(_ZdlPvSt11align_val_t, delete_aligned, true,
                (void* ptr, size_t alignment), (ptr, alignment))
RINGPROF_DELETE(_ZdaPvSt11align_val_t, delete_array_aligned, true,
                (void* ptr, size_t alignment), (ptr, alignment))
RINGPROF_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, delete_aligned_nothrow,
                true, (void* ptr, size_t alignment, const void* tag),
                (ptr, alignment, tag))
RINGPROF_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t,
                delete_array_aligned_nothrow, true,
                (void* ptr, size_t alignment, const void* tag),
                (ptr, alignment, tag))
RINGPROF_DELETE(_ZdlPvm, delete_sized, false, (void* ptr, size_t size),
                (ptr, size))
RINGPROF_DELETE(_ZdaPvm, delete_array_sized, false, (void* ptr, size_t size),
                (ptr, size))
RINGPROF_DELETE(_ZdlPvmSt11align_val_t, delete_sized_aligned, true,
                (void* ptr, size_t size, size_t alignment),
                (ptr, size, alignment))
RINGPROF_DELETE(_ZdaPvmSt11align_val_t, delete_array_sized_aligned, true,
                (void* ptr, size_t size, size_t alignment),
                (ptr, size, alignment))
