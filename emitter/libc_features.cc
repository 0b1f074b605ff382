#include "emitter/libc_features.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "emitter/arch/arch.h"
#include "emitter/cfi_unwinder.h"
#include "emitter/config.h"
#include "emitter/large_table.h"
#include "emitter/libc_imports.h"
#include "emitter/loaded_symbols.h"

namespace ringprof {
namespace emitter {
namespace {

using DlFindObjectFn = int (*)(void*, dl_find_object*);
using StrerrorNameFn = const char* (*)(int);

DlFindObjectFn g_resolved_dl_find_object = nullptr;
DlFindObjectFn g_dl_find_object = nullptr;  // null: not used
StrerrorNameFn g_strerrorname_np = nullptr;
LibgccUnwinder g_libgcc = {};
// False when libgcc_s.so.1 was not loaded and not opened on purpose.
bool g_libgcc_looked_for = false;
// glibc's __libc_stack_end (its address), or null.
void** g_libc_stack_end = nullptr;

// Without _dl_find_object: the objects loaded before the emitter started,
// whole mapped span and .eh_frame_hdr. Filled at load, before any reader
// exists (tests: before the count is published); afterwards an entry only
// ever goes away (map_end = 0), when a rescan no longer lists its object.
struct StartupObject {
  uintptr_t map_start;
  std::atomic<uintptr_t> map_end;
  const void* eh_frame_hdr;
};
constexpr int kMaxStartupObjects = 256;
RINGPROF_LARGE_TABLE StartupObject g_startup_objects[kMaxStartupObjects];
std::atomic<int> g_startup_object_count{0};

struct ObjectSpan {
  uintptr_t map_start = ~uintptr_t{0};
  uintptr_t map_end = 0;  // 0: no PT_LOAD
  const void* eh_frame_hdr = nullptr;
};

ObjectSpan SpanOf(const dl_phdr_info& info) {
  ObjectSpan span;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info.dlpi_phdr[i];
    const uintptr_t start = info.dlpi_addr + phdr.p_vaddr;
    if (phdr.p_type == PT_LOAD) {
      if (start < span.map_start) span.map_start = start;
      if (start + phdr.p_memsz > span.map_end) {
        span.map_end = start + phdr.p_memsz;
      }
    } else if (phdr.p_type == PT_GNU_EH_FRAME) {
      span.eh_frame_hdr = reinterpret_cast<const void*>(start);
    }
  }
  return span;
}

int OnStartupObject(struct dl_phdr_info* info, size_t, void* data) {
  int& count = *static_cast<int*>(data);
  if (count == kMaxStartupObjects) return 1;
  const ObjectSpan span = SpanOf(*info);
  if (span.map_end == 0) return 0;
  StartupObject& object = g_startup_objects[count++];
  object.map_start = span.map_start;
  object.eh_frame_hdr = span.eh_frame_hdr;
  object.map_end.store(span.map_end, std::memory_order_relaxed);
  return 0;
}

void RecordStartupObjects() {
  int count = 0;
  dl_iterate_phdr(OnStartupObject, &count);
  g_startup_object_count.store(count, std::memory_order_release);
}

// Marks in `still_loaded` the start-up objects a rescan lists again.
int OnRecheckedObject(struct dl_phdr_info* info, size_t, void* data) {
  bool* still_loaded = static_cast<bool*>(data);
  const ObjectSpan span = SpanOf(*info);
  const int count = g_startup_object_count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    const StartupObject& object = g_startup_objects[i];
    if (object.map_start == span.map_start &&
        object.map_end.load(std::memory_order_relaxed) == span.map_end &&
        object.eh_frame_hdr == span.eh_frame_hdr) {
      still_loaded[i] = true;
    }
  }
  return 0;
}

int FindStartupObject(const void* address, dl_find_object* result) {
  const uintptr_t pc = reinterpret_cast<uintptr_t>(address);
  const int count = g_startup_object_count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    const StartupObject& object = g_startup_objects[i];
    const uintptr_t map_end = object.map_end.load(std::memory_order_acquire);
    if (pc < object.map_start || pc >= map_end) continue;
    memset(result, 0, sizeof(*result));
    result->dlfo_map_start = reinterpret_cast<void*>(object.map_start);
    result->dlfo_map_end = reinterpret_cast<void*>(map_end);
    result->dlfo_eh_frame = const_cast<void*>(object.eh_frame_hdr);
    return 0;
  }
  return -1;
}

