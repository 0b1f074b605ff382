// Opening the files a workload names, and reading ELF from them without
// mapping them.
//
// The workload is untrusted: the module paths in its ring may name FIFOs,
// devices, huge sparse files, other people's secrets, or climb out of its
// root with "../" and symlinks, and a library may be truncated or rewritten
// in place (a deploy's `cp`) while the collector reads it. So:
//   * workload paths are resolved inside the workload's own root directory
//     (`/proc/<pid>/root`), with openat2(RESOLVE_IN_ROOT) or, where the
//     kernel lacks it (gVisor, Linux < 5.6), a component-by-component walk
//     that resolves symlinks itself and never lets ".." leave the root;
//   * every file is opened O_NONBLOCK|O_NOCTTY (a FIFO cannot block the
//     collector) and used only when it is a regular file no larger than a
//     cap;
//   * ELF data is read with pread into memory the collector owns (libelf's
//     ELF_C_READ), never mmap'd: a file truncated under us yields a read
//     error, not SIGBUS. Section and program headers are checked against the
//     file size before any section is read, so no read exceeds the file.
//
// Thread-compatible. Allocates; not for signal handlers.
#ifndef RINGPROF_COLLECTOR_SYMBOLIZE_MODULE_FILE_H_
#define RINGPROF_COLLECTOR_SYMBOLIZE_MODULE_FILE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// How a path inside a root is resolved.
enum class RootResolution {
  kAuto,      // openat2(RESOLVE_IN_ROOT), the walk when the kernel refuses it
  kWalkOnly,  // always the walk (tests of the fallback)
};

// The workload's root directory, `<proc_root>/<pid>/root`, as an O_PATH
// descriptor; it stays usable after the process exits.
absl::StatusOr<UniqueFd> OpenProcessRoot(absl::string_view proc_root,
                                         uint32_t pid);

// Opens `path` for reading as if `root_fd` were "/": absolute symlinks
// restart at root_fd, ".." stops there, magic links (/proc/self/...) are
// refused. Only regular files are returned (O_NONBLOCK: FIFOs and devices
// are refused without blocking).
absl::StatusOr<UniqueFd> OpenInRoot(
    int root_fd, absl::string_view path,
    RootResolution resolution = RootResolution::kAuto);

// Opens a path of the collector's own (a symbols dir, the debuginfod cache):
// regular files only, without blocking.
absl::StatusOr<UniqueFd> OpenRegularFile(const std::string& path);

// An ELF file read through libelf from a descriptor it owns, or from
// memory it owns (an ELF that another one carries, as MiniDebugInfo).
class ElfFile {
 public:
  // Takes `fd` over. Fails unless it is a regular file of at most
  // `max_bytes`, an ELF whose section and program headers lie inside it.
  static absl::StatusOr<std::unique_ptr<ElfFile>> Open(UniqueFd fd,
                                                       uint64_t max_bytes);
  // Takes `image` over, with the same checks. fd() is -1.
  static absl::StatusOr<std::unique_ptr<ElfFile>> FromMemory(std::string image);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  Elf* elf() const { return elf_; }
  int fd() const { return fd_.get(); }  // -1 once detached, or in memory
  uint64_t size() const { return size_; }

  // The NT_GNU_BUILD_ID note as lower-case hex; empty without one.
  std::string BuildIdHex() const;

  // The .gnu_debuglink file name (empty without one) and its CRC-32.
  std::string DebugLink(uint32_t* crc) const;

  // Whether the file has DWARF (a .debug_info section with contents).
  bool HasDwarf() const;

  // The section called `name`, or null.
  Elf_Scn* Section(absl::string_view name) const;

  // Reads every section libdw will use, then tells libelf the descriptor is
  // gone and closes it: from here on nothing is read from the file, so it
  // may be truncated or replaced without effect. Returns the bytes read.
  // DWARF sections the symbolizer never needs (location lists, macros,
  // name indexes, .debug_frame) are neither read nor decompressed: they are
  // marked SHT_NOBITS, which libdw skips. Compressed ones it needs
  // (SHF_COMPRESSED, zlib) are inflated here with libdeflate, about 2.5x
  // faster than the zlib inflate libdw would use on them (Debian's
  // libc6-dbg: 10 MB in ~17 ms instead of ~45 ms).
  size_t DetachFile();

 private:
  ElfFile(UniqueFd fd, Elf* elf, uint64_t size)
      : fd_(std::move(fd)), elf_(elf), size_(size) {}
  // Fails unless elf_ is an ELF whose headers lie inside its size_ bytes.
  absl::Status CheckLayout() const;
  // Replaces `data`, the contents of the zlib-compressed section `scn`
  // (header `shdr`), with its inflated bytes, kept in inflated_; false,
  // changing nothing, for anything else or anything that fails to inflate
  // to the size its header declares (libdw then sees it as before).
  bool InflateSection(Elf_Scn* scn, GElf_Shdr* shdr, Elf_Data* data);

  UniqueFd fd_;
  std::string image_;  // FromMemory: the bytes elf_ reads
  // Inflated sections elf_'s data points at (freed after elf_end).
  std::vector<std::unique_ptr<char[]>> inflated_;
  Elf* elf_;
  uint64_t size_;
};

// CRC-32 of the file's contents (as .gnu_debuglink records it); reads it
// with pread, up to `max_bytes`. False on a read error or a longer file.
bool FileCrc32(int fd, uint64_t max_bytes, uint32_t* crc);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZE_MODULE_FILE_H_
