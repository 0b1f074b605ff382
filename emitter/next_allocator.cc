#include "emitter/next_allocator.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>

extern "C" {
// glibc's own entry points: the last resort when dlsym finds nothing.
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace ringprof {
namespace emitter {

NextAllocator g_next;
std::atomic<bool> g_next_ready{false};
alignas(64) unsigned char g_bootstrap_arena[kBootstrapArenaSize];

namespace {

// 0: unresolved, 1: a thread is resolving, 2: resolved.
std::atomic<int> g_state{0};
__thread bool tls_resolving __attribute__((tls_model("initial-exec")));
std::atomic<size_t> g_arena_used{0};

constexpr size_t kArenaHeader = 16;

size_t PageSize() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

// --- emulations, on top of the next allocator's core entry points ---

// jemalloc's MALLOCX_LG_ALIGN(la) and MALLOCX_ZERO.
size_t FlagAlignment(int flags) {
  const int lg = flags & 0x3f;
  return lg == 0 ? 0 : size_t{1} << lg;
}
constexpr int kMallocxZero = 0x40;

void* AlignedOrPlain(size_t alignment, size_t size) {
  return alignment > 16 ? g_next.memalign(alignment, size)
                        : g_next.malloc(size);
}

void* EmulatedMallocx(size_t size, int flags) {
  void* ptr = AlignedOrPlain(FlagAlignment(flags), size);
  if (ptr != nullptr && (flags & kMallocxZero) != 0) memset(ptr, 0, size);
  return ptr;
}

void* EmulatedRallocx(void* ptr, size_t size, int flags) {
  const size_t alignment = FlagAlignment(flags);
  const size_t old_size = g_next.malloc_usable_size(ptr);
  void* result;
  if (alignment > 16) {
    result = g_next.memalign(alignment, size);
    if (result == nullptr) return nullptr;
    memcpy(result, ptr, old_size < size ? old_size : size);
    g_next.free(ptr);
  } else {
    result = g_next.realloc(ptr, size);
    if (result == nullptr) return nullptr;
  }
  if ((flags & kMallocxZero) != 0 && size > old_size) {
    memset(static_cast<char*>(result) + old_size, 0, size - old_size);
  }
  return result;
}

size_t EmulatedXallocx(void* ptr, size_t, size_t, int) {
  return g_next.malloc_usable_size(ptr);  // never resizes in place
}
size_t EmulatedSallocx(const void* ptr, int) {
  return g_next.malloc_usable_size(const_cast<void*>(ptr));
}
void EmulatedDallocx(void* ptr, int) { g_next.free(ptr); }
void EmulatedSdallocx(void* ptr, size_t, int) { g_next.free(ptr); }
size_t EmulatedNallocx(size_t size, int flags) {
  const size_t alignment = FlagAlignment(flags);
  const size_t unit = alignment > 16 ? alignment : 16;
  if (size == 0 || size > SIZE_MAX - unit) return 0;
  return (size + unit - 1) & ~(unit - 1);
}
void EmulatedFreeSized(void* ptr, size_t) { g_next.free(ptr); }
void EmulatedFreeAlignedSized(void* ptr, size_t, size_t) { g_next.free(ptr); }

int EmulatedPosixMemalign(void** result, size_t alignment, size_t size) {
  void* ptr = g_next.memalign(alignment, size);
  if (ptr == nullptr) return ENOMEM;
  *result = ptr;
  return 0;
}
void* EmulatedAlignedAlloc(size_t alignment, size_t size) {
  return g_next.memalign(alignment, size);
}
void* EmulatedValloc(size_t size) { return g_next.memalign(PageSize(), size); }
void* EmulatedPvalloc(size_t size) {
  const size_t page = PageSize();
  if (size > SIZE_MAX - page) return nullptr;
  return g_next.memalign(page, (size + page - 1) & ~(page - 1));
}
size_t NoUsableSize(void*) { return 0; }

template <typename Fn>
void Lookup(Fn* slot, const char* name, Fn fallback) {
  void* symbol = dlsym(RTLD_NEXT, name);
  *slot = symbol != nullptr ? reinterpret_cast<Fn>(symbol) : fallback;
}

template <typename Fn>
void LookupOptional(Fn* slot, const char* name) {
  *slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

const void* ObjectOf(const void* address) {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0) return nullptr;
  return info.dli_fbase;
}

void ResolveAll() {
  // Nothing reads g_next before g_next_ready is set.
  NextAllocator& n = g_next;
  Lookup(&n.malloc, "malloc", __libc_malloc);
  Lookup(&n.free, "free", __libc_free);
  Lookup(&n.calloc, "calloc", __libc_calloc);
  Lookup(&n.realloc, "realloc", __libc_realloc);
  Lookup(&n.memalign, "memalign", __libc_memalign);
  // The emulations are built on the five above.
  Lookup(&n.posix_memalign, "posix_memalign", EmulatedPosixMemalign);
  Lookup(&n.aligned_alloc, "aligned_alloc", EmulatedAlignedAlloc);
  Lookup(&n.valloc, "valloc", EmulatedValloc);
  Lookup(&n.pvalloc, "pvalloc", EmulatedPvalloc);
  Lookup(&n.malloc_usable_size, "malloc_usable_size", NoUsableSize);
  Lookup(&n.free_sized, "free_sized", EmulatedFreeSized);
  Lookup(&n.free_aligned_sized, "free_aligned_sized", EmulatedFreeAlignedSized);
  Lookup(&n.mallocx, "mallocx", EmulatedMallocx);
  Lookup(&n.rallocx, "rallocx", EmulatedRallocx);
  Lookup(&n.xallocx, "xallocx", EmulatedXallocx);
  Lookup(&n.sallocx, "sallocx", EmulatedSallocx);
  Lookup(&n.dallocx, "dallocx", EmulatedDallocx);
  Lookup(&n.sdallocx, "sdallocx", EmulatedSdallocx);
  Lookup(&n.nallocx, "nallocx", EmulatedNallocx);
  ResolveNextOperatorNew();
}

}  // namespace

bool ResolveNextAllocator() {
  if (tls_resolving) return false;
  int state = g_state.load(std::memory_order_acquire);
  if (state == 0 &&
      g_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
    tls_resolving = true;
    ResolveAll();
    tls_resolving = false;
    g_state.store(2, std::memory_order_release);
    g_next_ready.store(true, std::memory_order_release);
    return true;
  }
  // Another thread resolves: its dlsym calls never wait for this thread.
  while (g_state.load(std::memory_order_acquire) != 2) sched_yield();
  return true;
}

void* BootstrapAllocate(size_t size, size_t alignment) {
  if (alignment < kArenaHeader) alignment = kArenaHeader;
  if (size > kBootstrapArenaSize || alignment > kBootstrapArenaSize) {
    return nullptr;
  }
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  size_t start, end;
  do {
    start = (used + kArenaHeader + alignment - 1) & ~(alignment - 1);
    end = start + ((size + kArenaHeader - 1) & ~(kArenaHeader - 1));
    if (end > kBootstrapArenaSize) {
      errno = ENOMEM;
      return nullptr;
    }
  } while (!g_arena_used.compare_exchange_weak(used, end,
                                               std::memory_order_relaxed));
  memcpy(g_bootstrap_arena + start - kArenaHeader, &size, sizeof(size));
  return g_bootstrap_arena + start;
}

size_t BootstrapBlockSize(const void* ptr) {
  size_t size;
  memcpy(&size, static_cast<const unsigned char*>(ptr) - kArenaHeader,
         sizeof(size));
  return size;
}

void ResolveNextOperatorNew() {
  NextAllocator& n = g_next;
  LookupOptional(&n.new_, "_Znwm");
  LookupOptional(&n.new_array, "_Znam");
  LookupOptional(&n.new_nothrow, "_ZnwmRKSt9nothrow_t");
  LookupOptional(&n.new_array_nothrow, "_ZnamRKSt9nothrow_t");
  LookupOptional(&n.new_aligned, "_ZnwmSt11align_val_t");
  LookupOptional(&n.new_array_aligned, "_ZnamSt11align_val_t");
  LookupOptional(&n.new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  LookupOptional(&n.new_array_aligned_nothrow,
                 "_ZnamSt11align_val_tRKSt9nothrow_t");
  LookupOptional(&n.delete_, "_ZdlPv");
  LookupOptional(&n.delete_array, "_ZdaPv");
  LookupOptional(&n.delete_nothrow, "_ZdlPvRKSt9nothrow_t");
  LookupOptional(&n.delete_array_nothrow, "_ZdaPvRKSt9nothrow_t");
  LookupOptional(&n.delete_aligned, "_ZdlPvSt11align_val_t");
  LookupOptional(&n.delete_array_aligned, "_ZdaPvSt11align_val_t");
  LookupOptional(&n.delete_aligned_nothrow,
                 "_ZdlPvSt11align_val_tRKSt9nothrow_t");
  LookupOptional(&n.delete_array_aligned_nothrow,
                 "_ZdaPvSt11align_val_tRKSt9nothrow_t");
  LookupOptional(&n.delete_sized, "_ZdlPvm");
  LookupOptional(&n.delete_array_sized, "_ZdaPvm");
  LookupOptional(&n.delete_sized_aligned, "_ZdlPvmSt11align_val_t");
  LookupOptional(&n.delete_array_sized_aligned, "_ZdaPvmSt11align_val_t");
  // libstdc++'s operator new lives elsewhere than malloc and calls it; an
  // allocator's own (same object as malloc) may or may not: probed on first
  // use (new_interpose.cc), never here, inside the first allocation.
  const bool own =
      n.new_ != nullptr && ObjectOf(reinterpret_cast<void*>(n.new_)) ==
                               ObjectOf(reinterpret_cast<void*>(n.malloc));
  n.new_mode.store(own ? kNewUnknown : kNewViaMalloc,
                   std::memory_order_relaxed);
  n.aligned_new_mode.store(
      own && n.new_aligned != nullptr ? kNewUnknown : kNewViaMalloc,
      std::memory_order_relaxed);
  // Names the next object lacks left an error behind: the program's own
  // next dlerror() must not report it.
  dlerror();
}

bool MallocShadowedBy(char* path, size_t path_size) {
  void* first = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  void* entry = nullptr;
  if (first == nullptr || dladdr1(first, &info, &entry, RTLD_DL_SYMENT) == 0) {
    return false;
  }
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  // A non-PIE executable that takes malloc's address has a canonical PLT
  // entry (an undefined symbol with a value), which dlsym returns; it calls
  // the emitter's malloc. Only a definition shadows the emitter.
  if (symbol != nullptr && symbol->st_shndx == SHN_UNDEF) return false;
  if (info.dli_fbase ==
      ObjectOf(reinterpret_cast<const void*>(&MallocShadowedBy))) {
    return false;
  }
  const char* name = info.dli_fname != nullptr ? info.dli_fname : "?";
  const size_t n = strnlen(name, path_size - 1);
  memcpy(path, name, n);
  path[n] = '\0';
  return true;
}

}  // namespace emitter
}  // namespace ringprof
