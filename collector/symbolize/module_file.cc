#include "collector/symbolize/module_file.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/base/hex.h"

namespace ringprof {
namespace collector {
namespace {

constexpr int kReadFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
// As the kernel's MAXSYMLINKS.
constexpr int kMaxSymlinks = 40;

// Unlike base's ErrnoError, keeps errno's status code: a missing candidate
// (NotFound) is routine, anything else is a rejection worth counting.
absl::Status Errno(absl::string_view what, absl::string_view path) {
  return absl::Status(absl::ErrnoToStatusCode(errno),
                      absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

// Fails unless `fd` is a regular file.
absl::Status CheckRegular(int fd, absl::string_view path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  return absl::OkStatus();
}

// openat2 with RESOLVE_IN_ROOT; ENOSYS (or a seccomp EPERM) where the
// kernel or sandbox lacks it.
int OpenAt2InRoot(int root_fd, const std::string& path) {
#ifdef SYS_openat2
  struct open_how how = {};
  how.flags = kReadFlags;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(
      syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how)));
#else
  errno = ENOSYS;
  return -1;
#endif
}

// The walk: directories are held open on a stack, so ".." pops a
// descriptor instead of asking the kernel for a parent (which could lie
// outside the root after a rename), and symlinks are read and expanded
// here, relative to the root when absolute.
absl::StatusOr<UniqueFd> WalkInRoot(int root_fd, absl::string_view path) {
  std::vector<UniqueFd> dirs;  // below the root; the last is current
  auto current = [&] { return dirs.empty() ? root_fd : dirs.back().get(); };
  std::vector<std::string> pending;  // components left, last first
  auto push_path = [&](absl::string_view p) {
    std::vector<std::string> parts = absl::StrSplit(p, '/', absl::SkipEmpty());
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push_path(path);
  int symlinks = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    if (name == ".") continue;
    if (name == "..") {
      if (!dirs.empty()) dirs.pop_back();
      continue;
    }
    struct stat st;
    if (fstatat(current(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Errno("stat", path);
    }
    if (S_ISLNK(st.st_mode)) {
      if (++symlinks > kMaxSymlinks) {
        errno = ELOOP;
        return Errno("resolve", path);
      }
      char target[4096];
      ssize_t n =
          readlinkat(current(), name.c_str(), target, sizeof(target) - 1);
      if (n <= 0) return Errno("readlink", path);
      absl::string_view link(target, static_cast<size_t>(n));
      if (absl::StartsWith(link, "/")) dirs.clear();
      push_path(link);
      continue;
    }
    if (pending.empty()) {
      // O_NOFOLLOW: a symlink swapped in since the stat fails (ELOOP).
      int fd = openat(current(), name.c_str(), kReadFlags | O_NOFOLLOW);
      if (fd < 0) return Errno("open", path);
      return UniqueFd(fd);
    }
    int dir = openat(current(), name.c_str(),
                     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) return Errno("open", path);
    dirs.emplace_back(dir);
  }
  errno = EISDIR;
  return Errno("open", path);
}

// DWARF sections that addresses-to-lines-and-inlines never reads: variable
// locations, macros, name indexes, call frames. Often the largest ones of
// optimized code (.debug_loclists).
bool IsUnusedDwarfSection(absl::string_view name) {
  if (absl::StartsWith(name, ".zdebug_")) {
    name.remove_prefix(2);
  } else if (absl::StartsWith(name, ".debug_")) {
    name.remove_prefix(1);
  } else {
    return false;
  }
  for (absl::string_view unused :
       {"debug_loc", "debug_loclists", "debug_macro", "debug_macinfo",
        "debug_pubnames", "debug_pubtypes", "debug_gnu_pubnames",
        "debug_gnu_pubtypes", "debug_names", "debug_frame"}) {
    if (name == unused) return true;
  }
  return false;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<UniqueFd> OpenProcessRoot(absl::string_view proc_root,
                                         uint32_t pid) {
  const std::string path = absl::StrCat(proc_root, "/", pid, "/root");
  int fd = open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  return UniqueFd(fd);
}

absl::StatusOr<UniqueFd> OpenInRoot(int root_fd, absl::string_view path,
                                    RootResolution resolution) {
  absl::StatusOr<UniqueFd> fd;
  int opened = -1;
  if (resolution == RootResolution::kAuto) {
    opened = OpenAt2InRoot(root_fd, std::string(path));
  }
  if (opened >= 0) {
    fd = UniqueFd(opened);
  } else if (resolution == RootResolution::kWalkOnly || errno == ENOSYS ||
             errno == EPERM) {
    fd = WalkInRoot(root_fd, path);
  } else {
    return Errno("open", path);
  }
  if (!fd.ok()) return fd.status();
  absl::Status regular = CheckRegular(fd->get(), path);
  if (!regular.ok()) return regular;
  return fd;
}

absl::StatusOr<UniqueFd> OpenRegularFile(const std::string& path) {
  int opened = open(path.c_str(), kReadFlags);
  if (opened < 0) return Errno("open", path);
  UniqueFd fd(opened);
  absl::Status regular = CheckRegular(fd.get(), path);
  if (!regular.ok()) return regular;
  return fd;
}

absl::StatusOr<std::unique_ptr<ElfFile>> ElfFile::Open(UniqueFd fd,
                                                       uint64_t max_bytes) {
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Errno("fstat", "module file");
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "file of ", size, " bytes exceeds the ", max_bytes, "-byte limit"));
  }
  elf_version(EV_CURRENT);
  // ELF_C_READ: libelf preads what it needs into its own buffers.
  Elf* elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
  if (elf == nullptr) return absl::InvalidArgumentError(elf_errmsg(-1));
  std::unique_ptr<ElfFile> file(new ElfFile(std::move(fd), elf, size));
  absl::Status layout = file->CheckLayout();
  if (!layout.ok()) return layout;
  return file;
}

absl::StatusOr<std::unique_ptr<ElfFile>> ElfFile::FromMemory(
    std::string image) {
  elf_version(EV_CURRENT);
  if (image.empty()) return absl::InvalidArgumentError("empty ELF image");
  std::unique_ptr<ElfFile> file(new ElfFile(UniqueFd(), nullptr, image.size()));
  // libelf reads the image in place (and may convert it in place): it is
  // owned by the file, at a stable address, for as long as elf_.
  file->image_ = std::move(image);
  file->elf_ = elf_memory(file->image_.data(), file->image_.size());
  if (file->elf_ == nullptr) return absl::InvalidArgumentError(elf_errmsg(-1));
  absl::Status layout = file->CheckLayout();
  if (!layout.ok()) return layout;
  return file;
}

absl::Status ElfFile::CheckLayout() const {
  const uint64_t size = size_;
  Elf* elf = elf_;
  GElf_Ehdr ehdr;
  if (elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &ehdr) == nullptr) {
    return absl::InvalidArgumentError("not an ELF file");
  }
  auto inside = [size](uint64_t offset, uint64_t length) {
    return offset <= size && length <= size - offset;
  };
  size_t count = 0;
  // libelf reports no sections at all when the table it was told of lies
  // past the end.
  if (elf_getshdrnum(elf, &count) != 0 || (count == 0 && ehdr.e_shoff != 0) ||
      !inside(ehdr.e_shoff, static_cast<uint64_t>(count) *
                                gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT))) {
    return absl::InvalidArgumentError("section headers outside the file");
  }
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      return absl::InvalidArgumentError("unreadable section header");
    }
    if (shdr.sh_type != SHT_NOBITS && !inside(shdr.sh_offset, shdr.sh_size)) {
      return absl::InvalidArgumentError("a section lies outside the file");
    }
  }
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0 ||
      !inside(ehdr.e_phoff, static_cast<uint64_t>(phnum) *
                                gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT))) {
    return absl::InvalidArgumentError("program headers outside the file");
  }
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr ||
        (phdr.p_type == PT_NOTE && !inside(phdr.p_offset, phdr.p_filesz))) {
      return absl::InvalidArgumentError("a note segment lies outside the file");
    }
  }
  return absl::OkStatus();
}

