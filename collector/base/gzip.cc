#include "collector/base/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {

// windowBits 15 + 16: a gzip header and trailer instead of zlib's.
constexpr int kGzipWindowBits = 15 + 16;

namespace {

// A deflate state kept for reuse. deflateInit2 allocates and clears about
// 256 KiB; for a window's profile (8 KiB typical) that cost more than the
// compression itself. deflateReset starts a new stream on the same memory
// and gives the same bytes as a fresh state.
class Deflater {
 public:
  explicit Deflater(int level) {
    ok_ = deflateInit2(&zs_, level, Z_DEFLATED, kGzipWindowBits, 8,
                       Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~Deflater() {
    if (ok_) deflateEnd(&zs_);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // A fresh stream, or nullptr when zlib could not allocate its state.
  z_stream* Reset() {
    if (!ok_ || deflateReset(&zs_) != Z_OK) return nullptr;
    return &zs_;
  }

 private:
  z_stream zs_ = {};
  bool ok_ = false;
};

// This thread's state for `level`, made on first use (none is kept when
// zlib could not allocate one, so a later call tries again).
z_stream* ThreadStream(int level) {
  thread_local std::unique_ptr<Deflater> by_level[Z_BEST_COMPRESSION + 1];
  std::unique_ptr<Deflater>& deflater = by_level[level];
  if (deflater == nullptr) deflater = std::make_unique<Deflater>(level);
  z_stream* zs = deflater->Reset();
  if (zs == nullptr) deflater.reset();
  return zs;
}

}  // namespace

std::string GzipCompress(absl::string_view data, int level) {
  level = std::clamp(level, Z_BEST_SPEED, Z_BEST_COMPRESSION);
  z_stream* zs = ThreadStream(level);
  if (zs == nullptr) return std::string();
  std::string out(deflateBound(zs, data.size()) + 32, '\0');
  zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs->avail_in = static_cast<uInt>(data.size());
  zs->next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs->avail_out = static_cast<uInt>(out.size());
  deflate(zs, Z_FINISH);  // the bound guarantees one call suffices
  out.resize(zs->total_out);
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
