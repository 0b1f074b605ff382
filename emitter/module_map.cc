#include "emitter/module_map.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <sys/auxv.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "emitter/cfi_unwinder.h"
#include "emitter/fork_child.h"
#include "emitter/large_table.h"
#include "emitter/libc_features.h"
#include "emitter/loaded_symbols.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "emitter/thread_state.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

struct Module {
  bool used;
  bool seen;  // by the current rescan (RescanLocked)
  ringfile::ModuleMap record;
  // What _dl_find_object reports for the segment while the object is
  // loaded; a different answer means it was unloaded. Null without
  // _dl_find_object (rescans notice unloads then).
  const void* link_map;
  const void* map_start;
  // The main program: its path is the executable's (ExecutablePath), read
  // when first emitted rather than at start (a walk through /proc that
  // costs a fresh process more than the rest of this table).
  bool main_program;
  char path[kMaxModulePathSize];
};

// AddObjectLocked's path for the main program (see Module::main_program).
constexpr char kMainProgram[] = "";

// Written under g_locked. Only [0, g_module_end) has ever been written:
// loops stop there so the untouched tail never becomes resident memory.
RINGPROF_LARGE_TABLE Module g_modules[kMaxModules];
std::atomic<int> g_module_end{0};
// Lock-free lookup copy of the used entries' [start, end); end == 0 marks a
// free entry. Writers set end last.
struct Range {
  std::atomic<uint64_t> start;
  std::atomic<uint64_t> end;
};
RINGPROF_LARGE_TABLE Range g_ranges[kMaxModules];

std::atomic<bool> g_locked{false};
// Whether the objects loaded at start are in the table: added at start
// (RecordLoadedModules) or, with _dl_find_object, when the table is first
// used (AddStartObjectsLocked). Under g_locked.
bool g_start_objects_added = false;
std::atomic<uint64_t> g_last_emit_ns{0};
// Doubles at each periodic re-emission, up to kReemitIntervalNs.
std::atomic<uint64_t> g_reemit_interval_ns{kFirstReemitIntervalNs};
// Without _dl_find_object, an unknown frame triggers a rescan
// (dl_iterate_phdr), at most once per kMinRescanIntervalNs. Under g_locked.
constexpr uint64_t kMinRescanIntervalNs = 100'000'000;
uint64_t g_last_rescan_ns = 0;

bool TryLock() {
  bool expected = false;
  return g_locked.compare_exchange_strong(expected, true,
                                          std::memory_order_acquire);
}
void Lock() {
  while (!TryLock()) sched_yield();
}
void Unlock() { g_locked.store(false, std::memory_order_release); }

void Emit(const Module& module) {
  // Before the ring file exists there is nothing to append to (and no
  // reason to read the clock): the file's creation records the table.
  if (!RingFileOpen()) return;
  ringfile::ModuleMap copy = module.record;
  copy.monotonic_ns = MonotonicNowNs();
  const char* path = module.path;
  if (module.main_program) {
    path = ExecutablePath();
    copy.path_size = static_cast<uint16_t>(strnlen(path, kMaxModulePathSize));
  }
  AppendRecord(ringfile::RecordType::kModuleMap, &copy, sizeof(copy), path,
               copy.path_size);
}

bool InRange(int m, uint64_t pc) {
  const uint64_t range_end = g_ranges[m].end.load(std::memory_order_acquire);
  return pc < range_end &&
         pc >= g_ranges[m].start.load(std::memory_order_relaxed);
}

// `hint`: the entry that matched last; neighbouring frames are mostly in
// the same object, so it is tried first.
bool KnownPc(uint64_t pc, int& hint) {
  if (hint >= 0 && InRange(hint, pc)) return true;
  const int end = g_module_end.load(std::memory_order_acquire);
  for (int m = 0; m < end; ++m) {
    if (InRange(m, pc)) {
      hint = m;
      return true;
    }
  }
  return false;
}

