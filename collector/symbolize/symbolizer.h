// Symbolizer: turns (module, address) into function names, inlined frames
// and file:line, from ELF symbol tables and DWARF (elfutils libelf/libdw).
// Each binary is indexed once per build-id (a sorted address -> symbol
// table; DWARF's compilation-unit ranges, then per-unit function indexes
// and line tables on first use), shared by every process that maps it, and
// each distinct address is resolved once. What is cached is bounded by
// SymbolizerOptions::cache_bytes (least recently used modules go first).
//
// The workload is untrusted: module files are opened inside its root
// directory only, as regular files of bounded size, read into owned memory
// (see module_file.h), and used only when their build-id matches.
//
// Thread-compatible (one collector thread uses it). Allocates; not for use
// in signal handlers. Implemented in collector/symbolize/symbolizer.cc; the
// lookup order and caching are described in collector/SYMBOLS.md.
#ifndef RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOLIZER_H_
#define RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collector/base/module_info.h"

namespace ringprof {
namespace collector {

struct SymbolizedFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty when unknown
  int64_t line = 0;
  // `function` is no name but "[module] 0x<start>": only the function's
  // start is known (from .eh_frame, in a stripped binary).
  bool unnamed = false;
};

// What an address in a stack is. Unwinders record return addresses for every
// frame but the interrupted one; a return address points at the instruction
// *after* the call, which may already belong to the next line or even the
// next function (a call to a noreturn function at the end of a body). The
// symbolizer looks up `address - 1` for kReturnAddress so the call
// instruction itself is attributed.
//
// For ringprof stacks: every frame of an allocation sample is a return
// address (frames[0] is the return into malloc's caller); for CPU samples
// frames[0] is the interrupted PC (kInstruction) and the rest are return
// addresses.
enum class AddressKind {
  kInstruction,    // the PC of an instruction: looked up as is
  kReturnAddress,  // a return address: looked up as address - 1
};

// Counters for metrics and tests. "Addresses" are distinct (module, lookup
// address) pairs; repeated lookups of one address are cache hits.
struct SymbolizerStats {
  uint64_t lookups = 0;               // calls to Symbolize
  uint64_t cache_hits = 0;            // answered from the per-address cache
  uint64_t addresses_resolved = 0;    // distinct addresses with >= 1 frame
  uint64_t addresses_unresolved = 0;  // distinct addresses with no frame
  uint64_t modules_opened = 0;        // modules with an ELF or debug file found
  uint64_t modules_not_found = 0;     // modules with no usable file anywhere
  uint64_t build_id_mismatches = 0;   // candidate files skipped for their id
  uint64_t debuginfod_fetches = 0;    // files obtained from debuginfod
  uint64_t files_rejected = 0;        // not regular, too large, not a sound ELF
  uint64_t roots_denied = 0;  // opens of /proc/<pid>/root refused (EACCES)
  uint64_t files_denied = 0;  // workload binaries refused (EACCES)
  uint64_t minidebuginfo_read = 0;      // stripped binaries named by it
  uint64_t minidebuginfo_rejected = 0;  // .gnu_debugdata refused
  uint64_t modules_unnamed = 0;  // modules with an address left without a
                                 // function name (each logged once)
  uint64_t modules_evicted = 0;  // dropped to stay within cache_bytes
  uint64_t modules_cached = 0;   // modules indexed now
  uint64_t cache_bytes = 0;      // estimated bytes held now
};

struct SymbolizerOptions {
  // Directories laid out like /usr/lib/debug: .build-id/ab/cdef....debug
  std::vector<std::string> symbol_dirs;
  // Root of the workload's /proc ("/proc"). A module's path is resolved
  // inside <proc_root>/<pid>/root only (never in the collector's own
  // filesystem); empty: module paths are not used, only build-ids.
  std::string proc_root = "/proc";
  // Where the distribution installs debug packages (Debian's *-dbg and
  // *-dbgsym): searched for separate debug files by build-id after
  // symbol_dirs, first inside the workload's root
  // (<proc_root>/<pid>/root<system_debug_dir>), then here. Empty: skipped.
  std::string system_debug_dir = "/usr/lib/debug";
  // Use debuginfod (DEBUGINFOD_URLS) when set.
  bool use_debuginfod = true;
  // Estimated memory for indexes and cached results; over it, the least
  // recently used modules are dropped (and indexed again if needed).
  uint64_t cache_bytes = uint64_t{512} << 20;
  // Larger binaries and debug files are not read.
  uint64_t max_file_bytes = uint64_t{2} << 30;
  // Resolve workload paths with the portable walk even where openat2
  // exists (tests of the fallback).
  bool walk_only = false;
};

class Symbolizer {
 public:
  static std::unique_ptr<Symbolizer> Create(const SymbolizerOptions& options);
  virtual ~Symbolizer() = default;

  // Brackets the life of a profiled process: while attached, the
  // symbolizer holds its root directory (<proc_root>/<pid>/root), so the
  // process's modules can be read even after it exits. Counted: attach as
  // often as detach.
  virtual void AttachProcess(uint32_t pid) {}
  virtual void DetachProcess(uint32_t pid) {}

  // Frames for `address` (an absolute runtime address inside `module`),
  // innermost (most deeply inlined) first and the physical function last.
  // Empty when nothing resolves; the caller then shows module+0xoffset.
  // Every candidate file is checked against module.build_id_hex when that is
  // known. `kind` says whether to look up `address - 1` (see AddressKind).
  virtual std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                                 uint64_t address,
                                                 AddressKind kind) = 0;

  // Same as above with AddressKind::kInstruction: `address` is looked up as
  // is. Callers holding return addresses should use the overload above.
  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t address) {
    return Symbolize(module, address, AddressKind::kInstruction);
  }

  // Why addresses of `module` have no function name, once one of them had
  // none (a frame empty, or only "[module] 0x<start>"): e.g. "stripped (no
  // .symtab) without MiniDebugInfo; no debug file found (...)",
  // "/usr/bin/x: access denied (...)", "/usr/bin/x: file not found; ...".
  // Said once per module in a warning when first found. Kept by build-id
  // (else path) for the first 1000 such modules; empty for the others and
  // when every address of the module looked up so far had a name.
  virtual std::string UnnamedReason(const ModuleInfo& module) const {
    return "";
  }

  // Distinct addresses that resolved to nothing so far (a metric).
  virtual uint64_t misses() const = 0;

  virtual SymbolizerStats stats() const = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOLIZER_H_
