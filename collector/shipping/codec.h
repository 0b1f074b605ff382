// Byte-level encodings used on the way to Pyroscope: zstd for the disk
// spool and UUIDv4 profile ids (gzip for raw profiles is ../base/gzip.h).
//
// Thread-safety: all functions are thread-safe (no shared state besides a
// thread-local random engine for ids).
#ifndef RINGPROF_COLLECTOR_SHIPPING_CODEC_H_
#define RINGPROF_COLLECTOR_SHIPPING_CODEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {
namespace shipping {

// One zstd frame (content size recorded) and its inverse. Decompression
// refuses frames claiming more than `max_output_bytes`.
std::string ZstdCompress(absl::string_view data, int level = 3);
absl::StatusOr<std::string> ZstdDecompress(absl::string_view data,
                                           size_t max_output_bytes);

// A random (version 4, variant 1) UUID, lowercase hex with dashes.
std::string NewUuidV4();

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_CODEC_H_
