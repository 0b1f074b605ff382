// libFuzzer target for MiniDebugInfo (.gnu_debugdata) as a workload's
// stripped binary carries it: `bazel run --config=fuzz
// //collector/symbolize:minidebuginfo_fuzz -- -max_total_time=300`. Without
// --config=fuzz it replays input files.
//
// The first input byte picks the mode: even = the rest is the section's
// bytes (xz, or not); odd = the rest is the ELF inside, compressed here with
// xz so that mutations reach the ELF and symbol-table readers. What
// decompresses is indexed as the symbolizer indexes it and looked up at a
// spread of addresses.
#include <gelf.h>
#include <lzma.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "collector/symbolize/minidebuginfo.h"
#include "collector/symbolize/symbol_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ringprof::collector::ElfFile;
  using ringprof::collector::MiniDebugInfoLimits;
  using ringprof::collector::SymbolTable;
  if (size == 0) return 0;
  std::string section(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 1) {
    std::string compressed(lzma_stream_buffer_bound(section.size()), '\0');
    size_t written = 0;
    if (lzma_easy_buffer_encode(
            0, LZMA_CHECK_CRC32, nullptr,
            reinterpret_cast<const uint8_t*>(section.data()), section.size(),
            reinterpret_cast<uint8_t*>(compressed.data()), &written,
            compressed.size()) != LZMA_OK) {
      return 0;
    }
    compressed.resize(written);
    section = std::move(compressed);
  }
  MiniDebugInfoLimits limits;
  limits.max_decompressed_bytes = 16 << 20;
  absl::StatusOr<std::unique_ptr<ElfFile>> mini =
      ringprof::collector::MiniDebugInfoFromSection(section, limits);
  if (!mini.ok()) return 0;
  SymbolTable table;
  table.AddSymbols((*mini)->elf(), SHT_SYMTAB);
  table.AddFunctionStarts((*mini)->elf());
  table.Finish();
  SymbolTable::Hit hit;
  for (uint64_t address = 0; address < (1u << 20); address += 257) {
    table.Lookup(address, &hit);
  }
  return 0;
}
