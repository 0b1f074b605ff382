// Symbolizer over elfutils libdwfl.
//
// One Dwfl session per module (keyed by build-id, or by path when the module
// has none), holding exactly one ELF reported at bias 0 so module addresses
// are the ELF's own virtual addresses: lookup address = runtime address -
// load_bias. DWARF comes from the ELF itself or, when it has none, from a
// separate debug file that our find_debuginfo callback locates and checks.
// Results are cached per (module, lookup address) for the symbolizer's life.

#include "collector/symbolize/symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

// Distinct addresses (per module) that resolved to nothing: exported on
// /metrics; each is counted once, as the result is cached.
Counter& MissesMetric() {
  static Counter& counter = Metrics::Get().GetCounter(
      "ringprof_symbolization_misses_total",
      "Distinct addresses that resolved to no function (shown as "
      "module+0xoffset).");
  return counter;
}

std::string HexEncode(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

// The GNU build-id of the ELF file at `path` as lower-case hex; empty when
// the file is not a readable ELF or has no build-id note.
std::string ReadBuildIdHex(int fd) {
  if (elf_version(EV_CURRENT) == EV_NONE) return "";
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return "";
  std::string hex;
  if (elf_kind(elf) == ELF_K_ELF) {
    const void* bits = nullptr;
    ssize_t size = dwelf_elf_gnu_build_id(elf, &bits);
    if (size > 0) {
      hex = HexEncode(static_cast<const unsigned char*>(bits),
                      static_cast<size_t>(size));
    }
  }
  elf_end(elf);
  return hex;
}

// "<dir>/.build-id/ab/cdef...<suffix>", the layout of /usr/lib/debug.
std::string BuildIdPath(absl::string_view dir, absl::string_view build_id_hex,
                        absl::string_view suffix) {
  return absl::StrCat(dir, "/.build-id/", build_id_hex.substr(0, 2), "/",
                      build_id_hex.substr(2), suffix);
}

// Demangles an Itanium C++ ABI name into *out; false (and *out untouched)
// when `name` is not mangled or the demangler cannot handle it.
bool Demangle(const char* name, std::string* out) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return false;
  out->assign(demangled);
  std::free(demangled);
  return true;
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

class DwflSymbolizer;

// A cached frame: function and file names are shared by every address
// (deep C++ template names run to hundreds of bytes, repeated at every
// address of a function and of its callers).
struct PooledFrame {
  const std::string* function;
  const std::string* file;
  int64_t line;
};

// One module's Dwfl session and its per-address results.
struct LoadedModule {
  ~LoadedModule() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
  DwflSymbolizer* owner = nullptr;
  std::string build_id_hex;  // of the file actually opened (may be empty)
  uint32_t pid = 0;          // the first process seen with this module
  Dwfl* dwfl = nullptr;      // null when no usable file was found
  Dwfl_Module* module = nullptr;
  // Results by looked-up ELF address; names live in the symbolizer's pool.
  absl::flat_hash_map<uint64_t, std::vector<PooledFrame>> frames_by_address;
  // Built on first use of each CU, keyed by the CU DIE's offset.
  absl::flat_hash_map<Dwarf_Off, CuFunctionIndex> functions_by_cu;
};

class DwflSymbolizer final : public Symbolizer {
 public:
  explicit DwflSymbolizer(const SymbolizerOptions& options)
      : options_(options) {
    elf_version(EV_CURRENT);
  }

  using Symbolizer::Symbolize;

  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t address,
                                         AddressKind kind) override {
    ++stats_.lookups;
    LoadedModule& loaded = Load(module);
    uint64_t lookup = address - module.load_bias;
    if (kind == AddressKind::kReturnAddress && lookup > 0) --lookup;
    auto it = loaded.frames_by_address.find(lookup);
    if (it != loaded.frames_by_address.end()) {
      ++stats_.cache_hits;
    } else {
      std::vector<SymbolizedFrame> resolved;
      if (loaded.module != nullptr && address >= module.load_bias) {
        resolved = Resolve(loaded, lookup);
      }
      if (resolved.empty()) {
        ++stats_.addresses_unresolved;
        MissesMetric().Add(1);
      } else {
        ++stats_.addresses_resolved;
      }
      std::vector<PooledFrame> pooled;
      pooled.reserve(resolved.size());
      for (SymbolizedFrame& frame : resolved) {
        pooled.push_back({Intern(std::move(frame.function)),
                          Intern(std::move(frame.file)), frame.line});
      }
      it = loaded.frames_by_address.emplace(lookup, std::move(pooled)).first;
    }
    std::vector<SymbolizedFrame> frames;
    frames.reserve(it->second.size());
    for (const PooledFrame& frame : it->second) {
      frames.push_back({*frame.function, *frame.file, frame.line});
    }
    return frames;
  }

  uint64_t misses() const override { return stats_.addresses_unresolved; }
  SymbolizerStats stats() const override { return stats_; }

  // find_debuginfo for modules whose ELF has no DWARF: a checked
  // .build-id/xx/yyy.debug under a symbols dir, then debuginfod. Returns an
  // fd libdwfl takes over and sets *path to a malloc'd name, or -1.
  int FindDebuginfo(const LoadedModule& loaded, char** path) {
    if (loaded.build_id_hex.size() < 3) return -1;
    std::vector<std::string> candidates;
    for (const std::string& dir : options_.symbol_dirs) {
      candidates.push_back(BuildIdPath(dir, loaded.build_id_hex, ".debug"));
    }
    if (!options_.system_debug_dir.empty()) {
      // Debug packages installed in the workload's container, then here.
      if (loaded.pid != 0 && !options_.proc_root.empty()) {
        candidates.push_back(
            BuildIdPath(absl::StrCat(options_.proc_root, "/", loaded.pid,
                                     "/root", options_.system_debug_dir),
                        loaded.build_id_hex, ".debug"));
      }
      candidates.push_back(BuildIdPath(options_.system_debug_dir,
                                       loaded.build_id_hex, ".debug"));
    }
    for (const std::string& candidate : candidates) {
      int fd = OpenIfBuildIdMatches(candidate, loaded.build_id_hex);
      if (fd >= 0) {
        *path = strdup(candidate.c_str());
        return fd;
      }
    }
    if (options_.use_debuginfod) {
      std::string fetched =
          debuginfod_.Find(Debuginfod::Kind::kDebuginfo, loaded.build_id_hex);
      if (!fetched.empty()) {
        int fd = OpenIfBuildIdMatches(fetched, loaded.build_id_hex);
        if (fd >= 0) {
          ++stats_.debuginfod_fetches;
          *path = strdup(fetched.c_str());
          return fd;
        }
      }
    }
    return -1;
  }

 private:
  static int FindDebuginfoCallback(Dwfl_Module*, void** userdata, const char*,
                                   Dwarf_Addr, const char*, const char*,
                                   GElf_Word, char** path) {
    auto* loaded = static_cast<LoadedModule*>(*userdata);
    if (loaded == nullptr) return -1;
    return loaded->owner->FindDebuginfo(*loaded, path);
  }

  static const Dwfl_Callbacks* Callbacks() {
    static char* no_debuginfo_path = nullptr;
    static const Dwfl_Callbacks callbacks = [] {
      Dwfl_Callbacks c = {};
      c.find_elf = dwfl_build_id_find_elf;  // unused: we report every ELF
      c.find_debuginfo = FindDebuginfoCallback;
      c.section_address = dwfl_offline_section_address;
      c.debuginfo_path = &no_debuginfo_path;
      return c;
    }();
    return &callbacks;
  }

  // Opens `path` read-only when it is an ELF whose build-id is `expected`
  // (any ELF when `expected` is empty). Counts mismatches.
  int OpenIfBuildIdMatches(const std::string& path,
                           const std::string& expected) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    std::string actual = ReadBuildIdHex(fd);
    if (!expected.empty() && actual != expected) {
      ++stats_.build_id_mismatches;
      close(fd);
      return -1;
    }
    return fd;
  }

  const std::string* Intern(std::string name) {
    return &*names_.insert(std::move(name)).first;
  }

  // Files that may hold `module`, most direct first.
  std::vector<std::string> Candidates(const ModuleInfo& module) const {
    std::vector<std::string> candidates;
    if (!module.path.empty() && module.path[0] == '/') {
      if (module.pid != 0 && !options_.proc_root.empty()) {
        candidates.push_back(absl::StrCat(options_.proc_root, "/", module.pid,
                                          "/root", module.path));
      }
      candidates.push_back(module.path);
    }
    if (module.build_id_hex.size() >= 3) {
      // The binary itself (as Fedora lays it out), then a debug file, which
      // carries section headers, .symtab and DWARF and can stand in for a
      // binary we cannot see.
      for (const std::string& dir : options_.symbol_dirs) {
        candidates.push_back(BuildIdPath(dir, module.build_id_hex, ""));
      }
      for (const std::string& dir : options_.symbol_dirs) {
        candidates.push_back(BuildIdPath(dir, module.build_id_hex, ".debug"));
      }
    }
    return candidates;
  }

  // Reports `path` as the only module of a new Dwfl. False when libdwfl
  // cannot use it.
  bool Report(const std::string& path, LoadedModule* loaded) {
    int fd = OpenIfBuildIdMatches(path, loaded->build_id_hex);
    if (fd < 0) return false;
    if (loaded->build_id_hex.empty()) loaded->build_id_hex = ReadBuildIdHex(fd);
    Dwfl* dwfl = dwfl_begin(Callbacks());
    if (dwfl == nullptr) {
      close(fd);
      return false;
    }
    // On success dwfl_report_elf takes `fd` over (dwfl_end closes it); on
    // failure it stays ours. Bias 0: module addresses are the ELF's virtual
    // addresses.
    Dwfl_Module* mod = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), fd,
                                       /*base=*/0, /*add_p_vaddr=*/false);
    if (mod == nullptr) close(fd);
    if (mod == nullptr || dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
      dwfl_end(dwfl);
      return false;
    }
    void** userdata = nullptr;
    dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr,
                     nullptr, nullptr);
    *userdata = loaded;
    loaded->dwfl = dwfl;
    loaded->module = mod;
    return true;
  }

  LoadedModule& Load(const ModuleInfo& module) {
    auto& by_key =
        module.build_id_hex.empty() ? modules_by_path_ : modules_by_build_id_;
    absl::string_view key =
        module.build_id_hex.empty() ? module.path : module.build_id_hex;
    auto found = by_key.find(key);
    if (found != by_key.end()) return *found->second;
    std::unique_ptr<LoadedModule>& slot = by_key[key];
    slot = std::make_unique<LoadedModule>();
    slot->owner = this;
    slot->pid = module.pid;
    for (const std::string& candidate : Candidates(module)) {
      slot->build_id_hex = module.build_id_hex;
      if (Report(candidate, slot.get())) break;
    }
    if (slot->module == nullptr && options_.use_debuginfod &&
        !module.build_id_hex.empty()) {
      for (auto kind :
           {Debuginfod::Kind::kExecutable, Debuginfod::Kind::kDebuginfo}) {
        std::string fetched = debuginfod_.Find(kind, module.build_id_hex);
        slot->build_id_hex = module.build_id_hex;
        if (!fetched.empty() && Report(fetched, slot.get())) {
          ++stats_.debuginfod_fetches;
          break;
        }
      }
    }
    ++(slot->module != nullptr ? stats_.modules_opened
                               : stats_.modules_not_found);
    return *slot;
  }

  // DWARF first (inline chain with file:line), the ELF symbol table for
  // whatever DWARF does not name.
  static std::vector<SymbolizedFrame> Resolve(LoadedModule& loaded,
                                              uint64_t address) {
    Dwfl_Module* mod = loaded.module;
    std::vector<SymbolizedFrame> frames;
    std::string file;
    int64_t line = 0;
    if (Dwfl_Line* dwfl_line = dwfl_module_getsrc(mod, address)) {
      int line_number = 0;
      const char* name = dwfl_lineinfo(dwfl_line, nullptr, &line_number,
                                       nullptr, nullptr, nullptr);
      if (name != nullptr) file = name;
      line = line_number;
    }

    Dwarf_Addr bias = 0;
    Dwarf_Die* cudie = dwfl_module_addrdie(mod, address, &bias);
    std::vector<Dwarf_Die> path;
    if (cudie != nullptr) {
      auto [it, inserted] =
          loaded.functions_by_cu.try_emplace(dwarf_dieoffset(cudie));
      if (inserted) it->second = BuildFunctionIndex(cudie);
      const Dwarf_Addr pc = address - bias;
      if (const FunctionRange* function = FindFunction(it->second, pc)) {
        Dwarf_Die subprogram = function->die;
        path.push_back(subprogram);
        FindScopePath(&subprogram, pc, &path);
      }
    }
    bool physical_qualified = false;
    // Innermost first: each inlined instance is at the line table's (or its
    // callee's call-site) position, and tells where its caller called it.
    for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {
      int tag = dwarf_tag(&*scope);
      if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) {
        continue;
      }
      frames.push_back(
          {DieFunctionName(&*scope, &physical_qualified), file, line});
      if (tag == DW_TAG_subprogram) break;
      CallSite(&*scope, cudie, &file, &line);
    }

    // The symbol table names the physical function when DWARF does not
    // (stripped, a CU without subprograms) or gives only a short name: local
    // symbols keep their full mangled name ("ns::(anonymous namespace)::
    // Helper()", lambdas). Inlined frames keep DWARF's short name.
    if (frames.empty() || !physical_qualified) {
      GElf_Off offset = 0;
      GElf_Sym sym;
      const char* name = dwfl_module_addrinfo(mod, address, &offset, &sym,
                                              nullptr, nullptr, nullptr);
      std::string demangled;
      if (name != nullptr && name[0] != '\0') {
        if (frames.empty()) {
          if (!Demangle(name, &demangled)) demangled = name;  // C, Rust v0
          frames.push_back({std::move(demangled), file, line});
        } else if (Demangle(name, &demangled) ||
                   frames.back().function.empty()) {
          frames.back().function = demangled.empty() ? name : demangled;
        }
      }
    }
    if (!frames.empty() && frames.back().function.empty() &&
        frames.size() == 1 && frames.back().file.empty()) {
      frames.clear();
    }
    return frames;
  }

  const SymbolizerOptions options_;
  SymbolizerStats stats_;
  Debuginfod debuginfod_;
  // Modules by build-id, and by path for those without one.
  absl::flat_hash_map<std::string, std::unique_ptr<LoadedModule>>
      modules_by_build_id_;
  absl::flat_hash_map<std::string, std::unique_ptr<LoadedModule>>
      modules_by_path_;
  // Every function and file name seen, once; node-based so pointers into it
  // stay valid.
  absl::node_hash_set<std::string> names_;
};

}  // namespace

std::unique_ptr<Symbolizer> Symbolizer::Create(
    const SymbolizerOptions& options) {
  return std::make_unique<DwflSymbolizer>(options);
}

}  // namespace collector
}  // namespace ringprof
