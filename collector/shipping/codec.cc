#include "collector/shipping/codec.h"

#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace shipping {

std::string ZstdCompress(absl::string_view data, int level) {
  std::string out;
  out.resize(ZSTD_compressBound(data.size()));
  const size_t n =
      ZSTD_compress(&out[0], out.size(), data.data(), data.size(), level);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

absl::StatusOr<std::string> ZstdDecompress(absl::string_view data,
                                           size_t max_output_bytes) {
  const unsigned long long size =
      ZSTD_getFrameContentSize(data.data(), data.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("not a zstd frame with a known content size");
  }
  if (size > max_output_bytes) {
    return absl::DataLossError(
        absl::StrCat("zstd frame claims ", size, " bytes"));
  }
  std::string out;
  out.resize(size);
  const size_t n =
      ZSTD_decompress(&out[0], out.size(), data.data(), data.size());
  if (ZSTD_isError(n) || n != size) {
    return absl::DataLossError(
        absl::StrCat("corrupt zstd frame: ", ZSTD_getErrorName(n)));
  }
  return out;
}

std::string NewUuidV4() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }()};
  uint8_t b[16];
  for (int i = 0; i < 16; i += 8) {
    const uint64_t r = engine();
    for (int k = 0; k < 8; ++k) b[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  b[6] = (b[6] & 0x0F) | 0x40;  // version 4
  b[8] = (b[8] & 0x3F) | 0x80;  // variant 1 (RFC 4122)
  char out[37];
  std::snprintf(
      out, sizeof(out),
      "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
      b[12], b[13], b[14], b[15]);
  return out;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
