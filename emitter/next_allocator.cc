#include "emitter/next_allocator.h"

#include <errno.h>
#include <link.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "emitter/arch/arch.h"
#include "emitter/large_table.h"
#include "emitter/libc_imports.h"
#include "emitter/live_set.h"
#include "emitter/loaded_symbols.h"

namespace ringprof {
namespace emitter {

// malloc, free, calloc and realloc start out as the resolving stubs.
alignas(64) NextAllocator g_next{MallocUnready, FreeUnready, CallocUnready,
                                 ReallocUnready};
alignas(64) std::atomic<bool> g_next_ready{false};
RINGPROF_LARGE_TABLE alignas(
    64) unsigned char g_bootstrap_arena[kBootstrapArenaSize];

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
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
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
void* EmulatedCalloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* ptr = g_next.malloc(bytes);
  if (ptr != nullptr) memset(ptr, 0, bytes);
  return ptr;
}

// The C allocation API's entries, looked up in one pass (loaded_symbols.h).
struct CEntry {
  const char* name;
  uint32_t hash;  // GnuSymbolHash(name)
  void** slot;
  // When the next objects lack the name. glibc's __libc_* (weak: null on
  // musl, whose libc.so always defines the public names).
  void* fallback;
};

#define RINGPROF_C_ENTRY(member, fallback)                    \
  {                                                           \
#member, GnuSymbolHash(#member),                          \
        reinterpret_cast < void**>(&g_next.member),           \
        reinterpret_cast < void*>                             \
            (static_cast <decltype(g_next.member)>(fallback)) \
  }
const CEntry kCEntries[] = {
    RINGPROF_C_ENTRY(malloc, __libc_malloc),
    RINGPROF_C_ENTRY(free, __libc_free),
    RINGPROF_C_ENTRY(calloc, __libc_calloc),
    RINGPROF_C_ENTRY(realloc, __libc_realloc),
    RINGPROF_C_ENTRY(memalign, __libc_memalign),
    // The emulations are built on the five above.
    RINGPROF_C_ENTRY(posix_memalign, EmulatedPosixMemalign),
    RINGPROF_C_ENTRY(aligned_alloc, EmulatedAlignedAlloc),
    RINGPROF_C_ENTRY(valloc, EmulatedValloc),
    RINGPROF_C_ENTRY(pvalloc, EmulatedPvalloc),
    RINGPROF_C_ENTRY(malloc_usable_size, NoUsableSize),
    RINGPROF_C_ENTRY(free_sized, EmulatedFreeSized),
    RINGPROF_C_ENTRY(free_aligned_sized, EmulatedFreeAlignedSized),
    RINGPROF_C_ENTRY(mallocx, EmulatedMallocx),
    RINGPROF_C_ENTRY(rallocx, EmulatedRallocx),
    RINGPROF_C_ENTRY(xallocx, EmulatedXallocx),
    RINGPROF_C_ENTRY(sallocx, EmulatedSallocx),
    RINGPROF_C_ENTRY(dallocx, EmulatedDallocx),
    RINGPROF_C_ENTRY(sdallocx, EmulatedSdallocx),
    RINGPROF_C_ENTRY(nallocx, EmulatedNallocx),
};
#undef RINGPROF_C_ENTRY
constexpr int kCEntryCount = sizeof(kCEntries) / sizeof(kCEntries[0]);

// operator new/delete (their mangled names) and their table slots.
struct CxxEntry {
  const char* name;
  uint32_t hash;  // GnuSymbolHash(name)
  void** slot;
};
#define RINGPROF_CXX_ENTRY(name, member) \
  { name, GnuSymbolHash(name), reinterpret_cast<void**>(&g_next.member) }
const CxxEntry kCxxEntries[] = {
    RINGPROF_CXX_ENTRY("_Znwm", new_),
    RINGPROF_CXX_ENTRY("_Znam", new_array),
    RINGPROF_CXX_ENTRY("_ZnwmRKSt9nothrow_t", new_nothrow),
    RINGPROF_CXX_ENTRY("_ZnamRKSt9nothrow_t", new_array_nothrow),
    RINGPROF_CXX_ENTRY("_ZnwmSt11align_val_t", new_aligned),
    RINGPROF_CXX_ENTRY("_ZnamSt11align_val_t", new_array_aligned),
    RINGPROF_CXX_ENTRY("_ZnwmSt11align_val_tRKSt9nothrow_t",
                       new_aligned_nothrow),
    RINGPROF_CXX_ENTRY("_ZnamSt11align_val_tRKSt9nothrow_t",
                       new_array_aligned_nothrow),
    RINGPROF_CXX_ENTRY("_ZdlPv", delete_),
    RINGPROF_CXX_ENTRY("_ZdaPv", delete_array),
    RINGPROF_CXX_ENTRY("_ZdlPvRKSt9nothrow_t", delete_nothrow),
    RINGPROF_CXX_ENTRY("_ZdaPvRKSt9nothrow_t", delete_array_nothrow),
    RINGPROF_CXX_ENTRY("_ZdlPvSt11align_val_t", delete_aligned),
    RINGPROF_CXX_ENTRY("_ZdaPvSt11align_val_t", delete_array_aligned),
    RINGPROF_CXX_ENTRY("_ZdlPvSt11align_val_tRKSt9nothrow_t",
                       delete_aligned_nothrow),
    RINGPROF_CXX_ENTRY("_ZdaPvSt11align_val_tRKSt9nothrow_t",
                       delete_array_aligned_nothrow),
    RINGPROF_CXX_ENTRY("_ZdlPvm", delete_sized),
    RINGPROF_CXX_ENTRY("_ZdaPvm", delete_array_sized),
    RINGPROF_CXX_ENTRY("_ZdlPvmSt11align_val_t", delete_sized_aligned),
    RINGPROF_CXX_ENTRY("_ZdaPvmSt11align_val_t", delete_array_sized_aligned),
};
#undef RINGPROF_CXX_ENTRY
constexpr int kCxxEntryCount = sizeof(kCxxEntries) / sizeof(kCxxEntries[0]);
constexpr int kNewEntry = 0;  // _Znwm

// The objects defining the next malloc and each operator new/delete, and
// the path of the one defining plain new: ClassifyOperatorNew compares them.
struct NextObjects {
  const void* malloc_object;
  const void* cxx_objects[kCxxEntryCount];
  const char* new_path;
  const void* new_object() const { return cxx_objects[kNewEntry]; }
};
NextObjects g_next_objects;

void NoteCxxObjects(const SymbolRequest* cxx_requests) {
  for (int i = 0; i < kCxxEntryCount; ++i) {
    g_next_objects.cxx_objects[i] = cxx_requests[i].object_base;
  }
  g_next_objects.new_path = cxx_requests[kNewEntry].object_path;
}

void ClassifyOperatorNew();

int CEntryIndex(const char* name) {
  for (int i = 0; i < kCEntryCount; ++i) {
    if (strcmp(kCEntries[i].name, name) == 0) return i;
  }
  return -1;
}

// Before the table is filled: musl's calloc calls the public malloc, and its
// memalign, posix_memalign and valloc call the public aligned_alloc: both are
// interposed, so the emitter would count those bytes twice. Where musl's libc
// (`libc`) defines them, they are emulated on its malloc and aligned_alloc
// instead (what musl does itself once malloc is replaced: its calloc then
// always clears). An allocator linked or preloaded after the emitter keeps its
// own.
void AvoidMuslReentry(SymbolRequest* requests, const void* libc) {
  const auto entry = [&](const char* name) -> SymbolRequest& {
    return requests[CEntryIndex(name)];
  };
  const auto from_libc = [&](const char* name) {
    return libc != nullptr && entry(name).address != nullptr &&
           entry(name).object_base == libc;
  };
  const auto emulate = [&](const char* name, auto function) {
    entry(name).address = reinterpret_cast<void*>(function);
  };
  if (from_libc("calloc") && from_libc("malloc")) {
    emulate("calloc", EmulatedCalloc);
  }
  if (!from_libc("aligned_alloc")) return;
  if (from_libc("memalign")) {
    entry("memalign").address = entry("aligned_alloc").address;
  }
  if (from_libc("posix_memalign")) {
    emulate("posix_memalign", EmulatedPosixMemalign);
  }
  if (from_libc("valloc")) emulate("valloc", EmulatedValloc);
}

// Whether an object after the emitter may define an operator new/delete
// (by hashes only, loaded_symbols.h): in a C program none does, and their
// twenty lookups are skipped.
bool NextMayDefineOperatorNew() {
  uint32_t hashes[kCxxEntryCount];
  for (int i = 0; i < kCxxEntryCount; ++i) hashes[i] = kCxxEntries[i].hash;
  return MaybeDefined(SymbolScope::kNext, hashes, kCxxEntryCount);
}

void ResolveAll() {
  // Nothing reads g_next before g_next_ready is set, but for the stubs'
  // four slots: each is one aligned pointer, stored once.
  // The C entries, the C library's object (for AvoidMuslReentry), then
  // operator new/delete.
  constexpr int kLibcRequest = kCEntryCount;
  constexpr int kCxxRequests = kCEntryCount + 1;
  SymbolRequest requests[kCxxRequests + kCxxEntryCount];
  for (int i = 0; i < kCEntryCount; ++i) {
    requests[i] = {kCEntries[i].name, SymbolScope::kNext};
    requests[i].gnu_hash = kCEntries[i].hash;
  }
  requests[kLibcRequest] = {"__libc_start_main", SymbolScope::kNext};
  for (int i = 0; i < kCxxEntryCount; ++i) {
    requests[kCxxRequests + i] = {kCxxEntries[i].name, SymbolScope::kNext};
    requests[kCxxRequests + i].gnu_hash = kCxxEntries[i].hash;
  }
  LookUpSymbolsAtStart(requests, NextMayDefineOperatorNew()
                                     ? kCxxRequests + kCxxEntryCount
                                     : kCxxRequests);
  // gnu_get_libc_version is weak (libc_imports.h): null on musl.
  if (gnu_get_libc_version == nullptr) {
    AvoidMuslReentry(requests, requests[kLibcRequest].object_base);
  }
  for (int i = 0; i < kCEntryCount; ++i) {
    *kCEntries[i].slot = requests[i].address != nullptr ? requests[i].address
                                                        : kCEntries[i].fallback;
  }
  for (int i = 0; i < kCxxEntryCount; ++i) {
    *kCxxEntries[i].slot = requests[kCxxRequests + i].address;
  }
  g_next_objects.malloc_object = requests[0].object_base;
  NoteCxxObjects(requests + kCxxRequests);
  ClassifyOperatorNew();
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
  // Another thread resolves: its lookups never wait for this thread.
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
  LiveFilterPin(reinterpret_cast<uintptr_t>(g_bootstrap_arena + start));
  return g_bootstrap_arena + start;
}

size_t BootstrapBlockSize(const void* ptr) {
  size_t size;
  memcpy(&size, static_cast<const unsigned char*>(ptr) - kArenaHeader,
         sizeof(size));
  return size;
}

namespace {

// True when `path` names the C++ runtime (libstdc++ or LLVM's libc++),
// whose operator new/delete are known (kNewRuntime).
bool IsCxxRuntime(const char* path) {
  if (path == nullptr) return false;
  const char* slash = strrchr(path, '/');
  const char* base = slash != nullptr ? slash + 1 : path;
  return strncmp(base, "libstdc++.so", 12) == 0 ||
         strncmp(base, "libc++.so", 9) == 0;
}

// Whether the plain (or the aligned) operator new/delete are all defined by
// `object` (or by nothing): a library in between defining some of them
// would be bypassed by kNewRuntime.
bool AllFrom(const void* object, bool aligned) {
  for (int i = 0; i < kCxxEntryCount; ++i) {
    const void* defined_by = g_next_objects.cxx_objects[i];
    if ((strstr(kCxxEntries[i].name, "align_val_t") != nullptr) == aligned &&
        defined_by != nullptr && defined_by != object) {
      return false;
    }
  }
  return true;
}

// libstdc++'s operator new lives elsewhere than malloc and calls it; an
// allocator's own (same object as malloc) may or may not: probed on first
// use (new_interpose.cc), never here, inside the first allocation.
void ClassifyOperatorNew() {
  NextAllocator& n = g_next;
  const NextObjects& objects = g_next_objects;
  const void* new_object = objects.new_object();
  const bool own = n.new_ != nullptr && new_object != nullptr &&
                   new_object == objects.malloc_object;
  const bool runtime = !own && n.new_ != nullptr && n.delete_ != nullptr &&
                       IsCxxRuntime(objects.new_path) &&
                       AllFrom(new_object, false);
  const bool aligned_runtime = runtime && n.new_aligned != nullptr &&
                               n.delete_aligned != nullptr &&
                               AllFrom(new_object, true);
  n.new_mode.store(own       ? kNewUnknown
                   : runtime ? kNewRuntime
                             : kNewViaMalloc,
                   std::memory_order_relaxed);
  n.aligned_new_mode.store(own && n.new_aligned != nullptr ? kNewUnknown
                           : aligned_runtime               ? kNewRuntime
                                                           : kNewViaMalloc,
                           std::memory_order_relaxed);
}

}  // namespace

void ResolveNextOperatorNew() {
  SymbolRequest requests[kCxxEntryCount];
  for (int i = 0; i < kCxxEntryCount; ++i) {
    requests[i] = {kCxxEntries[i].name, SymbolScope::kNext};
    requests[i].gnu_hash = kCxxEntries[i].hash;
  }
  LookUpSymbols(requests, kCxxEntryCount);
  for (int i = 0; i < kCxxEntryCount; ++i) {
    *kCxxEntries[i].slot = requests[i].address;
  }
  NoteCxxObjects(requests);
  ClassifyOperatorNew();
}

bool MallocShadowedBy(char* path, size_t path_size) {
  // A definition before the emitter's is the program's malloc. (A non-PIE
  // executable that takes malloc's address has a canonical PLT entry for
  // it, which is no definition: it calls the emitter's malloc.)
  constexpr uint32_t kMallocHash = GnuSymbolHash("malloc");
  if (!MaybeDefined(SymbolScope::kBeforeSelf, &kMallocHash, 1)) return false;
  SymbolRequest request{"malloc", SymbolScope::kBeforeSelf};
  request.gnu_hash = kMallocHash;
  LookUpSymbolsAtStart(&request, 1);
  if (request.address == nullptr) return false;
  const char* name =
      *request.object_path != '\0' ? request.object_path : "the program";
  const size_t n = strnlen(name, path_size - 1);
  memcpy(path, name, n);
  path[n] = '\0';
  return true;
}

}  // namespace emitter
}  // namespace ringprof

