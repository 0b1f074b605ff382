// Symbolizer over elfutils libelf and libdw, with its own indexes.
//
// One ModuleIndex per module key (build-id, or pid and path for a module
// without one): a SymbolTable from the best symbol table found (the
// binary's .symtab, a debug file's, else .dynsym plus .eh_frame function
// ranges), and, when DWARF exists, the Dwarf session over sections read
// into memory, a sorted table of compilation-unit ranges, and per-unit
// function indexes and line tables built on first use. Module addresses
// are ELF virtual addresses: lookup address = runtime address - load_bias.
// Results are cached per (module, lookup address); modules are kept in
// least-recently-used order and dropped when the estimated total exceeds
// the budget.

#include "collector/symbolize/symbolizer.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/symbolize/demangle.h"
#include "collector/symbolize/minidebuginfo.h"
#include "collector/symbolize/module_file.h"
#include "collector/symbolize/symbol_table.h"

namespace ringprof {
namespace collector {
namespace {

// This file's metrics, registered together on first use.
struct FileMetrics {
  // Distinct addresses (per module) that resolved to nothing: exported on
  // /metrics; each is counted once, as the result is cached.
  Counter& misses = Metrics::Get().GetCounter(
      "ringprof_symbolization_misses_total",
      "Distinct addresses that resolved to no function (shown as "
      "module+0xoffset).");
  Counter& resolved = Metrics::Get().GetCounter(
      "ringprof_symbolizer_addresses_resolved_total",
      "Distinct addresses resolved to at least one function.");
  Counter& rejected = Metrics::Get().GetCounter(
      "ringprof_symbolizer_files_rejected_total",
      "Module and debug files not used: not a regular file, over "
      "--symbols-max-file-mib, not a sound ELF, or another build-id.");
  Counter& roots_denied = Metrics::Get().GetCounter(
      "ringprof_symbolizer_roots_denied_total",
      "Opens of a process's /proc/<pid>/root refused (permission denied): "
      "its binaries can be found by build-id only.");
  Counter& files_denied = Metrics::Get().GetCounter(
      "ringprof_symbolizer_files_denied_total",
      "Workload binaries the collector may not read (permission denied).");
  Counter& minidebuginfo_rejected = Metrics::Get().GetCounter(
      "ringprof_symbolizer_minidebuginfo_rejected_total",
      "Stripped binaries whose MiniDebugInfo (.gnu_debugdata) was refused: "
      "too large, not xz, a decompression bomb, or not a sound ELF.");
  Counter& modules_unnamed = Metrics::Get().GetCounter(
      "ringprof_symbolizer_modules_unnamed_total",
      "Modules with an address left without a function name; the reason "
      "for each is logged once.");
  Counter& evictions = Metrics::Get().GetCounter(
      "ringprof_symbolizer_evictions_total",
      "Modules dropped from the symbolizer cache to stay within "
      "--symbols-cache-mib.");
  Gauge& cache_bytes = Metrics::Get().GetGauge(
      "ringprof_symbolizer_cache_bytes",
      "Estimated memory held by symbol indexes, DWARF and cached results.");
  Gauge& modules = Metrics::Get().GetGauge(
      "ringprof_symbolizer_modules",
      "Modules (by build-id) indexed in the symbolizer cache.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

// A build-id becomes part of file names (.build-id/ab/cdef...): only
// lower-case hex of a sane length may; a module claiming anything else
// resolves nothing.
bool UsableBuildId(const std::string& id) {
  return id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// "<dir>/.build-id/ab/cdef...<suffix>", the layout of /usr/lib/debug.
std::string BuildIdPath(absl::string_view dir, absl::string_view build_id_hex,
                        absl::string_view suffix) {
  return absl::StrCat(dir, "/.build-id/", build_id_hex.substr(0, 2), "/",
                      build_id_hex.substr(2), suffix);
}

// The demangled linkage name of a subprogram or inlined-subroutine DIE,
// following DW_AT_abstract_origin / DW_AT_specification; *qualified says so.
// Otherwise its plain DW_AT_name: C functions, and C++ functions with
// internal linkage (anonymous namespaces, lambdas), for which GCC emits no
// linkage name. A linkage name the GNU demangler rejects (some conversion
// operator templates) also yields the plain name, unless there is none.
std::string DieFunctionName(Dwarf_Die* die, bool* qualified) {
  Dwarf_Attribute attr;
  const char* linkage = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
    linkage = dwarf_formstring(&attr);
  }
  std::string name;
  *qualified = linkage != nullptr && Demangle(linkage, &name);
  if (*qualified) return name;
  if (dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) {
    const char* plain = dwarf_formstring(&attr);
    if (plain != nullptr) return plain;
  }
  return linkage != nullptr ? linkage : "";
}

// DW_AT_call_file / DW_AT_call_line of an inlined-subroutine DIE: where the
// inlined function was called from, in its caller's terms.
void CallSite(Dwarf_Die* inlined, Dwarf_Die* cudie, std::string* file,
              int64_t* line) {
  file->clear();
  *line = 0;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) ==
      0) {
    *line = static_cast<int64_t>(value);
  }
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) ==
          0 &&
      dwarf_getsrcfiles(cudie, &files, &file_count) == 0 &&
      value < file_count) {
    const char* name = dwarf_filesrc(files, value, nullptr, nullptr);
    if (name != nullptr) *file = name;
  }
}

// The address ranges of every function definition in one CU, sorted, so a
// lookup finds its function by binary search instead of walking the CU
// (whose top level holds thousands of type and declaration DIEs in C++).
struct FunctionRange {
  Dwarf_Addr low;   // inclusive
  Dwarf_Addr high;  // exclusive
  Dwarf_Die die;    // a DW_TAG_subprogram; valid while the Dwarf is open
  Dwarf_Addr max_high_up_to_here;  // max `high` of this and earlier ranges
};
using CuFunctionIndex = std::vector<FunctionRange>;

// Adds the ranges of the subprograms under `parent`, at any depth (local
// classes and nested functions live inside other functions).
void IndexFunctions(Dwarf_Die* parent, CuFunctionIndex* index) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t offset = 0;
           (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;) {
        if (low < high) index->push_back({low, high, child, 0});
      }
    }
    if (dwarf_haschildren(&child) == 1) IndexFunctions(&child, index);
  } while (dwarf_siblingof(&child, &child) == 0);
}

