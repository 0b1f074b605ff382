// Reading and writing pprof files: gzip-compressed serialized
// perftools.profiles.Profile, as go tool pprof and Pyroscope expect.
// Reading also accepts uncompressed files.
//
// Thread-safe (no shared state).
#ifndef RINGPROF_COLLECTOR_PPROF_PPROF_IO_H_
#define RINGPROF_COLLECTOR_PPROF_PPROF_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// Gzips (at zlib level 1, as Go's runtime/pprof writes its profiles: a
// third of level 6's CPU for files about 12 % larger) and writes a
// serialized profile atomically.
absl::Status WriteProfileFile(const std::string& path,
                              absl::string_view serialized_profile);
absl::StatusOr<perftools::profiles::Profile> ReadProfileFile(
    const std::string& path);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_PPROF_IO_H_