ElfFile::~ElfFile() {
  if (elf_ != nullptr) elf_end(elf_);
}

std::string ElfFile::BuildIdHex() const {
  const void* bits = nullptr;
  ssize_t size = dwelf_elf_gnu_build_id(elf_, &bits);
  if (size <= 0 || bits == nullptr) return "";
  return HexEncode(static_cast<const unsigned char*>(bits),
                   static_cast<size_t>(size));
}

Elf_Scn* ElfFile::Section(absl::string_view name) const {
  size_t names = 0;
  if (elf_getshdrstrndx(elf_, &names) != 0) return nullptr;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf_, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* scn_name = elf_strptr(elf_, names, shdr.sh_name);
    if (scn_name != nullptr && name == scn_name) return scn;
  }
  return nullptr;
}

std::string ElfFile::DebugLink(uint32_t* crc) const {
  Elf_Scn* scn = Section(".gnu_debuglink");
  if (scn == nullptr) return "";
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return "";
  const char* bytes = static_cast<const char*>(data->d_buf);
  const size_t length = strnlen(bytes, data->d_size);
  // The name, NUL, padding to 4 bytes, then the CRC in the file's order.
  const size_t crc_at = (length + 4) & ~size_t{3};
  if (length == 0 || crc_at + 4 > data->d_size) return "";
  Elf_Data in = {};
  in.d_buf = const_cast<char*>(bytes + crc_at);
  in.d_type = ELF_T_WORD;
  in.d_size = 4;
  in.d_version = EV_CURRENT;
  Elf_Data out = in;
  out.d_buf = crc;
  if (gelf_xlatetom(elf_, &out, &in, elf_getident(elf_, nullptr)[EI_DATA]) ==
      nullptr) {
    return "";
  }
  std::string name(bytes, length);
  // A bare file name: it is looked up next to the module, never as a path.
  if (name.find('/') != std::string::npos || name == "." || name == "..") {
    return "";
  }
  return name;
}

