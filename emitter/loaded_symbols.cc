#include "emitter/loaded_symbols.h"

#include <elf.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emitter/arch/arch.h"
#include "emitter/plain_string.h"

namespace ringprof {
namespace emitter {
namespace {

// One loaded object's dynamic symbol table.
struct SymbolTable {
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  const ElfW(Half) * versions = nullptr;  // DT_VERSYM
  const ElfW(Verdef) * verdefs = nullptr;
  ElfW(Addr) bias = 0;
  // gnu_hash's header, decoded once (DecodeGnuHash).
  uint32_t bucket_count = 0;
  uint32_t symbol_offset = 0;
  uint32_t bloom_size = 0;
  uint32_t bloom_shift = 0;
  const ElfW(Addr) * bloom = nullptr;
  const uint32_t* buckets = nullptr;
  const uint32_t* chain = nullptr;  // indexed by symbol index
};

// Fills the table's GNU hash fields from its header; a table with no
// buckets or no Bloom filter words finds nothing (bucket_count 0).
void DecodeGnuHash(SymbolTable* table) {
  const uint32_t* header = table->gnu_hash;
  if (header == nullptr || header[0] == 0 || header[2] == 0) return;
  table->bucket_count = header[0];
  table->symbol_offset = header[1];
  table->bloom_size = header[2];
  table->bloom_shift = header[3];
  table->bloom = reinterpret_cast<const ElfW(Addr)*>(header + 4);
  table->buckets =
      reinterpret_cast<const uint32_t*>(table->bloom + table->bloom_size);
  table->chain = table->buckets + table->bucket_count - table->symbol_offset;
}

bool ReadSymbolTable(const dl_phdr_info& info, SymbolTable* table) {
  const ElfW(Dyn)* dynamic = DynamicSection(info);
  if (dynamic == nullptr) return false;
  const ElfW(Addr) bias = info.dlpi_addr;
  table->bias = bias;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    const ElfW(Addr) address = DynamicPointer(bias, d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB:
        table->symbols = reinterpret_cast<const ElfW(Sym)*>(address);
        break;
      case DT_STRTAB:
        table->strings = reinterpret_cast<const char*>(address);
        break;
      case DT_GNU_HASH:
        table->gnu_hash = reinterpret_cast<const uint32_t*>(address);
        break;
      case DT_HASH:
        table->sysv_hash = reinterpret_cast<const uint32_t*>(address);
        break;
      case DT_VERSYM:
        table->versions = reinterpret_cast<const ElfW(Half)*>(address);
        break;
      case DT_VERDEF:
        table->verdefs = reinterpret_cast<const ElfW(Verdef)*>(address);
        break;
      default:
        break;
    }
  }
  DecodeGnuHash(table);
  return table->symbols != nullptr && table->strings != nullptr &&
         (table->gnu_hash != nullptr || table->sysv_hash != nullptr);
}

uint32_t SysvHash(const char* name) {
  uint32_t h = 0;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(name);
       *p != '\0'; ++p) {
    h = (h << 4) + *p;
    h ^= (h >> 24) & 0xf0;
  }
  return h & 0x0fffffff;
}

// The name of version index `index` in the object's version definitions.
const char* VersionName(const SymbolTable& table, ElfW(Half) index) {
  const ElfW(Verdef)* def = table.verdefs;
  while (def != nullptr) {
    if (def->vd_ndx == index) {
      const auto* aux = reinterpret_cast<const ElfW(Verdaux)*>(
          reinterpret_cast<const char*>(def) + def->vd_aux);
      return table.strings + aux->vda_name;
    }
    if (def->vd_next == 0) break;
    def = reinterpret_cast<const ElfW(Verdef)*>(
        reinterpret_cast<const char*>(def) + def->vd_next);
  }
  return nullptr;
}

// Whether symbol `index` (named `name`) is a definition the request may
// take (see loaded_symbols.h).
bool Matches(const SymbolTable& table, uint32_t index,
             const SymbolRequest& request) {
  const ElfW(Sym)& symbol = table.symbols[index];
  if (symbol.st_shndx == SHN_UNDEF) return false;
  if (symbol.st_value == 0 && symbol.st_shndx != SHN_ABS) return false;
  const int type = ELF64_ST_TYPE(symbol.st_info);
  const int binding = ELF64_ST_BIND(symbol.st_info);
  if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE &&
      type != STT_COMMON && type != STT_GNU_IFUNC) {
    return false;
  }
  if (binding != STB_GLOBAL && binding != STB_WEAK &&
      binding != STB_GNU_UNIQUE) {
    return false;
  }
  if (!SameString(table.strings + symbol.st_name, request.name)) return false;
  const ElfW(Half) version =
      table.versions != nullptr ? table.versions[index] : VER_NDX_GLOBAL;
  const ElfW(Half) version_index = version & 0x7fff;
  if (request.version == nullptr) {
    // The default: unversioned, or name@@V (not hidden).
    return version_index <= VER_NDX_GLOBAL || (version & 0x8000) == 0;
  }
  if (version_index <= VER_NDX_GLOBAL) return false;
  const char* name = VersionName(table, version_index);
  return name != nullptr && SameString(name, request.version);
}

