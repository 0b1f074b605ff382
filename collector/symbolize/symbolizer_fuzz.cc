// libFuzzer target for the symbolizer's reading of module files (ElfFile,
// SymbolTable, the DWARF indexes): `bazel run --config=fuzz
// //collector/symbolize:symbolizer_fuzz -- -max_total_time=300`. Without
// --config=fuzz the same binary replays input files.
//
// The first input byte picks the mode: even = the rest of the input is the
// whole module file; odd = the rest is a list of 4-byte patches (offset u24
// LE, value) applied to this binary's own ELF (which has DWARF), offset
// 0xffffff truncating it to value / 256 of its size: that reaches the symbol
// table, .eh_frame and DWARF paths far more often than raw bytes would.
// The file is then symbolized at a spread of addresses, as a module a
// workload named.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/symbolize/symbolizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ringprof::collector::AddressKind;
  using ringprof::collector::ModuleInfo;
  using ringprof::collector::Symbolizer;
  using ringprof::collector::SymbolizerOptions;
  static const std::string* const self = [] {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    return new std::string((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
  }();
  static const std::string* const path = [] {
    const char* dir = getenv("TMPDIR");
    return new std::string(absl::StrCat(dir != nullptr ? dir : "/tmp",
                                        "/symbolizer_fuzz.", getpid(), ".so"));
  }();
  if (size == 0) return 0;
  std::string file;
  if (data[0] % 2 == 0) {
    file.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    file = *self;
    for (size_t i = 1; i + 4 <= size; i += 4) {
      const size_t offset = data[i] | data[i + 1] << 8 | data[i + 2] << 16;
      if (offset == 0xffffff) {
        file.resize(file.size() / 256 * data[i + 3]);
      } else if (!file.empty()) {
        file[offset * 64 % file.size()] = static_cast<char>(data[i + 3]);
      }
    }
  }
  {
    std::ofstream out(*path, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
  }
  SymbolizerOptions options;
  options.use_debuginfod = false;
  options.system_debug_dir.clear();
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module;
  module.path = *path;
  module.pid = static_cast<uint32_t>(getpid());
  for (uint64_t address = 0; address < (1u << 22); address += 4099) {
    symbolizer->Symbolize(module, address, AddressKind::kReturnAddress);
  }
  unlink(path->c_str());
  return 0;
}