// Copies the GNU build-id out of the object's PT_NOTE segments.
void ReadBuildId(ElfW(Addr) load_bias, const ElfW(Phdr) * phdrs, int phnum,
                 ringfile::ModuleMap& record) {
  for (int i = 0; i < phnum; ++i) {
    const ElfW(Phdr)& phdr = phdrs[i];
    if (phdr.p_type != PT_NOTE) continue;
    const uint64_t align = phdr.p_align == 8 ? 8 : 4;
    const char* p = reinterpret_cast<const char*>(load_bias + phdr.p_vaddr);
    const char* end = p + phdr.p_memsz;
    while (end - p >= static_cast<ptrdiff_t>(sizeof(ElfW(Nhdr)))) {
      ElfW(Nhdr) note;
      memcpy(&note, p, sizeof(note));
      const char* name = p + sizeof(note);
      const char* desc = name + ((note.n_namesz + align - 1) & ~(align - 1));
      const char* next = desc + ((note.n_descsz + align - 1) & ~(align - 1));
      if (next > end || next <= p) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          memcmp(name, "GNU", 4) == 0) {
        const uint32_t size = note.n_descsz < ringfile::kMaxBuildIdSize
                                  ? note.n_descsz
                                  : ringfile::kMaxBuildIdSize;
        memcpy(record.build_id, desc, size);
        record.build_id_size = static_cast<uint8_t>(size);
        return;
      }
      p = next;
    }
  }
}

// Records each executable segment of one object not in the table yet, and
// with `emit` appends its records to the ring file (when there is one).
// Called with the lock held.
void AddObjectLocked(const char* path, ElfW(Addr) load_bias,
                     const ElfW(Phdr) * phdrs, int phnum, bool emit) {
  const bool main_program = path == kMainProgram;
  size_t path_size = strlen(path);
  if (path_size > kMaxModulePathSize) path_size = kMaxModulePathSize;
  ringfile::ModuleMap record;
  memset(&record, 0, sizeof(record));
  record.load_bias = load_bias;
  record.path_size = static_cast<uint16_t>(path_size);
  bool have_build_id = false;

  for (int i = 0; i < phnum; ++i) {
    const ElfW(Phdr)& phdr = phdrs[i];
    if (phdr.p_type != PT_LOAD || (phdr.p_flags & PF_X) == 0) continue;
    record.start = load_bias + phdr.p_vaddr;
    record.size = phdr.p_memsz;
    record.file_offset = phdr.p_offset;

    int end = g_module_end.load(std::memory_order_relaxed);
    int free_index = -1;
    bool known = false;
    for (int m = 0; m < end; ++m) {
      const Module& module = g_modules[m];
      if (!module.used) {
        if (free_index < 0) free_index = m;
      } else if (module.record.start == record.start &&
                 module.record.size == record.size &&
                 module.record.load_bias == load_bias) {
        g_modules[m].seen = true;
        known = true;
        break;
      }
    }
    if (known) continue;
    if (!have_build_id) {
      ReadBuildId(load_bias, phdrs, phnum, record);
      have_build_id = true;
    }
    if (free_index < 0 && end < kMaxModules) free_index = end++;
    if (free_index < 0) {
      // Table full: record it once anyway.
      Module transient;
      transient.record = record;
      transient.main_program = main_program;
      memcpy(transient.path, path, path_size);
      Emit(transient);
      continue;
    }
    Module& module = g_modules[free_index];
    module.used = true;
    module.seen = true;
    module.record = record;
    module.main_program = main_program;
    memcpy(module.path, path, path_size);
    dl_find_object found;
    const bool found_ok =
        HaveDlFindObject() &&
        FindObject(reinterpret_cast<void*>(record.start), &found) == 0;
    module.link_map = found_ok ? found.dlfo_link_map : nullptr;
    module.map_start = found_ok ? found.dlfo_map_start : nullptr;
    g_ranges[free_index].end.store(0, std::memory_order_relaxed);
    g_ranges[free_index].start.store(record.start, std::memory_order_relaxed);
    g_ranges[free_index].end.store(record.start + record.size,
                                   std::memory_order_release);
    g_module_end.store(end, std::memory_order_release);
    if (emit) Emit(module);
  }
}

// The vDSO's name as glibc's loader gives it; musl's gives "".
constexpr char kVdsoName[] = "linux-vdso.so.1";