namespace ringprof {
namespace emitter {
namespace {

// Every interposed entry point: the C ones, then operator new/delete.
constexpr int kEntryCount = kCEntryCount + kCxxEntryCount;

const char* EntryName(int i) {
  return i < kCEntryCount ? kCEntries[i].name
                          : kCxxEntries[i - kCEntryCount].name;
}

uint32_t EntryHash(int i) {
  return i < kCEntryCount ? kCEntries[i].hash
                          : kCxxEntries[i - kCEntryCount].hash;
}

void** EntrySlot(int i) {
  return i < kCEntryCount ? kCEntries[i].slot
                          : kCxxEntries[i - kCEntryCount].slot;
}

struct Takeover {
  const void* self_base;
  // Per entry: the emitter's own definition when shadowed, else null.
  void* ours[kEntryCount];
  const void* shadowing_bases[4];
  int shadowing_count;
  int patched;
};

bool IsShadowingObject(const Takeover& t, const void* base) {
  for (int i = 0; i < t.shadowing_count; ++i) {
    if (t.shadowing_bases[i] == base) return true;
  }
  return false;
}

int EntryNamed(const Takeover& t, const char* name) {
  for (int i = 0; i < kEntryCount; ++i) {
    if (t.ours[i] != nullptr && strcmp(EntryName(i), name) == 0) return i;
  }
  return -1;
}

// Points one GOT slot at the emitter's definition, through RELRO if need be.
void WriteSlot(uintptr_t slot, void* value, uintptr_t relro_start,
               uintptr_t relro_end) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = slot & ~(page - 1);
  const bool relro = slot >= relro_start && slot < relro_end;
  if (relro && mprotect(reinterpret_cast<void*>(first), page,
                        PROT_READ | PROT_WRITE) != 0) {
    return;
  }
  __atomic_store_n(reinterpret_cast<void**>(slot), value, __ATOMIC_RELEASE);
  if (relro) mprotect(reinterpret_cast<void*>(first), page, PROT_READ);
}

int PatchObject(struct dl_phdr_info* info, size_t, void* data) {
  Takeover& t = *static_cast<Takeover*>(data);
  const ElfW(Addr) bias = info->dlpi_addr;
  const ElfW(Dyn)* dynamic = DynamicSection(*info);
  uintptr_t lowest = UINTPTR_MAX, relro_start = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD && phdr.p_vaddr < lowest) lowest = phdr.p_vaddr;
    if (phdr.p_type == PT_GNU_RELRO) {
      relro_start = bias + phdr.p_vaddr;
      relro_end = relro_start + phdr.p_memsz;
    }
  }
  if (dynamic == nullptr || lowest == UINTPTR_MAX) return 0;
  const void* base = reinterpret_cast<const void*>(bias + lowest);
  if (base == t.self_base || IsShadowingObject(t, base)) return 0;
  const char* name = info->dlpi_name;
  if (name != nullptr && (strstr(name, "linux-vdso") != nullptr ||
                          strstr(name, "/ld-linux") != nullptr)) {
    return 0;
  }
  auto address = [bias](ElfW(Addr) value) {
    return DynamicPointer(bias, value);
  };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela) * tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym)*>(address(d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char*>(address(d->d_un.d_ptr));
        break;
      case DT_JMPREL:
        tables[0] = reinterpret_cast<const ElfW(Rela)*>(address(d->d_un.d_ptr));
        break;
      case DT_PLTRELSZ:
        sizes[0] = d->d_un.d_val;
        break;
      case DT_RELA:
        tables[1] = reinterpret_cast<const ElfW(Rela)*>(address(d->d_un.d_ptr));
        break;
      case DT_RELASZ:
        sizes[1] = d->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (symtab == nullptr || strtab == nullptr) return 0;
  for (int table = 0; table < 2; ++table) {
    if (tables[table] == nullptr) continue;
    const size_t count = sizes[table] / sizeof(ElfW(Rela));
    for (size_t r = 0; r < count; ++r) {
      const ElfW(Rela)& rela = tables[table][r];
      const auto type = ELF64_R_TYPE(rela.r_info);
      if (type != arch::kJumpSlotRelocation &&
          type != arch::kGlobDatRelocation) {
        continue;
      }
      const auto symbol = ELF64_R_SYM(rela.r_info);
      if (symbol == 0) continue;
      const int entry = EntryNamed(t, strtab + symtab[symbol].st_name);
      if (entry < 0) continue;
      WriteSlot(bias + rela.r_offset, t.ours[entry], relro_start, relro_end);
      ++t.patched;
    }
  }
  return 0;
}

// Whether an object before the emitter (the program, an earlier preload)
// defines any entry point. Usually none does: one Bloom-filter probe per
// name and object says so (MaybeDefined), without the lookups.
bool AnyEntryShadowed() {
  uint32_t hashes[kEntryCount];
  for (int i = 0; i < kEntryCount; ++i) hashes[i] = EntryHash(i);
  if (!MaybeDefined(SymbolScope::kBeforeSelf, hashes, kEntryCount)) {
    return false;
  }
  SymbolRequest requests[kEntryCount];
  for (int i = 0; i < kEntryCount; ++i) {
    requests[i] = {EntryName(i), SymbolScope::kBeforeSelf};
    requests[i].gnu_hash = EntryHash(i);
  }
  LookUpSymbolsAtStart(requests, kEntryCount);
  for (const SymbolRequest& request : requests) {
    if (request.address != nullptr) return true;
  }
  return false;
}

}  // namespace

