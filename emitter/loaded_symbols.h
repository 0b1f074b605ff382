// Symbol lookup in the objects the dynamic loader has loaded, read straight
// from their dynamic symbol tables (GNU or SysV hash, symbol versions):
// what dlsym(RTLD_NEXT / RTLD_DEFAULT, name) and dlvsym would answer, for
// any number of names in one pass over the objects.
//
// Why not libdl: a process pays for every dlsym (the loader's lock, a
// setjmp, and for each name no object defines a formatted error message),
// and the emitter resolves some seventy names at start, most of which
// (jemalloc's API, C++ operator new in a C program) nothing defines. And
// before glibc 2.34 dlsym lives in libdl.so.2, which every process would
// have to load just for the emitter; with this, libringprof.so needs only
// libc (emitter/BUILD.bazel, glibc_versions_test).
//
// Semantics, as the loader's for the objects loaded at start:
//  - objects are searched in the loader's order (dl_iterate_phdr's, the
//    global search order of everything loaded at start); the first
//    definition wins. An object dlopen'ed with RTLD_LOCAL is searched too
//    (dlsym would not see it); the vDSO is not.
//  - a definition is a symbol of an allocated section (not undefined, not
//    a canonical PLT entry of the executable), global, weak or unique,
//    not TLS; an STT_GNU_IFUNC is resolved by calling its resolver, as the
//    loader does, with the arguments the architecture's loader passes
//    (arch/arch.h).
//  - without a version, the default version (name@@V or unversioned) is
//    taken, never a hidden one (name@V), as dlsym does; with one, exactly
//    that version, as dlvsym.
//
// Contract: takes the loader's lock (dl_iterate_phdr): never from a signal
// handler; fine in malloc (the lock is recursive, and nothing here
// allocates). Thread-safe.
#ifndef RINGPROF_EMITTER_LOADED_SYMBOLS_H_
#define RINGPROF_EMITTER_LOADED_SYMBOLS_H_

#include <link.h>

#include <cstdint>

namespace ringprof {
namespace emitter {

enum class SymbolScope {
  kNext,         // objects after the one holding this code (RTLD_NEXT)
  kFirst,        // every object (RTLD_DEFAULT)
  kSelf,         // only the object holding this code
  kObjectNamed,  // only the object whose file name is `object_name`
  kBeforeSelf,   // objects before the one holding this code: what shadows it
};

// The GNU hash of a symbol name (what DT_GNU_HASH tables are built on), at
// compile time for fixed names, so that a request need not hash its name.
constexpr uint32_t GnuSymbolHash(const char* name) {
  uint32_t hash = 5381;
  for (; *name != '\0'; ++name) {
    hash = hash * 33 + static_cast<unsigned char>(*name);
  }
  return hash;
}

struct SymbolRequest {
  const char* name;
  SymbolScope scope;
  const char* version = nullptr;      // null: the default version
  const char* object_name = nullptr;  // kObjectNamed: "libgcc_s.so.1"
  // Results (all null when no object defines the name).
  void* address = nullptr;
  // The defining object's lowest mapped address (dladdr's dli_fbase) and
  // its name as the loader knows it ("" for the main program).
  const void* object_base = nullptr;
  const char* object_path = nullptr;
  // GnuSymbolHash(name) when the caller has it; 0: computed when needed.
  uint32_t gnu_hash = 0;
};

// Resolves every request in one pass over the loaded objects. Each name is
// hashed once per pass (up to kMaxHashedRequests of them; further ones once
// per object), and an object's Bloom filter rejects most names it does not
// define without touching its symbols, so a pass costs about one hash per
// name plus one probe per (name, object).
void LookUpSymbols(SymbolRequest* requests, int count);
inline constexpr int kMaxHashedRequests = 128;

// dlsym(RTLD_NEXT, name) from libringprof.so: the address or null. Among
// the objects loaded at start once they are recorded (RecordStartObjects:
// then without the loader's lock, so an interposer may resolve its next
// function on first use even in a signal handler), else among all.
void* NextSymbol(const char* name);

// The objects loaded when RecordStartObjects ran (the library constructor
// calls it), kept for lookups that must not take the loader's lock: a
// stub that resolves its function on first use, possibly in a signal
// handler that interrupted the loader. Objects loaded at start are never
// unloaded, so their symbol tables stay valid.
//
// RecordStartObjects: one pass over the loaded objects, on the first call
// only (later calls answer as it did); false when there are more than
// kMaxStartObjects of them (then nothing is recorded and LookUpStartSymbols
// always answers false). Takes the loader's lock; for the constructors,
// before any other thread could call LookUpStartSymbols.
//
// LookUpStartSymbols: resolves the requests as LookUpSymbols would have
// when the objects were recorded (objects loaded since are not searched);
// false, leaving the requests alone, when nothing was recorded. Lock-free,
// allocation-free and async-signal-safe (but for an STT_GNU_IFUNC's
// resolver, which it calls as the loader does).
inline constexpr int kMaxStartObjects = 32;
bool RecordStartObjects();
bool LookUpStartSymbols(SymbolRequest* requests, int count);

// The lowest mapped address (dladdr's dli_fbase: the ELF header of an
// object the loader mapped) of the index-th object RecordStartObjects
// recorded, in the loader's order; null past the last one or when nothing
// was recorded. Lock-free, allocation-free and async-signal-safe: what
// rebuilds the list of objects in a signal handler, with _dl_find_object.
const void* StartObjectBase(int index);

// For the library's constructors (and what runs before them): the requests
// resolved among the objects loaded at start (recording them first if
// nothing has yet), without a pass over the loader's list each time; by
// LookUpSymbols where they cannot be recorded. Not for names an object the
// emitter itself loads later must answer (libgcc_s.so.1, opened on purpose).
void LookUpSymbolsAtStart(SymbolRequest* requests, int count);

// Whether an object in `scope` (kBeforeSelf: the program, an earlier
// preload; kNext: the objects after the one holding this code) may define
// one of the names with these GNU hashes (GnuSymbolHash), by hashes only
// (Bloom filter, then the hashes of the bucket's chain; no name compared),
// among the objects loaded at start (recorded first if need be): false is
// certain; true means maybe (a symbol with the same hash, or it could not
// tell: an object without a GNU hash table, objects not recorded, another
// scope). For the constructors, like LookUpSymbolsAtStart.
bool MaybeDefined(SymbolScope scope, const uint32_t* gnu_hashes, int count);

// A loaded object's dynamic section (PT_DYNAMIC), or null.
const ElfW(Dyn) * DynamicSection(const dl_phdr_info& info);

// The run-time address of a pointer-valued dynamic entry (DT_SYMTAB, ...):
// the loader relocates a writable dynamic section in place, while a
// read-only one keeps link-time values, below the object's bias.
inline ElfW(Addr) DynamicPointer(ElfW(Addr) bias, ElfW(Addr) value) {
  return value < bias ? value + bias : value;
}

// Whether an object with this file name (the last component of its path,
// e.g. "libgcc_s.so.1") is loaded.
bool ObjectLoaded(const char* file_name);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_LOADED_SYMBOLS_H_