CuFunctionIndex BuildFunctionIndex(Dwarf_Die* cudie) {
  CuFunctionIndex index;
  IndexFunctions(cudie, &index);
  std::sort(index.begin(), index.end(),
            [](const FunctionRange& a, const FunctionRange& b) {
              return a.low < b.low;
            });
  Dwarf_Addr max_high = 0;
  for (FunctionRange& range : index) {
    max_high = std::max(max_high, range.high);
    range.max_high_up_to_here = max_high;
  }
  return index;
}

// The innermost indexed function containing `pc`, or null. Ranges overlap
// only for nested functions, which start inside their parent, so the
// containing range with the largest start is the innermost; the walk back
// stops once no earlier range reaches pc (max_high_up_to_here).
const FunctionRange* FindFunction(const CuFunctionIndex& index, Dwarf_Addr pc) {
  auto it = std::upper_bound(index.begin(), index.end(), pc,
                             [](Dwarf_Addr value, const FunctionRange& range) {
                               return value < range.low;
                             });
  while (it != index.begin()) {
    --it;
    if (pc < it->high) return &*it;
    if (it->max_high_up_to_here <= pc) break;
  }
  return nullptr;
}

// Appends to *path the DIEs under `parent` down to the innermost scope whose
// address ranges contain `pc`: inlined subroutines and lexical blocks,
// outermost first. Only containing subtrees are entered, so a lookup costs
// the siblings along one path rather than the whole function.
bool FindScopePath(Dwarf_Die* parent, Dwarf_Addr pc,
                   std::vector<Dwarf_Die>* path) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return false;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
      case DW_TAG_lexical_block:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
        if (dwarf_haspc(&child, pc) == 1) {
          path->push_back(child);
          FindScopePath(&child, pc, path);
          return true;
        }
        break;
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module:
        if (FindScopePath(&child, pc, path)) return true;
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// libdebuginfod's client API, loaded on first use with dlopen so the
// collector neither links nor requires it (Debian: libdebuginfod1). Loaded
// once per process and never unloaded: libcurl and the TLS libraries under
// it do not unload cleanly. Null when the library is missing.
struct DebuginfodApi {
  using Client = void;
  Client* (*begin)();
  void (*end)(Client*);
  int (*find_executable)(Client*, const unsigned char*, int, char**);
  int (*find_debuginfo)(Client*, const unsigned char*, int, char**);
};

const DebuginfodApi* LoadDebuginfodApi() {
  static const DebuginfodApi* const api = []() -> const DebuginfodApi* {
    void* library = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    DebuginfodApi loaded;
    loaded.begin = reinterpret_cast<decltype(loaded.begin)>(
        dlsym(library, "debuginfod_begin"));
    loaded.end = reinterpret_cast<decltype(loaded.end)>(
        dlsym(library, "debuginfod_end"));
    loaded.find_executable = reinterpret_cast<decltype(loaded.find_executable)>(
        dlsym(library, "debuginfod_find_executable"));
    loaded.find_debuginfo = reinterpret_cast<decltype(loaded.find_debuginfo)>(
        dlsym(library, "debuginfod_find_debuginfo"));
    if (loaded.begin == nullptr || loaded.end == nullptr ||
        loaded.find_executable == nullptr || loaded.find_debuginfo == nullptr) {
      return nullptr;
    }
    return new DebuginfodApi(loaded);
  }();
  return api;
}

// A debuginfod client, begun on the first lookup when DEBUGINFOD_URLS is
// set. The client honours DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH and
// DEBUGINFOD_TIMEOUT.
class Debuginfod {
 public:
  Debuginfod() = default;
  Debuginfod(const Debuginfod&) = delete;
  Debuginfod& operator=(const Debuginfod&) = delete;
  ~Debuginfod() {
    if (client_ != nullptr) api_->end(client_);
  }

  enum class Kind { kExecutable, kDebuginfo };

  // Path of the cached download for `build_id_hex`, or empty.
  std::string Find(Kind kind, const std::string& build_id_hex) {
    if (!Begin()) return "";
    auto find = kind == Kind::kExecutable ? api_->find_executable
                                          : api_->find_debuginfo;
    char* path = nullptr;
    // A build_id_len of 0 means "build_id is a hex string".
    int fd = find(client_,
                  reinterpret_cast<const unsigned char*>(build_id_hex.c_str()),
                  0, &path);
    if (fd < 0) return "";
    close(fd);
    std::string result = path != nullptr ? path : "";
    std::free(path);
    return result;
  }