bool ElfFile::HasDwarf() const {
  for (const char* name : {".debug_info", ".zdebug_info"}) {
    Elf_Scn* scn = Section(name);
    GElf_Shdr shdr;
    if (scn != nullptr && gelf_getshdr(scn, &shdr) != nullptr &&
        shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0) {
      return true;
    }
  }
  return false;
}

// Larger declared sizes are left to libdw (which inflates with zlib).
constexpr uint64_t kMaxInflatedSectionBytes = uint64_t{1} << 30;

bool ElfFile::InflateSection(Elf_Scn* scn, GElf_Shdr* shdr, Elf_Data* data) {
  GElf_Chdr chdr;
  const size_t header = gelf_fsize(elf_, ELF_T_CHDR, 1, EV_CURRENT);
  if ((shdr->sh_flags & SHF_COMPRESSED) == 0 || data == nullptr ||
      data->d_buf == nullptr || data->d_size < header ||
      gelf_getchdr(scn, &chdr) == nullptr || chdr.ch_type != ELFCOMPRESS_ZLIB ||
      chdr.ch_size == 0 || chdr.ch_size > kMaxInflatedSectionBytes) {
    return false;
  }
  std::unique_ptr<char[]> out(new (std::nothrow) char[chdr.ch_size]);
  if (out == nullptr) return false;
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)>
      inflater(libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  size_t inflated = 0;
  if (inflater == nullptr ||
      libdeflate_zlib_decompress(inflater.get(),
                                 static_cast<const char*>(data->d_buf) + header,
                                 data->d_size - header, out.get(), chdr.ch_size,
                                 &inflated) != LIBDEFLATE_SUCCESS ||
      inflated != chdr.ch_size) {
    return false;
  }
  // The section now reads as if it had never been compressed.
  shdr->sh_flags &= ~static_cast<GElf_Xword>(SHF_COMPRESSED);
  shdr->sh_size = chdr.ch_size;
  shdr->sh_addralign = chdr.ch_addralign;
  if (gelf_update_shdr(scn, shdr) == 0) return false;
  data->d_buf = out.get();
  data->d_size = chdr.ch_size;
  data->d_type = ELF_T_BYTE;
  data->d_align = chdr.ch_addralign;
  inflated_.push_back(std::move(out));
  return true;
}

size_t ElfFile::DetachFile() {
  size_t bytes = 0;
  size_t names = 0;
  if (elf_getshdrstrndx(elf_, &names) == 0) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf_, scn)) != nullptr;) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) {
        continue;
      }
      const char* name = elf_strptr(elf_, names, shdr.sh_name);
      if (name == nullptr) continue;
      absl::string_view view(name);
      if (IsUnusedDwarfSection(view)) {
        shdr.sh_type = SHT_NOBITS;
        if (gelf_update_shdr(scn, &shdr) != 0) continue;
      }
      if (absl::StartsWith(view, ".debug_") ||
          absl::StartsWith(view, ".zdebug_") || view == ".gnu_debugaltlink") {
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (absl::StartsWith(view, ".debug_")) {
          InflateSection(scn, &shdr, data);
        }
        if (data != nullptr) bytes += data->d_size;
      }
    }
  }
  elf_cntl(elf_, ELF_C_FDDONE);
  fd_ = UniqueFd();
  return bytes;
}

bool FileCrc32(int fd, uint64_t max_bytes, uint32_t* crc) {
  uLong value = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(1 << 16);
  uint64_t offset = 0;
  for (;;) {
    ssize_t n =
        pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    offset += static_cast<uint64_t>(n);
    if (offset > max_bytes) return false;
    value = crc32(value, buffer.data(), static_cast<uInt>(n));
  }
  *crc = static_cast<uint32_t>(value);
  return true;
}

}  // namespace collector
}  // namespace ringprof