// libgcc_s.so.1 is used only if the process has it already (C++ programs
// and anything that links it) or glibc has no _dl_find_object (then it is
// the only unwinder that finds objects loaded after start). Loading it into
// every other process would be the one object the emitter adds, and its
// constructor's CPUID probing alone costs a C program's start-up more than
// everything else the emitter does; the CFI walker covers C code but for
// the frames it gives up on (CFA expressions, stack realignment).
//
// Whether it is loaded is read from the loader's list of objects, not asked
// with dlopen(RTLD_NOLOAD), which searches the library path and opens the
// file before it finds out. Opening it (glibc < 2.35 only) goes through
// dlopen where glibc has it in libc or libdl.so.2 is loaded, and through
// glibc's private __libc_dlopen_mode otherwise (libringprof.so does not
// load libdl.so.2 itself).
constexpr char kLibgcc[] = "libgcc_s.so.1";

bool LoadLibgcc() {
  SymbolRequest requests[] = {
      {"dlopen", SymbolScope::kFirst},
      {"__libc_dlopen_mode", SymbolScope::kFirst, "GLIBC_PRIVATE"},
  };
  LookUpSymbols(requests, 2);
  using DlopenFn = void* (*)(const char*, int);
  if (requests[0].address != nullptr) {
    return reinterpret_cast<DlopenFn>(requests[0].address)(
               kLibgcc, RTLD_NOW | RTLD_LOCAL) != nullptr;
  }
  if (requests[1].address != nullptr) {
    return reinterpret_cast<DlopenFn>(requests[1].address)(
               kLibgcc, RTLD_NOW | RTLD_LOCAL) != nullptr;
  }
  return false;
}

void OpenLibgcc(bool only_if_loaded) {
  const bool loaded =
      ObjectLoaded(kLibgcc) || (!only_if_loaded && LoadLibgcc());
  g_libgcc_looked_for = !only_if_loaded || loaded;
  if (!loaded) return;
  SymbolRequest requests[] = {
      {"_Unwind_Backtrace", SymbolScope::kObjectNamed, nullptr, kLibgcc},
      {"_Unwind_GetIP", SymbolScope::kObjectNamed, nullptr, kLibgcc},
      {"_Unwind_GetCFA", SymbolScope::kObjectNamed, nullptr, kLibgcc},
  };
  LookUpSymbols(requests, 3);
  LibgccUnwinder found;
  found.backtrace =
      reinterpret_cast<decltype(found.backtrace)>(requests[0].address);
  found.get_ip = reinterpret_cast<decltype(found.get_ip)>(requests[1].address);
  found.get_cfa =
      reinterpret_cast<decltype(found.get_cfa)>(requests[2].address);
  if (found.backtrace != nullptr && found.get_ip != nullptr &&
      found.get_cfa != nullptr) {
    // Warmed up here, outside any signal handler: libgcc initialises some
    // tables under pthread_once on first use.
    found.backtrace([](_Unwind_Context*, void*) { return _URC_END_OF_STACK; },
                    nullptr);
    g_libgcc = found;
  }
}