 private:
  bool Begin() {
    if (tried_) return client_ != nullptr;
    tried_ = true;
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    if (urls == nullptr || urls[0] == '\0') return false;
    api_ = LoadDebuginfodApi();
    if (api_ != nullptr) client_ = api_->begin();
    return client_ != nullptr;
  }

  bool tried_ = false;
  const DebuginfodApi* api_ = nullptr;
  DebuginfodApi::Client* client_ = nullptr;
};

// The address ranges of each compilation unit, sorted, for finding the
// unit of an address by binary search (.debug_aranges is often missing).
struct CuRange {
  Dwarf_Addr low;
  Dwarf_Addr high;
  Dwarf_Addr max_high_up_to_here;
  Dwarf_Die cudie;
};

// A module's DWARF: libdw over sections held in memory.
struct DwarfIndex {
  DwarfIndex() = default;
  DwarfIndex(const DwarfIndex&) = delete;
  DwarfIndex& operator=(const DwarfIndex&) = delete;
  ~DwarfIndex() {
    if (dwarf != nullptr) dwarf_end(dwarf);
  }
  std::unique_ptr<ElfFile> file;  // detached: nothing more is read
  Dwarf* dwarf = nullptr;
  std::vector<CuRange> units;
  // Built on first use of each unit, keyed by the unit DIE's offset.
  absl::flat_hash_map<Dwarf_Off, CuFunctionIndex> functions_by_cu;
};

std::vector<CuRange> IndexUnits(Dwarf* dwarf) {
  std::vector<CuRange> units;
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die cudie, subdie;
  while (dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie,
                         &subdie) == 0) {
    cu = next;
    if (unit_type != DW_UT_compile) continue;
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t offset = 0;
         (offset = dwarf_ranges(&cudie, offset, &base, &low, &high)) > 0;) {
      if (low < high) units.push_back({low, high, 0, cudie});
    }
  }
  std::sort(units.begin(), units.end(),
            [](const CuRange& a, const CuRange& b) { return a.low < b.low; });
  Dwarf_Addr max_high = 0;
  for (CuRange& unit : units) {
    max_high = std::max(max_high, unit.high);
    unit.max_high_up_to_here = max_high;
  }
  units.shrink_to_fit();
  return units;
}

const CuRange* FindUnit(const std::vector<CuRange>& units, Dwarf_Addr pc) {
  auto it = std::upper_bound(
      units.begin(), units.end(), pc,
      [](Dwarf_Addr value, const CuRange& unit) { return value < unit.low; });
  while (it != units.begin()) {
    --it;
    if (pc < it->high) return &*it;
    if (it->max_high_up_to_here <= pc) break;
  }
  return nullptr;
}

// A cached frame: function and file names are shared by every address of
// the module (deep C++ template names run to hundreds of bytes, repeated
// at every address of a function and of its callers).
struct PooledFrame {
  const std::string* function;
  const std::string* file;
  int64_t line;
  bool unnamed;
};

// Bytes a cache entry of `frames` frames costs besides its names: the map
// slot (key, vector) and the vector's buffer, with allocator overhead.
size_t EntryBytes(size_t frames) {
  return sizeof(uint64_t) + sizeof(std::vector<PooledFrame>) + 16 +
         frames * sizeof(PooledFrame);
}

// Everything known about one module (one build-id).
struct ModuleIndex {
  std::string key;
  std::string build_id_hex;  // the module's, else the file's (may be empty)
  std::string display_name;  // the module's file name, for function starts
  bool found = false;        // a usable file was found
  // Why an address here may have no function name (Build's findings).
  std::string unnamed_reason;
  // Not found because the process's root could not be read (it had exited,
  // or access was denied): kept for that process alone (Load).
  bool root_unavailable = false;
  SymbolTable symbols;
  std::unique_ptr<DwarfIndex> dwarf;
  // Results by looked-up ELF address; names live in `names`.
  absl::flat_hash_map<uint64_t, std::vector<PooledFrame>> frames_by_address;
  absl::node_hash_set<std::string> names;
  size_t bytes = 0;  // estimated, everything above
  std::list<ModuleIndex*>::iterator lru;
};

class ElfSymbolizer final : public Symbolizer {
 public:
  explicit ElfSymbolizer(const SymbolizerOptions& options) : options_(options) {
    elf_version(EV_CURRENT);
  }

  ~ElfSymbolizer() override {
    modules_.clear();
    total_bytes_ = 0;
    UpdateGauges();
  }

  using Symbolizer::Symbolize;

  void AttachProcess(uint32_t pid) override {
    ProcessRoot& root = roots_[pid];
    if (root.attached++ > 0 || pid == 0 || options_.proc_root.empty()) return;
    absl::StatusOr<UniqueFd> fd = OpenProcessRoot(options_.proc_root, pid);
    if (fd.ok()) {
      root.fd = std::move(*fd);
    } else {
      NoteRootFailure(pid, fd.status());
      root.failure = RootFailure(pid, fd.status());
    }
  }

