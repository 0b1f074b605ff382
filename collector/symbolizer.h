// Symbolizer: turns (module, address) into function names, inlined frames
// and file:line, from ELF symbol tables and DWARF (elfutils libdw), keyed by
// build-id and cached so each address is resolved once.
//
// Thread-compatible (one collector thread uses it).
#ifndef RINGPROF_COLLECTOR_SYMBOLIZER_H_
#define RINGPROF_COLLECTOR_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringprof {
namespace collector {

// A module as the emitter reported it (ringfile ModuleMap) plus its process.
struct ModuleInfo {
  std::string path;
  std::string build_id_hex;  // lower-case hex; empty when unknown
  uint64_t start = 0;        // runtime address range [start, start + size)
  uint64_t size = 0;
  uint64_t file_offset = 0;
  uint64_t load_bias = 0;  // runtime address - ELF virtual address
  uint32_t pid = 0;
};

struct SymbolizedFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty when unknown
  int64_t line = 0;
};

struct SymbolizerOptions {
  // Directories laid out like /usr/lib/debug: .build-id/ab/cdef....debug
  std::vector<std::string> symbol_dirs;
  // Root of the workload's /proc ("/proc"); binaries are looked up at
  // <proc_root>/<pid>/root/<path> first, then at <path> itself.
  std::string proc_root = "/proc";
  // Use debuginfod (DEBUGINFOD_URLS) when set.
  bool use_debuginfod = true;
};

class Symbolizer {
 public:
  static std::unique_ptr<Symbolizer> Create(const SymbolizerOptions& options);
  virtual ~Symbolizer() = default;

  // Frames for `address` (a return address or PC inside `module`), innermost
  // (most deeply inlined) first and the physical function last. Empty when
  // nothing resolves; the caller then shows module+0xoffset. Every candidate
  // file is checked against module.build_id_hex when that is known.
  virtual std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                                 uint64_t address) = 0;

  // Addresses that resolved to nothing so far (a metric).
  virtual uint64_t misses() const = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZER_H_