// Whether the object's program headers are those the kernel mapped: the
// main program's (AT_PHDR) or the vDSO's (in its first page, AT_SYSINFO_EHDR).
bool IsMainProgram(const dl_phdr_info& info) {
  return reinterpret_cast<uintptr_t>(info.dlpi_phdr) == getauxval(AT_PHDR);
}
bool IsVdso(const dl_phdr_info& info) {
  const uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
  return vdso != 0 && reinterpret_cast<uintptr_t>(info.dlpi_phdr) - vdso < 4096;
}

int OnLoadedObject(struct dl_phdr_info* info, size_t, void* data) {
  int& index = *static_cast<int*>(data);
  const bool is_main = index++ == 0;
  const char* path = info->dlpi_name;
  // glibc names the main program "" and the vDSO linux-vdso.so.1; musl
  // names the main program by argv[0] (relative, or any name a caller
  // chose) and the vDSO "": both named here as on glibc.
  if (is_main && IsMainProgram(*info)) {
    path = kMainProgram;
  } else if ((path == nullptr || path[0] == '\0') && IsVdso(*info)) {
    path = kVdsoName;
  } else if (path == nullptr || path[0] == '\0') {
    if (!is_main) return 0;  // nameless non-main objects: nothing to find
    path = kMainProgram;
  }
  AddObjectLocked(path, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
                  /*emit=*/true);
  return 0;
}

// Records the object _dl_find_object found, from its in-memory ELF header
// (the first mapped page of every ld.so-loaded object and of the vDSO).
void AddFoundObjectLocked(const dl_find_object& found, bool emit) {
  const auto* map = static_cast<const link_map*>(found.dlfo_link_map);
  const auto* ehdr = static_cast<const ElfW(Ehdr)*>(found.dlfo_map_start);
  if (map == nullptr || ehdr == nullptr) return;
  if (memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 ||
      ehdr->e_phentsize != sizeof(ElfW(Phdr)) || ehdr->e_phoff > 4096 ||
      ehdr->e_phoff + ehdr->e_phnum * sizeof(ElfW(Phdr)) > 4096) {
    return;
  }
  const auto* phdrs = reinterpret_cast<const ElfW(Phdr)*>(
      reinterpret_cast<const char*>(ehdr) + ehdr->e_phoff);
  const char* path = map->l_name;
  if (path == nullptr || path[0] == '\0') path = kMainProgram;
  AddObjectLocked(path, map->l_addr, phdrs, ehdr->e_phnum, emit);
}

// Adds the objects loaded at start if they are not in the table yet: each
// object the start record lists (loaded_symbols.h), as _dl_find_object
// describes it at the object's first address. Lock-free and
// async-signal-safe (no dl_iterate_phdr), so also at a first sample taken
// in a signal handler. Lock held.
void AddStartObjectsLocked(bool emit) {
  if (g_start_objects_added) return;
  g_start_objects_added = true;
  if (!HaveDlFindObject()) return;  // RecordLoadedModules added them
  for (int i = 0;; ++i) {
    const void* base = StartObjectBase(i);
    if (base == nullptr) break;
    dl_find_object found;
    if (FindObject(base, &found) == 0) AddFoundObjectLocked(found, emit);
  }
}

void EmitAllLocked() {
  AddStartObjectsLocked(/*emit=*/false);  // each emitted below
  const int end = g_module_end.load(std::memory_order_relaxed);
  for (int m = 0; m < end; ++m) {
    if (g_modules[m].used) Emit(g_modules[m]);
  }
}

// Records ModuleUnmap for entry m and frees it. Lock held.
void DropLocked(int m) {
  Module& module = g_modules[m];
  g_ranges[m].end.store(0, std::memory_order_release);
  module.used = false;
  ringfile::ModuleUnmap unmap;
  unmap.monotonic_ns = MonotonicNowNs();
  unmap.start = module.record.start;
  unmap.size = module.record.size;
  AppendRecord(ringfile::RecordType::kModuleUnmap, &unmap, sizeof(unmap),
               nullptr, 0);
}