bool TakeOverShadowedAllocator() {
  if (!AnyEntryShadowed()) return false;
  // Per entry: the first definition in lookup order, and the emitter's.
  SymbolRequest requests[2 * kEntryCount];
  for (int i = 0; i < kEntryCount; ++i) {
    requests[2 * i] = {EntryName(i), SymbolScope::kFirst};
    requests[2 * i].gnu_hash = EntryHash(i);
    requests[2 * i + 1] = {EntryName(i), SymbolScope::kSelf};
    requests[2 * i + 1].gnu_hash = EntryHash(i);
  }
  LookUpSymbolsAtStart(requests, 2 * kEntryCount);
  Takeover t = {};
  t.self_base = requests[1].object_base;
  if (t.self_base == nullptr) return false;
  for (int i = 0; i < kEntryCount; ++i) {
    const SymbolRequest& first = requests[2 * i];
    const SymbolRequest& ours = requests[2 * i + 1];
    if (first.address == nullptr || ours.address == nullptr ||
        first.object_base == t.self_base) {
      continue;  // the program reaches the emitter's own already
    }
    t.ours[i] = ours.address;
    *EntrySlot(i) = first.address;  // forward to the shadowing definition
    if (i == 0) g_next_objects.malloc_object = first.object_base;
    if (i >= kCEntryCount) {
      g_next_objects.cxx_objects[i - kCEntryCount] = first.object_base;
    }
    if (i == kCEntryCount + kNewEntry) {
      g_next_objects.new_path = first.object_path;
    }
    if (!IsShadowingObject(t, first.object_base) && t.shadowing_count < 4) {
      t.shadowing_bases[t.shadowing_count++] = first.object_base;
    }
  }
  if (t.shadowing_count == 0) return false;
  ClassifyOperatorNew();
  dl_iterate_phdr(PatchObject, &t);
  return t.patched > 0;
}

}  // namespace emitter
}  // namespace ringprof