// Whether the table's Bloom filter lets the name with this GNU hash through
// (false: the object certainly does not define it).
bool BloomMayHold(const SymbolTable& table, uint32_t hash) {
  if (table.bucket_count == 0) return false;
  constexpr uint32_t kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = table.bloom[(hash / kBits) % table.bloom_size];
  const ElfW(Addr) mask =
      (ElfW(Addr){1} << (hash % kBits)) |
      (ElfW(Addr){1} << ((hash >> table.bloom_shift) % kBits));
  return (word & mask) == mask;
}

// The index of the first symbol of the hash's chain whose hash matches
// `hash` and for which `match(index)` holds, or 0.
template <typename Match>
uint32_t FindInGnuChain(const SymbolTable& table, uint32_t hash, Match match) {
  if (!BloomMayHold(table, hash)) return 0;
  const uint32_t* chain = table.chain;
  uint32_t index = table.buckets[hash % table.bucket_count];
  if (index < table.symbol_offset) return 0;
  for (;; ++index) {
    const uint32_t entry = chain[index];
    if ((entry | 1) == (hash | 1) && match(index)) return index;
    if ((entry & 1) != 0) return 0;
  }
}

// The index of the request's definition in `table`, or 0.
uint32_t FindInGnuHash(const SymbolTable& table, const SymbolRequest& request,
                       uint32_t hash) {
  return FindInGnuChain(table, hash, [&](uint32_t index) {
    return Matches(table, index, request);
  });
}

uint32_t FindInSysvHash(const SymbolTable& table, const SymbolRequest& request,
                        uint32_t hash) {
  const uint32_t bucket_count = table.sysv_hash[0];
  if (bucket_count == 0) return 0;
  const uint32_t* buckets = table.sysv_hash + 2;
  const uint32_t* chain = buckets + bucket_count;
  for (uint32_t index = buckets[hash % bucket_count]; index != STN_UNDEF;
       index = chain[index]) {
    if (Matches(table, index, request)) return index;
  }
  return 0;
}

struct ObjectSpan {
  const void* base = nullptr;
  bool holds_self = false;
};

ObjectSpan SpanOf(const dl_phdr_info& info) {
  const uintptr_t self = reinterpret_cast<uintptr_t>(&LookUpSymbols);
  ElfW(Addr) lowest = ~ElfW(Addr){0};
  bool holds_self = false;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info.dlpi_phdr[i];
    if (phdr.p_type != PT_LOAD) continue;
    const ElfW(Addr) start = info.dlpi_addr + phdr.p_vaddr;
    if (phdr.p_vaddr < lowest) lowest = phdr.p_vaddr;
    if (self >= start && self - start < phdr.p_memsz) holds_self = true;
  }
  return {reinterpret_cast<const void*>(info.dlpi_addr + lowest), holds_self};
}

const char* FileName(const char* path) { return AfterLastSlash(path); }

bool IsVdso(const char* path) {
  return HasPrefix(path, "linux-vdso", 10) || HasPrefix(path, "linux-gate", 10);
}

// A name's hashes, computed on its first probe of the pass (0: not yet;
// a real hash of 0 is merely recomputed).
struct NameHashes {
  uint32_t gnu;
  uint32_t sysv;
};