// Without _dl_find_object: records the objects dl_iterate_phdr lists that
// the table lacks and drops the entries it no longer lists. dl_iterate_phdr
// takes the loader's (recursive) lock: only from an allocation's sampled
// path or at start, never from a signal handler. Lock held.
void RescanLocked() {
  g_last_rescan_ns = MonotonicNowNs();
  const int before = g_module_end.load(std::memory_order_relaxed);
  for (int m = 0; m < before; ++m) g_modules[m].seen = false;
  int index = 0;
  dl_iterate_phdr(OnLoadedObject, &index);
  bool dropped = false;
  for (int m = 0; m < before; ++m) {
    if (g_modules[m].used && !g_modules[m].seen) {
      DropLocked(m);
      dropped = true;
    }
  }
  if (ForgetUnloadedStartupObjects()) dropped = true;
  if (dropped) FlushUnwindRules();
}

// Drops (ModuleUnmap) entries whose object is gone. Lock held.
void DropUnloadedLocked() {
  if (!HaveDlFindObject()) {
    RescanLocked();
    return;
  }
  bool dropped = false;
  const int end = g_module_end.load(std::memory_order_relaxed);
  for (int m = 0; m < end; ++m) {
    Module& module = g_modules[m];
    if (!module.used || module.link_map == nullptr) continue;
    dl_find_object found;
    if (FindObject(reinterpret_cast<void*>(module.record.start), &found) == 0 &&
        found.dlfo_link_map == module.link_map &&
        found.dlfo_map_start == module.map_start) {
      continue;
    }
    DropLocked(m);
    dropped = true;
  }
  if (dropped) FlushUnwindRules();
}

}  // namespace

void RecordLoadedModules() {
  if (!Enabled()) return;
  // Added when the table is first used (AddStartObjectsLocked).
  if (HaveDlFindObject() && RecordStartObjects()) return;
  Lock();
  g_start_objects_added = true;
  int index = 0;
  dl_iterate_phdr(OnLoadedObject, &index);
  Unlock();
}

bool TryEmitAllModules() {
  if (!TryLock()) return false;
  EmitAllLocked();
  g_last_emit_ns.store(MonotonicNowNs(), std::memory_order_relaxed);
  Unlock();
  return true;
}

void RequestModuleReemit() {
  g_last_emit_ns.store(0, std::memory_order_relaxed);
}

void NoteStackModules(const uint64_t* frames, int frame_count) {
  int hint = -1;
  for (int i = 0; i < frame_count; ++i) {
    // A return address may sit just past its call's object: look up pc-1.
    const uint64_t pc = frames[i] - 1;
    if (KnownPc(pc, hint)) continue;
    if (!TryLock()) return;
    AddStartObjectsLocked(/*emit=*/true);
    if (!HaveDlFindObject()) {
      // One rescan finds every new object (or none is there: JIT code).
      if (MonotonicNowNs() - g_last_rescan_ns >= kMinRescanIntervalNs) {
        RescanLocked();
      }
      Unlock();
      return;
    }
    dl_find_object found;
    if (!KnownPc(pc, hint) &&
        FindObject(reinterpret_cast<void*>(pc), &found) == 0) {
      AddFoundObjectLocked(found, /*emit=*/true);
    }
    Unlock();
  }
}

void ResetModuleMapAfterFork() {
  if (g_locked.load(std::memory_order_relaxed)) Unlock();  // fork_child.h
  // The child's file is new: its first seconds get the early copies too.
  StoreIfDifferent(g_reemit_interval_ns, kFirstReemitIntervalNs);
}

bool MaybeReemitModules(uint64_t now_ns) {
  uint64_t last = g_last_emit_ns.load(std::memory_order_relaxed);
  const uint64_t interval =
      g_reemit_interval_ns.load(std::memory_order_relaxed);
  if (now_ns < last || now_ns - last < interval) return false;
  // One thread wins the interval; the others go on sampling.
  if (!g_last_emit_ns.compare_exchange_strong(last, now_ns,
                                              std::memory_order_relaxed)) {
    return false;
  }
  if (interval < kReemitIntervalNs) {
    g_reemit_interval_ns.store(
        interval * 2 < kReemitIntervalNs ? interval * 2 : kReemitIntervalNs,
        std::memory_order_relaxed);
  }
  if (!TryLock()) return false;
  DropUnloadedLocked();
  EmitAllLocked();
  Unlock();
  return true;
}

}  // namespace emitter
}  // namespace ringprof