  void DetachProcess(uint32_t pid) override {
    auto it = roots_.find(pid);
    if (it != roots_.end() && --it->second.attached <= 0) roots_.erase(it);
  }

  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t address,
                                         AddressKind kind) override {
    ++stats_.lookups;
    ModuleIndex& index = Load(module);
    uint64_t lookup = address - module.load_bias;
    if (kind == AddressKind::kReturnAddress && lookup > 0) --lookup;
    auto it = index.frames_by_address.find(lookup);
    if (it != index.frames_by_address.end()) {
      ++stats_.cache_hits;
    } else {
      std::vector<SymbolizedFrame> resolved;
      if (index.found && address >= module.load_bias) {
        resolved = Resolve(index, lookup);
      }
      if (resolved.empty()) {
        ++stats_.addresses_unresolved;
        metrics().misses.Add(1);
      } else {
        ++stats_.addresses_resolved;
        metrics().resolved.Add(1);
      }
      if (resolved.empty() || resolved[0].unnamed ||
          resolved[0].function.empty()) {
        NoteUnnamed(module, index);
      }
      std::vector<PooledFrame> pooled;
      pooled.reserve(resolved.size());
      for (SymbolizedFrame& frame : resolved) {
        pooled.push_back({Intern(index, std::move(frame.function)),
                          Intern(index, std::move(frame.file)), frame.line,
                          frame.unnamed});
      }
      Grow(index, EntryBytes(pooled.size()));
      it = index.frames_by_address.emplace(lookup, std::move(pooled)).first;
    }
    std::vector<SymbolizedFrame> frames;
    frames.reserve(it->second.size());
    for (const PooledFrame& frame : it->second) {
      frames.push_back(
          {*frame.function, *frame.file, frame.line, frame.unnamed});
    }
    Trim(&index);
    return frames;
  }

  std::string UnnamedReason(const ModuleInfo& module) const override {
    // The index Load would use: this process's own first.
    for (const std::string& key : {RootUnavailableKey(module), KeyOf(module)}) {
      auto it = unnamed_reasons_.find(key);
      if (it != unnamed_reasons_.end()) return it->second;
    }
    return "";
  }

  uint64_t misses() const override { return stats_.addresses_unresolved; }

  SymbolizerStats stats() const override {
    SymbolizerStats stats = stats_;
    stats.modules_cached = modules_.size();
    stats.cache_bytes = total_bytes_;
    return stats;
  }

 private:
  struct ProcessRoot {
    int attached = 0;
    UniqueFd fd;          // invalid when the root could not be opened
    std::string failure;  // why not (RootFailure)
  };

  // Why the files of process `pid` could not be read (a module's reason).
  std::string RootFailure(uint32_t pid, const absl::Status& status) const {
    const std::string root =
        absl::StrCat(options_.proc_root, "/", pid, "/root");
    if (absl::IsPermissionDenied(status)) {
      return absl::StrCat("access denied to ", root);
    }
    if (absl::IsNotFound(status)) {
      return absl::StrCat("the process had exited before its files were read (",
                          root, " gone)");
    }
    return absl::StrCat(root, ": ", status.message());
  }

  const std::string* Intern(ModuleIndex& index, std::string name) {
    auto [it, inserted] = index.names.insert(std::move(name));
    if (inserted) Grow(index, it->capacity() + 48);
    return &*it;
  }

  void Grow(ModuleIndex& index, size_t bytes) {
    index.bytes += bytes;
    total_bytes_ += bytes;
  }

  void UpdateGauges() const {
    metrics().cache_bytes.Set(static_cast<double>(total_bytes_));
    metrics().modules.Set(static_cast<double>(modules_.size()));
  }

  // Drops least recently used modules, never `keep`, until the estimate is
  // within the budget.
  void Trim(const ModuleIndex* keep) {
    while (total_bytes_ > options_.cache_bytes && !lru_.empty() &&
           lru_.back() != keep) {
      ModuleIndex* victim = lru_.back();
      lru_.pop_back();
      total_bytes_ -= victim->bytes;
      ++stats_.modules_evicted;
      metrics().evictions.Add(1);
      modules_.erase(victim->key);
    }
    UpdateGauges();
  }

  // A refused /proc/<pid>/root leaves every binary of the process
  // unsymbolized unless it is found by build-id: counted, and said once.
  void NoteRootFailure(uint32_t pid, const absl::Status& status) {
    if (!absl::IsPermissionDenied(status)) return;  // e.g. the process is gone
    ++stats_.roots_denied;
    metrics().roots_denied.Add(1);
    if (warned_root_denied_) return;
    warned_root_denied_ = true;
    LogWarning(absl::StrCat(
        "pid ", pid, ": ", status.message(),
        ": the collector may not read this process's binaries, so its frames "
        "stay module+0xoffset unless --symbols-dir or debuginfod has them by "
        "build-id. gVisor before release-20251215 lets a process read "
        "another's /proc/<pid>/root only if it may ptrace it: set "
        "RINGPROF_PTRACER_ANY=1 in the workload, or run the collector as "
        "root (examples/deploy/README.md, \"Symbols in a gVisor pod\"). "
        "Said once; counted in ringprof_symbolizer_roots_denied_total"));
  }

  void NoteFileDenied(uint32_t pid, const std::string& path) {
    ++stats_.files_denied;
    metrics().files_denied.Add(1);
    if (warned_file_denied_) return;
    warned_file_denied_ = true;
    LogWarning(absl::StrCat(
        "pid ", pid, ": may not read ", path,
        " (permission denied): its frames stay module+0xoffset unless "
        "--symbols-dir or debuginfod has it by build-id; run the collector "
        "with a uid or group that can read the workload's binaries. Said "
        "once; counted in ringprof_symbolizer_files_denied_total"));
  }

  // Opens a candidate ELF and checks it; null (counted) when unusable.
  // `failure`, when given, says why the file is not used.
  std::unique_ptr<ElfFile> Check(absl::StatusOr<UniqueFd> fd,
                                 const std::string& expected_build_id,
                                 std::string* failure = nullptr) {
    std::string ignored;
    if (failure == nullptr) failure = &ignored;
    if (!fd.ok()) {
      *failure =
          absl::IsNotFound(fd.status()) ? "file not found"
          : absl::IsPermissionDenied(fd.status())
              ? absl::StrCat("access denied (", fd.status().message(), ")")
              : std::string(fd.status().message());
      // A missing candidate is the common case, not a rejection.
      if (!absl::IsNotFound(fd.status())) Reject();
      return nullptr;
    }
    absl::StatusOr<std::unique_ptr<ElfFile>> file =
        ElfFile::Open(std::move(*fd), options_.max_file_bytes);
    if (!file.ok()) {
      *failure = std::string(file.status().message());
      Reject();
      return nullptr;
    }
    if (!expected_build_id.empty() &&
        (*file)->BuildIdHex() != expected_build_id) {
      *failure = "another build-id (the file changed since it was mapped)";
      ++stats_.build_id_mismatches;
      Reject();
      return nullptr;
    }
    return std::move(*file);
  }

  void Reject() {
    ++stats_.files_rejected;
    metrics().rejected.Add(1);
  }

  // A workload path, resolved inside the process's root. `failure`, when
  // given, says why nothing was opened; `no_root`, that the process's root
  // could not be read.
  std::unique_ptr<ElfFile> OpenInWorkload(uint32_t pid, const std::string& path,
                                          const std::string& build_id,
                                          std::string* failure = nullptr,
                                          bool* no_root = nullptr) {
    std::string ignored;
    if (failure == nullptr) failure = &ignored;
    if (path.empty() || path[0] != '/') {
      *failure = path.empty() ? "no file (anonymous memory: generated code?)"
                              : absl::StrCat("no file (", path, ")");
      return nullptr;
    }
    if (pid == 0 || options_.proc_root.empty()) {
      *failure = absl::StrCat(path, ": no process root to read it in");
      return nullptr;
    }
    UniqueFd ad_hoc;
    int root = -1;
    auto attached = roots_.find(pid);
    if (attached != roots_.end()) {
      root = attached->second.fd.get();
      if (root < 0) *failure = attached->second.failure;
    } else {
      absl::StatusOr<UniqueFd> fd = OpenProcessRoot(options_.proc_root, pid);
      if (fd.ok()) {
        ad_hoc = std::move(*fd);
      } else {
        NoteRootFailure(pid, fd.status());
        *failure = RootFailure(pid, fd.status());
      }
      root = ad_hoc.get();
    }
    if (root < 0) {
      if (no_root != nullptr) *no_root = true;
      return nullptr;
    }
    absl::StatusOr<UniqueFd> fd = OpenInRoot(
        root, path,
        options_.walk_only ? RootResolution::kWalkOnly : RootResolution::kAuto);
    if (absl::IsPermissionDenied(fd.status())) NoteFileDenied(pid, path);
    std::unique_ptr<ElfFile> file = Check(std::move(fd), build_id, failure);
    if (file == nullptr) *failure = absl::StrCat(path, ": ", *failure);
    return file;
  }

  std::unique_ptr<ElfFile> OpenCollectorFile(const std::string& path,
                                             const std::string& build_id) {
    return Check(OpenRegularFile(path), build_id);
  }

  std::unique_ptr<ElfFile> FromDebuginfod(Debuginfod::Kind kind,
                                          const std::string& build_id) {
    if (!options_.use_debuginfod || build_id.empty()) return nullptr;
    std::string fetched = debuginfod_.Find(kind, build_id);
    if (fetched.empty()) return nullptr;
    std::unique_ptr<ElfFile> file = OpenCollectorFile(fetched, build_id);
    if (file != nullptr) ++stats_.debuginfod_fetches;
    return file;
  }

  // The module's binary (or a debug file standing in for it), most direct
  // source first.
  // `failure` says why the workload's own file was not used.
  std::unique_ptr<ElfFile> FindBinary(const ModuleInfo& module,
                                      std::string* failure, bool* no_root) {
    const std::string& id = module.build_id_hex;
    if (auto file =
            OpenInWorkload(module.pid, module.path, id, failure, no_root)) {
      return file;
    }
    if (id.size() < 3) return nullptr;  // no path is safe without an id
    for (const char* suffix : {"", ".debug"}) {
      for (const std::string& dir : options_.symbol_dirs) {
        if (auto file = OpenCollectorFile(BuildIdPath(dir, id, suffix), id)) {
          return file;
        }
      }
    }
    for (auto kind :
         {Debuginfod::Kind::kExecutable, Debuginfod::Kind::kDebuginfo}) {
      if (auto file = FromDebuginfod(kind, id)) return file;
    }
    return nullptr;
  }

  // A separate debug file for `binary`: by build-id in the symbols dirs,
  // the system debug dir inside the workload's root then here, then by
  // .gnu_debuglink next to the module, then debuginfod.
  std::unique_ptr<ElfFile> FindDebugFile(const ModuleInfo& module,
                                         const ElfFile& binary,
                                         const std::string& id) {
    if (id.size() >= 3) {
      for (const std::string& dir : options_.symbol_dirs) {
        if (auto file = OpenCollectorFile(BuildIdPath(dir, id, ".debug"), id)) {
          return file;
        }
      }
      if (!options_.system_debug_dir.empty()) {
        if (auto file = OpenInWorkload(
                module.pid,
                BuildIdPath(options_.system_debug_dir, id, ".debug"), id)) {
          return file;
        }
        if (auto file = OpenCollectorFile(
                BuildIdPath(options_.system_debug_dir, id, ".debug"), id)) {
          return file;
        }
      }
    }
    if (auto file = FromDebugLink(module, binary, id)) return file;
    return FromDebuginfod(Debuginfod::Kind::kDebuginfo, id);
  }

  // GDB's .gnu_debuglink places, inside the workload's root: next to the
  // module, in .debug/ there, and under the system debug dir. Checked by
  // build-id, or by the link's CRC when there is none.
  std::unique_ptr<ElfFile> FromDebugLink(const ModuleInfo& module,
                                         const ElfFile& binary,
                                         const std::string& id) {
    uint32_t crc = 0;
    const std::string link = binary.DebugLink(&crc);
    const size_t slash = module.path.rfind('/');
    if (link.empty() || slash == std::string::npos) return nullptr;
    const std::string dir = module.path.substr(0, slash);
    std::vector<std::string> candidates = {dir + "/" + link,
                                           dir + "/.debug/" + link};
    if (!options_.system_debug_dir.empty()) {
      candidates.push_back(options_.system_debug_dir + dir + "/" + link);
    }
    for (const std::string& candidate : candidates) {
      if (candidate == module.path) continue;
      std::unique_ptr<ElfFile> file = OpenInWorkload(module.pid, candidate, id);
      if (file == nullptr) continue;
      uint32_t actual = 0;
      if (!id.empty() || (FileCrc32ViaElf(*file, &actual) && actual == crc)) {
        return file;
      }
      Reject();
    }
    return nullptr;
  }

  // A stripped binary's MiniDebugInfo (.gnu_debugdata): the functions its
  // .dynsym lacks. A refused one is counted, and said once. Returns what
  // became of it, for the module's unnamed_reason.
  std::string AddMiniDebugInfo(const ModuleInfo& module, const ElfFile& binary,
                               ModuleIndex* index) {
    absl::StatusOr<std::unique_ptr<ElfFile>> mini = ReadMiniDebugInfo(binary);
    if (mini.ok()) {
      if (index->symbols.AddSymbols((*mini)->elf(), SHT_SYMTAB)) {
        ++stats_.minidebuginfo_read;
        return "with MiniDebugInfo";
      }
      mini = absl::InvalidArgumentError(
          ".gnu_debugdata: its ELF has no symbol table");
    }
    if (absl::IsNotFound(mini.status())) return "without MiniDebugInfo";
    const std::string refused = absl::StrCat("with unreadable MiniDebugInfo (",
                                             mini.status().message(), ")");
    ++stats_.minidebuginfo_rejected;
    metrics().minidebuginfo_rejected.Add(1);
    if (warned_minidebuginfo_) return refused;
    warned_minidebuginfo_ = true;
    LogWarning(absl::StrCat(
        module.path, ": MiniDebugInfo refused (", mini.status().message(),
        "): its functions missing from .dynsym show as [", index->display_name,
        "] 0x<start>. Said once; counted in "
        "ringprof_symbolizer_minidebuginfo_rejected_total"));
    return refused;
  }

  // Where a debug file or binary was looked for by build-id.
  std::string WhereByBuildId() const {
    std::vector<std::string> dirs = options_.symbol_dirs;
    if (!options_.system_debug_dir.empty()) {
      dirs.push_back(options_.system_debug_dir);
    }
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    return absl::StrCat(
        dirs.empty()
            ? "no directory to look for it by build-id"
            : absl::StrCat("by build-id under ", absl::StrJoin(dirs, ", ")),
        !options_.use_debuginfod ? "; debuginfod off (--debuginfod=false)"
        : urls == nullptr || urls[0] == '\0'
            ? "; debuginfod not configured (DEBUGINFOD_URLS)"
            : "; debuginfod has none");
  }

  // Where a stripped binary's debug file was looked for.
  std::string WhereDebugFiles(const std::string& build_id,
                              const ElfFile& binary) const {
    uint32_t crc = 0;
    const std::string link = binary.DebugLink(&crc);
    return absl::StrCat(
        build_id.empty() ? "no build-id to look for" : WhereByBuildId(),
        link.empty() ? "; no .gnu_debuglink"
                     : absl::StrCat("; .gnu_debuglink ", link,
                                    " in none of its places"));
  }

  // What a module is said once per: its build-id, else its path (whatever
  // process maps it).
  static std::string SaidKey(const ModuleInfo& module) {
    return !module.build_id_hex.empty() && UsableBuildId(module.build_id_hex)
               ? module.build_id_hex
               : absl::StrCat("path:", module.path);
  }

  // An address of `module` got no function name: the reason of its index
  // is kept for UnnamedReason, and said once per module.
  void NoteUnnamed(const ModuleInfo& module, const ModuleIndex& index) {
    if (unnamed_reasons_.size() < kMaxUnnamedModules) {
      unnamed_reasons_.try_emplace(index.key, index.unnamed_reason);
    }
    if (said_unnamed_.size() >= kMaxUnnamedModules ||
        !said_unnamed_.insert(SaidKey(module)).second) {
      return;
    }
    ++stats_.modules_unnamed;
    metrics().modules_unnamed.Add(1);
    LogWarning(absl::StrCat(
        module.path.empty() ? "anonymous code" : module.path,
        ": functions without a name (shown as [", index.display_name,
        "] 0x<function start> or ", index.display_name,
        "+0x<offset>): ", index.unnamed_reason,
        ". Said once per module; their share of each profile: `ringprof "
        "run`'s summary, ringprof_profile_unsymbolized_value_total",
        said_unnamed_.size() == kMaxUnnamedModules
            ? absl::StrCat(" (", kMaxUnnamedModules,
                           " modules said: no more will be)")
            : ""));
  }

  bool FileCrc32ViaElf(const ElfFile& file, uint32_t* crc) {
    return FileCrc32(file.fd(), options_.max_file_bytes, crc);
  }

  // The module's key: its build-id, else its process and path.
  static std::string KeyOf(const ModuleInfo& module) {
    return !UsableBuildId(module.build_id_hex)
               ? std::string("unusable build-id")
           : module.build_id_hex.empty()
               ? absl::StrCat("pid:", module.pid, ":", module.path)
               : module.build_id_hex;
  }

  // The key of a module with a build-id that was not found because its
  // process's root could not be read: that process's alone, so that
  // another process mapping the same build-id looks again (a short-lived
  // process must not leave libc unnamed for every other).
  static std::string RootUnavailableKey(const ModuleInfo& module) {
    return module.build_id_hex.empty()
               ? std::string()
               : absl::StrCat("no root:", module.pid, ":", module.build_id_hex);
  }

  ModuleIndex& Load(const ModuleInfo& module) {
    const bool usable = UsableBuildId(module.build_id_hex);
    std::string key = KeyOf(module);
    auto found = modules_.find(key);
    if (found == modules_.end() && usable) {
      found = modules_.find(RootUnavailableKey(module));
    }
    if (found != modules_.end()) {
      ModuleIndex& index = *found->second;
      lru_.splice(lru_.begin(), lru_, index.lru);
      return index;
    }
    auto owned = std::make_unique<ModuleIndex>();
    ModuleIndex& index = *owned;
    index.key = key;
    const size_t slash = module.path.rfind('/');
    index.display_name = slash == std::string::npos
                             ? module.path
                             : module.path.substr(slash + 1);
    if (usable) {
      Build(module, &index);
      if (index.root_unavailable && !module.build_id_hex.empty()) {
        key = RootUnavailableKey(module);
        index.key = key;
      }
    } else {
      index.unnamed_reason = "its build-id is not lower-case hex";
    }
    ++(index.found ? stats_.modules_opened : stats_.modules_not_found);
    lru_.push_front(&index);
    index.lru = lru_.begin();
    total_bytes_ += index.bytes;
    modules_.emplace(key, std::move(owned));
    Trim(&index);
    return index;
  }

  void Build(const ModuleInfo& module, ModuleIndex* index) {
    std::string failure;
    bool no_root = false;
    std::unique_ptr<ElfFile> binary = FindBinary(module, &failure, &no_root);
    if (binary == nullptr) {
      index->root_unavailable = no_root;
      index->unnamed_reason =
          module.build_id_hex.empty()
              ? absl::StrCat(failure, "; no build-id to look for it elsewhere")
              : absl::StrCat(failure, "; not found by build-id either (",
                             WhereByBuildId(), ")");
      return;
    }
    index->found = true;
    index->build_id_hex = module.build_id_hex.empty() ? binary->BuildIdHex()
                                                      : module.build_id_hex;
    bool full_symbols = index->symbols.AddSymbols(binary->elf(), SHT_SYMTAB);
    std::unique_ptr<ElfFile> debug;
    if (!binary->HasDwarf() || !full_symbols) {
      debug = FindDebugFile(module, *binary, index->build_id_hex);
    }
    if (!full_symbols && debug != nullptr) {
      full_symbols = index->symbols.AddSymbols(debug->elf(), SHT_SYMTAB);
    }
    if (!full_symbols) {
      index->symbols.AddSymbols(binary->elf(), SHT_DYNSYM);
      const std::string mini = AddMiniDebugInfo(module, *binary, index);
      index->symbols.AddFunctionStarts(binary->elf());
      index->unnamed_reason =
          debug != nullptr
              ? absl::StrCat("stripped (no .symtab) ", mini,
                             "; its debug file has no .symtab either")
              : absl::StrCat(
                    "stripped (no .symtab) ", mini, "; no debug file found (",
                    WhereDebugFiles(index->build_id_hex, *binary), ")");
    } else {
      index->unnamed_reason =
          "an address in no function of its symbol table (a PLT stub, "
          "padding, or code without a symbol)";
    }
    index->symbols.Finish();
    index->bytes += index->symbols.bytes();
    std::unique_ptr<ElfFile> dwarf_file;
    if (binary->HasDwarf()) {
      dwarf_file = std::move(binary);
    } else if (debug != nullptr && debug->HasDwarf()) {
      dwarf_file = std::move(debug);
    } else {
      return;
    }
    auto dwarf = std::make_unique<DwarfIndex>();
    index->bytes += dwarf_file->DetachFile();
    dwarf->dwarf = dwarf_begin_elf(dwarf_file->elf(), DWARF_C_READ, nullptr);
    if (dwarf->dwarf == nullptr) return;
    dwarf->file = std::move(dwarf_file);
    dwarf->units = IndexUnits(dwarf->dwarf);
    index->bytes += dwarf->units.capacity() * sizeof(CuRange);
    index->dwarf = std::move(dwarf);
  }

  // DWARF first (inline chain with file:line), the symbol table for
  // whatever DWARF does not name.
  std::vector<SymbolizedFrame> Resolve(ModuleIndex& index, uint64_t address) {
    std::vector<SymbolizedFrame> frames;
    std::string file;
    int64_t line = 0;
    bool physical_qualified = false;
    const CuRange* unit = index.dwarf != nullptr
                              ? FindUnit(index.dwarf->units, address)
                              : nullptr;
    if (unit != nullptr) {
      Dwarf_Die cudie = unit->cudie;
      if (Dwarf_Line* dwarf_line = dwarf_getsrc_die(&cudie, address)) {
        int line_number = 0;
        const char* name = dwarf_linesrc(dwarf_line, nullptr, nullptr);
        if (name != nullptr) file = name;
        if (dwarf_lineno(dwarf_line, &line_number) == 0) line = line_number;
      }
      std::vector<Dwarf_Die> path;
      auto [it, inserted] =
          index.dwarf->functions_by_cu.try_emplace(dwarf_dieoffset(&cudie));
      if (inserted) {
        it->second = BuildFunctionIndex(&cudie);
        Grow(index, it->second.capacity() * sizeof(FunctionRange) +
                        UnitLineBytes(&cudie));
      }
      if (const FunctionRange* function = FindFunction(it->second, address)) {
        Dwarf_Die subprogram = function->die;
        path.push_back(subprogram);
        FindScopePath(&subprogram, address, &path);
      }
      // Innermost first: each inlined instance is at the line table's (or
      // its callee's call-site) position, and tells where its caller called
      // it.
      for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {
        int tag = dwarf_tag(&*scope);
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) {
          continue;
        }
        frames.push_back(
            {DieFunctionName(&*scope, &physical_qualified), file, line});
        if (tag == DW_TAG_subprogram) break;
        CallSite(&*scope, &cudie, &file, &line);
      }
    }

    // The symbol table names the physical function when DWARF does not
    // (stripped, a unit without subprograms) or gives only a short name:
    // local symbols keep their full mangled name ("ns::(anonymous
    // namespace)::Helper()", lambdas). Inlined frames keep DWARF's short
    // name. Where only .eh_frame knows the function, its start names it.
    if (frames.empty() || !physical_qualified) {
      SymbolTable::Hit hit;
      if (index.symbols.Lookup(address, &hit)) {
        std::string demangled;
        if (hit.name == nullptr) {
          if (frames.empty()) {
            frames.push_back(
                {absl::StrFormat("[%s] 0x%x", index.display_name, hit.start),
                 file, line, /*unnamed=*/true});
          }
        } else if (frames.empty()) {
          if (!Demangle(hit.name, &demangled)) demangled = hit.name;
          frames.push_back({std::move(demangled), file, line});
        } else if (Demangle(hit.name, &demangled) ||
                   frames.back().function.empty()) {
          frames.back().function = demangled.empty() ? hit.name : demangled;
        }
      }
    }
    if (!frames.empty() && frames.back().function.empty() &&
        frames.size() == 1 && frames.back().file.empty()) {
      frames.clear();
    }
    return frames;
  }

  // What the unit's line table costs libdw once read (reading it here, on
  // the unit's first use, is what the lookup does next anyway).
  static size_t UnitLineBytes(Dwarf_Die* cudie) {
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    if (dwarf_getsrclines(cudie, &lines, &count) != 0) return 0;
    return count * 48;
  }

  const SymbolizerOptions options_;
  SymbolizerStats stats_;
  bool warned_root_denied_ = false;
  bool warned_file_denied_ = false;
  bool warned_minidebuginfo_ = false;
  // Modules an address of which had no function name: their reason by
  // index key, and the modules said (SaidKey); each of the first 1000.
  static constexpr size_t kMaxUnnamedModules = 1000;
  absl::flat_hash_map<std::string, std::string> unnamed_reasons_;
  absl::flat_hash_set<std::string> said_unnamed_;
  Debuginfod debuginfod_;
  absl::flat_hash_map<uint32_t, ProcessRoot> roots_;
  // Modules by key; lru_ front is the most recently used.
  absl::flat_hash_map<std::string, std::unique_ptr<ModuleIndex>> modules_;
  std::list<ModuleIndex*> lru_;
  size_t total_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Symbolizer> Symbolizer::Create(
    const SymbolizerOptions& options) {
  return std::make_unique<ElfSymbolizer>(options);
}

}  // namespace collector
}  // namespace ringprof