struct Pass {
  SymbolRequest* requests;
  int count;
  int unresolved;
  bool after_self;
  NameHashes* hashes;  // for the first `hashed` requests
  int hashed;
  // Every request is kNext (objects up to this one's are skipped), or every
  // one is kBeforeSelf (the pass ends at this one's object).
  bool all_next;
  bool all_before_self;
};

uint32_t GnuHashOf(Pass& pass, int r) {
  const SymbolRequest& request = pass.requests[r];
  if (request.gnu_hash != 0) return request.gnu_hash;
  if (r >= pass.hashed) return GnuSymbolHash(request.name);
  uint32_t& hash = pass.hashes[r].gnu;
  if (hash == 0) hash = GnuSymbolHash(request.name);
  return hash;
}

uint32_t SysvHashOf(Pass& pass, int r) {
  if (r >= pass.hashed) return SysvHash(pass.requests[r].name);
  uint32_t& hash = pass.hashes[r].sysv;
  if (hash == 0) hash = SysvHash(pass.requests[r].name);
  return hash;
}

bool Applies(const SymbolRequest& request, const ObjectSpan& span,
             bool after_self, bool self_seen, const char* path) {
  switch (request.scope) {
    case SymbolScope::kNext:
      return after_self && !span.holds_self;
    case SymbolScope::kBeforeSelf:
      return !self_seen;
    case SymbolScope::kFirst:
      return true;
    case SymbolScope::kSelf:
      return span.holds_self;
    case SymbolScope::kObjectNamed:
      return request.object_name != nullptr &&
             SameString(FileName(path), request.object_name);
  }
  return false;
}

void* AddressOf(const SymbolTable& table, uint32_t index) {
  const ElfW(Sym)& symbol = table.symbols[index];
  const ElfW(Addr) value = symbol.st_shndx == SHN_ABS
                               ? symbol.st_value
                               : table.bias + symbol.st_value;
  if (ELF64_ST_TYPE(symbol.st_info) == STT_GNU_IFUNC) {
    return arch::CallIfuncResolver(value);  // as the loader calls it
  }
  return reinterpret_cast<void*>(value);
}

// One loaded object as a pass needs it.
// (Every member has an initializer: the tables of them below are zero
// pages until used, with no initializer to run at load.)
struct LoadedObject {
  const char* path = nullptr;
  ObjectSpan span;
  bool vdso = false;
  bool table_ok = false;  // `table` was read (ReadSymbolTable succeeded)
  SymbolTable table;
};

LoadedObject Describe(const dl_phdr_info& info, bool read_table) {
  LoadedObject object;
  object.path = info.dlpi_name != nullptr ? info.dlpi_name : "";
  object.span = SpanOf(info);
  object.vdso = IsVdso(object.path);
  object.table_ok =
      read_table && !object.vdso && ReadSymbolTable(info, &object.table);
  return object;
}

// Resolves the pass's requests that apply to `object`; true when none is
// left unresolved. With `info` (a live pass), the object's table is read
// on its first use.
bool Probe(Pass& pass, LoadedObject& object, const dl_phdr_info* info) {
  const bool after_self = pass.after_self;
  const bool self_seen = after_self || object.span.holds_self;
  if (object.span.holds_self) pass.after_self = true;
  if (pass.all_before_self && self_seen) return true;
  if (object.vdso || (pass.all_next && !after_self)) return false;
  for (int r = 0; r < pass.count; ++r) {
    SymbolRequest& request = pass.requests[r];
    if (request.address != nullptr ||
        !Applies(request, object.span, after_self, self_seen, object.path)) {
      continue;
    }
    if (!object.table_ok) {
      if (info == nullptr || !ReadSymbolTable(*info, &object.table)) {
        return false;
      }
      object.table_ok = true;
    }
    const SymbolTable& table = object.table;
    const uint32_t index =
        table.gnu_hash != nullptr
            ? FindInGnuHash(table, request, GnuHashOf(pass, r))
            : FindInSysvHash(table, request, SysvHashOf(pass, r));
    if (index == 0) continue;
    request.address = AddressOf(table, index);
    request.object_base = object.span.base;
    request.object_path = object.path;
    --pass.unresolved;
  }
  return pass.unresolved == 0;
}

