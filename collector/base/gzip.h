// gzip (RFC 1952): how pprof files are stored and how Pyroscope receives
// raw profiles.
//
// Thread-safe: each thread keeps its own compression state per level used
// (about 256 KiB each, until the thread exits) and reuses it, so
// compressing many small profiles does not build a new state every time.
#ifndef RINGPROF_COLLECTOR_BASE_GZIP_H_
#define RINGPROF_COLLECTOR_BASE_GZIP_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

// At zlib level `level` (1..9; clamped). Empty only when zlib cannot
// allocate its state.
std::string GzipCompress(absl::string_view data, int level = 6);

// True when `data` starts with gzip's magic bytes.
bool IsGzip(absl::string_view data);

// DataLoss for corrupt or truncated data; ResourceExhausted when the output
// would exceed `max_size` bytes (a bound against decompression bombs).
absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_size);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_GZIP_H_
