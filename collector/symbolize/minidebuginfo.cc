#include "collector/symbolize/minidebuginfo.h"

#include <gelf.h>
#include <libelf.h>
#include <lzma.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

std::string LzmaError(lzma_ret ret) {
  switch (ret) {
    case LZMA_FORMAT_ERROR:
      return "not xz data";
    case LZMA_DATA_ERROR:
    case LZMA_BUF_ERROR:
      return "corrupt or truncated xz data";
    case LZMA_OPTIONS_ERROR:
      return "unsupported xz options";
    case LZMA_MEM_ERROR:
      return "out of memory";
    default:
      return absl::StrCat("xz error ", static_cast<int>(ret));
  }
}

}  // namespace

absl::Status XzDecompress(absl::string_view compressed,
                          const MiniDebugInfoLimits& limits, std::string* out) {
  lzma_stream stream = LZMA_STREAM_INIT;
  lzma_ret ret =
      lzma_stream_decoder(&stream, limits.max_decoder_bytes, LZMA_CONCATENATED);
  if (ret != LZMA_OK) return absl::InternalError(LzmaError(ret));
  stream.next_in = reinterpret_cast<const uint8_t*>(compressed.data());
  stream.avail_in = compressed.size();
  out->clear();
  // Grows in steps, so a bomb costs what it wrote before the limit, not
  // what its header claims.
  size_t step =
      std::min<uint64_t>(uint64_t{1} << 20, compressed.size() * 4 + 4096);
  absl::Status status;
  for (;;) {
    if (stream.avail_out == 0) {
      if (out->size() >= limits.max_decompressed_bytes) {
        status = absl::ResourceExhaustedError(
            absl::StrCat("decompresses to more than ",
                         limits.max_decompressed_bytes, " bytes"));
        break;
      }
      const size_t used = out->size();
      const size_t grown = static_cast<size_t>(
          std::min<uint64_t>(used + step, limits.max_decompressed_bytes));
      out->resize(grown);
      step = std::min<size_t>(step * 2, size_t{64} << 20);
      stream.next_out = reinterpret_cast<uint8_t*>(&(*out)[used]);
      stream.avail_out = grown - used;
    }
    ret = lzma_code(&stream, LZMA_FINISH);
    if (ret == LZMA_STREAM_END) break;
    if (ret == LZMA_MEMLIMIT_ERROR) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("its xz decoder needs more than ",
                       limits.max_decoder_bytes, " bytes"));
      break;
    }
    if (ret != LZMA_OK) {
      status = absl::InvalidArgumentError(LzmaError(ret));
      break;
    }
  }
  const size_t produced = out->size() - stream.avail_out;
  lzma_end(&stream);
  if (!status.ok()) {
    out->clear();
    out->shrink_to_fit();
    return status;
  }
  out->resize(produced);
  out->shrink_to_fit();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ElfFile>> MiniDebugInfoFromSection(
    absl::string_view compressed, const MiniDebugInfoLimits& limits) {
  std::string image;
  absl::Status status = XzDecompress(compressed, limits, &image);
  if (!status.ok()) return status;
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::FromMemory(std::move(image));
  if (!file.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decompressed, not a sound ELF: ", file.status().message()));
  }
  return file;
}

absl::StatusOr<std::unique_ptr<ElfFile>> ReadMiniDebugInfo(
    const ElfFile& binary, const MiniDebugInfoLimits& limits) {
  Elf_Scn* scn = binary.Section(".gnu_debugdata");
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr ||
      shdr.sh_type == SHT_NOBITS) {
    return absl::NotFoundError("no .gnu_debugdata section");
  }
  if (shdr.sh_size > limits.max_compressed_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(".gnu_debugdata of ", shdr.sh_size, " bytes exceeds the ",
                     limits.max_compressed_bytes, "-byte limit"));
  }
  // The raw bytes: libelf reads exactly the section (checked to lie inside
  // the file when it was opened).
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size == 0) {
    return absl::InvalidArgumentError(".gnu_debugdata could not be read");
  }
  absl::StatusOr<std::unique_ptr<ElfFile>> mini = MiniDebugInfoFromSection(
      absl::string_view(static_cast<const char*>(data->d_buf), data->d_size),
      limits);
  if (!mini.ok()) {
    return absl::Status(
        mini.status().code(),
        absl::StrCat(".gnu_debugdata: ", mini.status().message()));
  }
  return mini;
}

}  // namespace collector
}  // namespace ringprof