int OnObject(dl_phdr_info* info, size_t, void* data) {
  Pass& pass = *static_cast<Pass*>(data);
  LoadedObject object = Describe(*info, /*read_table=*/false);
  return Probe(pass, object, info) ? 1 : 0;
}

// The loaded objects as the last pass found them, reused while the loader
// reports no object added or removed since (dl_phdr_info's dlpi_adds and
// dlpi_subs): the passes at start then decode each object's headers and
// dynamic section once, not once per pass. One pass at a time uses it
// (`busy`); a pass that finds it busy, or more objects than it holds, walks
// the objects itself.
// A process with more objects than this at some pass stops using it.
constexpr int kMaxCachedObjects = 16;
struct ObjectCache {
  std::atomic<bool> busy{false};
  bool valid = false;
  bool overflowed = false;
  unsigned long long adds = 0;
  unsigned long long subs = 0;
  int count = 0;
  LoadedObject objects[kMaxCachedObjects];
};
ObjectCache g_cache;

bool HasCounters(size_t size) {
  return size >=
         offsetof(dl_phdr_info, dlpi_subs) + sizeof(dl_phdr_info::dlpi_subs);
}

// dl_iterate_phdr callback: stops at the first object when the cache is
// still current, else records every object.
int Refresh(dl_phdr_info* info, size_t size, void* data) {
  ObjectCache& cache = *static_cast<ObjectCache*>(data);
  if (cache.count == 0) {
    if (!HasCounters(size)) {
      cache.valid = false;
      return 1;
    }
    if (cache.valid && info->dlpi_adds == cache.adds &&
        info->dlpi_subs == cache.subs) {
      return 1;
    }
    cache.valid = true;
    cache.adds = info->dlpi_adds;
    cache.subs = info->dlpi_subs;
  }
  if (cache.count == kMaxCachedObjects) {
    cache.valid = false;
    cache.overflowed = true;
    return 1;
  }
  cache.objects[cache.count++] = Describe(*info, /*read_table=*/true);
  return 0;
}

// Runs the pass over the cached objects; false (nothing done) when the
// cache cannot be used.
bool PassOverCache(Pass& pass) {
  if (g_cache.busy.exchange(true, std::memory_order_acquire)) return false;
  if (g_cache.overflowed) {
    g_cache.busy.store(false, std::memory_order_release);
    return false;
  }
  const int count = g_cache.count;
  g_cache.count = 0;
  dl_iterate_phdr(Refresh, &g_cache);
  if (g_cache.count == 0) g_cache.count = count;  // still current
  const bool usable = g_cache.valid;
  if (usable) {
    for (int i = 0; i < g_cache.count; ++i) {
      if (Probe(pass, g_cache.objects[i], nullptr)) break;
    }
  }
  g_cache.busy.store(false, std::memory_order_release);
  return usable;
}

// The objects RecordStartObjects found: written once, then only read.
// (All zero until recorded: in .bss, no page of it touched before.)
struct StartObjects {
  std::atomic<bool> recorded{false};  // publishes `count` and `objects`
  std::atomic<bool> too_many{false};  // found more than kMaxStartObjects
  int count = 0;
  LoadedObject objects[kMaxStartObjects];
};
StartObjects g_start;

int OnStartObject(dl_phdr_info* info, size_t, void* data) {
  int& count = *static_cast<int*>(data);
  if (count > kMaxStartObjects) return 1;
  if (count < kMaxStartObjects) {
    g_start.objects[count] = Describe(*info, /*read_table=*/true);
  }
  ++count;  // kMaxStartObjects + 1: too many
  return 0;
}

// Starts a pass: clears the requests' results and notes their scopes.
Pass BeginPass(SymbolRequest* requests, int count, NameHashes* hashes,
               int hashed) {
  Pass pass{requests, count, count, false, hashes, hashed, true, true};
  for (int r = 0; r < count; ++r) {
    requests[r].address = nullptr;
    requests[r].object_base = nullptr;
    requests[r].object_path = nullptr;
    pass.all_next = pass.all_next && requests[r].scope == SymbolScope::kNext;
    pass.all_before_self =
        pass.all_before_self && requests[r].scope == SymbolScope::kBeforeSelf;
  }
  return pass;
}

}  // namespace

