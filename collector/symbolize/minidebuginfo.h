// MiniDebugInfo: the symbol table that Fedora, RHEL, CentOS Stream, Rocky
// and Amazon Linux keep in their stripped binaries, as an xz-compressed ELF
// in the `.gnu_debugdata` section (gdb, perf and elfutils read it). That
// ELF holds a .symtab of the functions the binary's .dynsym lacks (its
// static functions), at the binary's own addresses.
//
// The section is the workload's, so it is hostile: it may be huge, not xz,
// a decompression bomb, or decompress to a broken ELF (or to an ELF that
// carries a .gnu_debugdata of its own, which is never read). Every step is
// bounded: the compressed bytes read, the decompressed bytes kept, and the
// decoder's memory (MiniDebugInfoLimits); time is proportional to the
// bytes decompressed. Whatever fails is an error saying why.
//
// Thread-compatible. Allocates; not for signal handlers.
#ifndef RINGPROF_COLLECTOR_SYMBOLIZE_MINIDEBUGINFO_H_
#define RINGPROF_COLLECTOR_SYMBOLIZE_MINIDEBUGINFO_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/symbolize/module_file.h"

namespace ringprof {
namespace collector {

struct MiniDebugInfoLimits {
  // A larger .gnu_debugdata section is not read (Fedora's largest, of
  // libLLVM, is a few MiB).
  uint64_t max_compressed_bytes = uint64_t{64} << 20;
  // Decompression stops, and the section is refused, past this many bytes.
  uint64_t max_decompressed_bytes = uint64_t{128} << 20;
  // The xz decoder's own memory (its dictionary: 8 MiB at xz's default
  // level, 64 MiB at -9).
  uint64_t max_decoder_bytes = uint64_t{96} << 20;
};

// The ELF in `binary`'s .gnu_debugdata section. NotFound when there is no
// such section; any other error says why the section was refused.
absl::StatusOr<std::unique_ptr<ElfFile>> ReadMiniDebugInfo(
    const ElfFile& binary, const MiniDebugInfoLimits& limits = {});

// The same from the section's bytes (an .xz stream).
absl::StatusOr<std::unique_ptr<ElfFile>> MiniDebugInfoFromSection(
    absl::string_view compressed, const MiniDebugInfoLimits& limits = {});

// Decompresses an .xz stream (one or more concatenated streams) into
// *out, within the limits' decompressed and decoder sizes.
absl::Status XzDecompress(absl::string_view compressed,
                          const MiniDebugInfoLimits& limits, std::string* out);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZE_MINIDEBUGINFO_H_
