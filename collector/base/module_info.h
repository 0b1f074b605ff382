// ModuleInfo: one mapped module of a profiled process, the collector's one
// representation of it (built from a ringfile ModuleMap record, kept by the
// profiler's stack table, saved in checkpoints, looked up by the
// symbolizer, written as a pprof mapping).
//
// Thread-compatible plain data.
#ifndef RINGPROF_COLLECTOR_BASE_MODULE_INFO_H_
#define RINGPROF_COLLECTOR_BASE_MODULE_INFO_H_

#include <cstdint>
#include <string>

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

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_MODULE_INFO_H_
