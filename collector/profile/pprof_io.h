// Reading and writing pprof files: gzip-compressed serialized
// perftools.profiles.Profile, as go tool pprof and Pyroscope expect.
// Reading also accepts uncompressed files.
//
// Thread-safe (no shared state).
#ifndef RINGPROF_COLLECTOR_PPROF_IO_H_
#define RINGPROF_COLLECTOR_PPROF_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// gzip (RFC 1952) of `data`.
absl::StatusOr<std::string> GzipCompress(absl::string_view data);
// Inflates gzip data; returns `data` unchanged when it is not gzip. Refuses
// to inflate beyond `max_size` bytes (a bound against decompression bombs).
absl::StatusOr<std::string> MaybeGunzip(absl::string_view data,
                                        size_t max_size = 256u << 20);

// Writes `contents` to `path` atomically (temporary file + rename).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents);
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Gzips and writes a serialized profile.
absl::Status WriteProfileFile(const std::string& path,
                              absl::string_view serialized_profile);
absl::StatusOr<perftools::profiles::Profile> ReadProfileFile(
    const std::string& path);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_IO_H_
