#include "collector/base/gzip.h"

#include <zlib.h>

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {

// windowBits 15 + 16: a gzip header and trailer instead of zlib's.
constexpr int kGzipWindowBits = 15 + 16;

std::string GzipCompress(absl::string_view data, int level) {
  z_stream zs = {};
  deflateInit2(&zs, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);  // the bound guarantees one call suffices
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

bool IsGzip(absl::string_view data) {
  return data.size() >= 2 && static_cast<uint8_t>(data[0]) == 0x1f &&
         static_cast<uint8_t>(data[1]) == 0x8b;
}

absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_size) {
  z_stream zs = {};
  if (inflateInit2(&zs, kGzipWindowBits) != Z_OK) {
    return absl::InternalError("inflateInit2 failed");
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[64 * 1024];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return absl::DataLossError(absl::StrCat(
          "corrupt gzip data: ", zs.msg != nullptr ? zs.msg : "inflate error"));
    }
    out.append(buffer, sizeof(buffer) - zs.avail_out);
    if (out.size() > max_size) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError(
          absl::StrCat("gzip data inflates beyond ", max_size, " bytes"));
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return absl::DataLossError("truncated gzip data");
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace collector
}  // namespace ringprof
