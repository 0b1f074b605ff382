#include "emitter/loaded_symbols.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "emitter/arch/arch.h"

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
};

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
  return table->symbols != nullptr && table->strings != nullptr &&
         (table->gnu_hash != nullptr || table->sysv_hash != nullptr);
}

uint32_t GnuHash(const char* name) {
  uint32_t h = 5381;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(name);
       *p != '\0'; ++p) {
    h = h * 33 + *p;
  }
  return h;
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
  if (strcmp(table.strings + symbol.st_name, request.name) != 0) return false;
  const ElfW(Half) version =
      table.versions != nullptr ? table.versions[index] : VER_NDX_GLOBAL;
  const ElfW(Half) version_index = version & 0x7fff;
  if (request.version == nullptr) {
    // The default: unversioned, or name@@V (not hidden).
    return version_index <= VER_NDX_GLOBAL || (version & 0x8000) == 0;
  }
  if (version_index <= VER_NDX_GLOBAL) return false;
  const char* name = VersionName(table, version_index);
  return name != nullptr && strcmp(name, request.version) == 0;
}

// The index of the request's definition in `table`, or 0.
uint32_t FindInGnuHash(const SymbolTable& table, const SymbolRequest& request,
                       uint32_t hash) {
  const uint32_t* header = table.gnu_hash;
  const uint32_t bucket_count = header[0];
  const uint32_t symbol_offset = header[1];
  const uint32_t bloom_size = header[2];
  const uint32_t bloom_shift = header[3];
  if (bucket_count == 0 || bloom_size == 0) return 0;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(header + 4);
  constexpr uint32_t kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(hash / kBits) % bloom_size];
  const ElfW(Addr) mask = (ElfW(Addr){1} << (hash % kBits)) |
                          (ElfW(Addr){1} << ((hash >> bloom_shift) % kBits));
  if ((word & mask) != mask) return 0;
  const uint32_t* buckets =
      reinterpret_cast<const uint32_t*>(bloom + bloom_size);
  const uint32_t* chain = buckets + bucket_count - symbol_offset;
  uint32_t index = buckets[hash % bucket_count];
  if (index < symbol_offset) return 0;
  for (;; ++index) {
    const uint32_t entry = chain[index];
    if ((entry | 1) == (hash | 1) && Matches(table, index, request)) {
      return index;
    }
    if ((entry & 1) != 0) return 0;
  }
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
  const void* base;
  bool holds_self;
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

const char* FileName(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

bool IsVdso(const char* path) {
  return strncmp(path, "linux-vdso", 10) == 0 ||
         strncmp(path, "linux-gate", 10) == 0;
}

struct Pass {
  SymbolRequest* requests;
  int count;
  int unresolved;
  bool after_self;
};

bool Applies(const SymbolRequest& request, const ObjectSpan& span,
             bool after_self, const char* path) {
  switch (request.scope) {
    case SymbolScope::kNext:
      return after_self && !span.holds_self;
    case SymbolScope::kFirst:
      return true;
    case SymbolScope::kSelf:
      return span.holds_self;
    case SymbolScope::kObjectNamed:
      return request.object_name != nullptr &&
             strcmp(FileName(path), request.object_name) == 0;
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

int OnObject(dl_phdr_info* info, size_t, void* data) {
  Pass& pass = *static_cast<Pass*>(data);
  const char* path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const ObjectSpan span = SpanOf(*info);
  const bool after_self = pass.after_self;
  if (span.holds_self) pass.after_self = true;
  if (IsVdso(path)) return 0;
  SymbolTable table;
  bool table_read = false;
  for (int r = 0; r < pass.count; ++r) {
    SymbolRequest& request = pass.requests[r];
    if (request.address != nullptr ||
        !Applies(request, span, after_self, path)) {
      continue;
    }
    if (!table_read) {
      if (!ReadSymbolTable(*info, &table)) return 0;
      table_read = true;
    }
    const uint32_t index =
        table.gnu_hash != nullptr
            ? FindInGnuHash(table, request, GnuHash(request.name))
            : FindInSysvHash(table, request, SysvHash(request.name));
    if (index == 0) continue;
    request.address = AddressOf(table, index);
    request.object_base = span.base;
    request.object_path = path;
    --pass.unresolved;
  }
  return pass.unresolved == 0 ? 1 : 0;
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
  Pass pass{requests, count, 0, false};
  for (int r = 0; r < count; ++r) {
    requests[r].address = nullptr;
    requests[r].object_base = nullptr;
    requests[r].object_path = nullptr;
  }
  pass.unresolved = count;
  if (count > 0) dl_iterate_phdr(OnObject, &pass);
}

void* NextSymbol(const char* name) {
  SymbolRequest request{name, SymbolScope::kNext};
  LookUpSymbols(&request, 1);
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
            strcmp(FileName(info->dlpi_name), s.file_name) != 0) {
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