// Before the session starts (priority 101 runs before the default-priority
// constructor in lifecycle.cc): allocations made here are forwarded, never
// sampled.
__attribute__((constructor(101))) void ResolveLibcFeatures() {
  // The library's first constructor: the environment's RINGPROF_* entries
  // are noted here (config.h), a write before any read of that memory (a
  // zero page read first would fault twice).
  RefreshRingprofEnv();
  // RINGPROF_DISABLE=1: nothing is sampled, so nothing is looked up.
  if (DisabledInEnvironment(LookupRingprofEnv)) {
    return;
  }
  SymbolRequest requests[] = {
      {"_dl_find_object", SymbolScope::kFirst, "GLIBC_2.35"},
      {"strerrorname_np", SymbolScope::kFirst, "GLIBC_2.32"},
      // glibc's loader's; not imported (it would make ld.so a dependency).
      {"__libc_stack_end", SymbolScope::kFirst, arch::kGlibcFirstVersion},
  };
  LookUpSymbolsAtStart(requests, 3);
  g_libc_stack_end = static_cast<void**>(requests[2].address);
  g_resolved_dl_find_object =
      reinterpret_cast<DlFindObjectFn>(requests[0].address);
  g_dl_find_object = g_resolved_dl_find_object;
  g_strerrorname_np = reinterpret_cast<StrerrorNameFn>(requests[1].address);
  OpenLibgcc(/*only_if_loaded=*/g_dl_find_object != nullptr);
  if (g_dl_find_object == nullptr) RecordStartupObjects();
}

}  // namespace

int FindObject(const void* address, dl_find_object* result) {
  const DlFindObjectFn find = g_dl_find_object;
  if (find != nullptr) return find(const_cast<void*>(address), result);
  return FindStartupObject(address, result);
}

bool HaveDlFindObject() { return g_dl_find_object != nullptr; }

const char* ErrnoName(int error) {
  return g_strerrorname_np != nullptr ? g_strerrorname_np(error) : nullptr;
}

const LibgccUnwinder& Libgcc() { return g_libgcc; }

uintptr_t InitialStackTop() {
  // argv, envp and their strings live just above either address.
  constexpr uintptr_t kAbove = 4096;
  if (g_libc_stack_end != nullptr) {
    return reinterpret_cast<uintptr_t>(*g_libc_stack_end) + kAbove;
  }
  // musl: the environment vector the kernel put on the stack, right above
  // argc and argv (before any constructor of the program could replace
  // `environ`). Kept below the page holding its first string, the top of
  // the stack mapping being at or above it.
  if (environ == nullptr) return 0;
  const uintptr_t vector = reinterpret_cast<uintptr_t>(environ);
  uintptr_t top = vector + kAbove;
  if (environ[0] != nullptr) {
    const uintptr_t string_page =
        (reinterpret_cast<uintptr_t>(environ[0]) + kAbove) & ~(kAbove - 1);
    if (string_page > vector && string_page < top) top = string_page;
  }
  return top;
}

bool LibgccIsSignalSafe() {
  return arch::kLibgccInSignalHandlers && HaveDlFindObject();
}

bool ForgetUnloadedStartupObjects() {
  if (HaveDlFindObject()) return false;
  bool still_loaded[kMaxStartupObjects] = {};
  dl_iterate_phdr(OnRecheckedObject, still_loaded);
  bool forgot = false;
  const int count = g_startup_object_count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    StartupObject& object = g_startup_objects[i];
    if (still_loaded[i] ||
        object.map_end.load(std::memory_order_relaxed) == 0) {
      continue;
    }
    object.map_end.store(0, std::memory_order_release);
    forgot = true;
  }
  return forgot;
}

const char* GlibcVersion() {
  // gnu_get_libc_version is weak (libc_imports.h): musl has none.
  return gnu_get_libc_version != nullptr ? gnu_get_libc_version() : nullptr;
}

bool OnGlibc() { return gnu_get_libc_version != nullptr; }

bool FramePointerFallback() { return !OnGlibc(); }

bool LibgccMissing() {
  return g_libgcc_looked_for && g_libgcc.backtrace == nullptr;
}

void UseDlFindObjectForTest(bool use) {
  g_dl_find_object = use ? g_resolved_dl_find_object : nullptr;
  if (!use) RecordStartupObjects();
  FlushUnwindRules();  // rules computed in the other mode
}

}  // namespace emitter
}  // namespace ringprof