const ElfW(Dyn) * DynamicSection(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    if (info.dlpi_phdr[i].p_type == PT_DYNAMIC) {
      return reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr +
                                                info.dlpi_phdr[i].p_vaddr);
    }
  }
  return nullptr;
}

void LookUpSymbols(SymbolRequest* requests, int count) {
  NameHashes hashes[kMaxHashedRequests] = {};
  Pass pass = BeginPass(requests, count, hashes, kMaxHashedRequests);
  if (count > 0 && !PassOverCache(pass)) dl_iterate_phdr(OnObject, &pass);
}

bool RecordStartObjects() {
  if (g_start.recorded.load(std::memory_order_acquire)) return true;
  if (g_start.too_many.load(std::memory_order_relaxed)) return false;
  int count = 0;
  dl_iterate_phdr(OnStartObject, &count);
  if (count > kMaxStartObjects) {
    g_start.too_many.store(true, std::memory_order_relaxed);
    return false;
  }
  g_start.count = count;
  g_start.recorded.store(true, std::memory_order_release);
  return true;
}

const void* StartObjectBase(int index) {
  if (!g_start.recorded.load(std::memory_order_acquire) || index < 0 ||
      index >= g_start.count) {
    return nullptr;
  }
  return g_start.objects[index].span.base;
}

bool LookUpStartSymbols(SymbolRequest* requests, int count) {
  if (!g_start.recorded.load(std::memory_order_acquire)) return false;
  const int objects = g_start.count;
  // Its callers resolve a name or a few; further names are hashed once per
  // object (a constructor's passes give each its GNU hash).
  constexpr int kHashed = 8;
  NameHashes hashes[kHashed] = {};
  Pass pass = BeginPass(requests, count, hashes, kHashed);
  for (int i = 0; i < objects && pass.unresolved > 0; ++i) {
    LoadedObject object = g_start.objects[i];  // Probe may not write it
    if (Probe(pass, object, nullptr)) break;
  }
  return true;
}

bool MaybeDefined(SymbolScope scope, const uint32_t* gnu_hashes, int count) {
  if ((scope != SymbolScope::kBeforeSelf && scope != SymbolScope::kNext) ||
      !RecordStartObjects()) {
    return true;
  }
  bool self_seen = false;
  for (int i = 0; i < g_start.count; ++i) {
    const LoadedObject& object = g_start.objects[i];
    const bool after_self = self_seen;
    self_seen = self_seen || object.span.holds_self;
    if (scope == SymbolScope::kBeforeSelf && self_seen) return false;
    if ((scope == SymbolScope::kNext && !after_self) || object.vdso) continue;
    if (!object.table_ok || object.table.gnu_hash == nullptr) return true;
    for (int n = 0; n < count; ++n) {
      if (FindInGnuChain(object.table, gnu_hashes[n],
                         [](uint32_t) { return true; }) != 0) {
        return true;
      }
    }
  }
  // kNext: none of the objects after this code's may; kBeforeSelf: this
  // code is in none of them (it cannot tell).
  return scope == SymbolScope::kBeforeSelf || !self_seen;
}

void LookUpSymbolsAtStart(SymbolRequest* requests, int count) {
  if (!RecordStartObjects() || !LookUpStartSymbols(requests, count)) {
    LookUpSymbols(requests, count);
  }
}

void* NextSymbol(const char* name) {
  SymbolRequest request{name, SymbolScope::kNext};
  if (!LookUpStartSymbols(&request, 1)) LookUpSymbols(&request, 1);
  return request.address;
}

bool ObjectLoaded(const char* file_name) {
  struct Search {
    const char* file_name;
    bool found;
  } search{file_name, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        Search& s = *static_cast<Search*>(data);
        if (info->dlpi_name == nullptr ||
            !SameString(FileName(info->dlpi_name), s.file_name)) {
          return 0;
        }
        s.found = true;
        return 1;
      },
      &search);
  return search.found;
}

}  // namespace emitter
}  // namespace ringprof
