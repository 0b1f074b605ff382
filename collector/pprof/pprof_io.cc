#include "collector/pprof/pprof_io.h"

#include "absl/strings/str_cat.h"
#include "collector/base/file.h"
#include "collector/base/gzip.h"

namespace ringprof {
namespace collector {

// A bound on what a profile file may inflate to (against decompression
// bombs): far above any profile within Pyroscope's limits.
constexpr size_t kMaxProfileBytes = 256u << 20;

absl::Status WriteProfileFile(const std::string& path,
                              absl::string_view serialized_profile) {
  return WriteFileAtomically(path,
                             GzipCompress(serialized_profile, /*level=*/1));
}

absl::StatusOr<perftools::profiles::Profile> ReadProfileFile(
    const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::string> raw =
      IsGzip(*bytes) ? GzipDecompress(*bytes, kMaxProfileBytes) : *bytes;
  if (!raw.ok()) {
    return absl::Status(raw.status().code(),
                        absl::StrCat(path, ": ", raw.status().message()));
  }
  perftools::profiles::Profile profile;
  // An empty or unrelated file may parse as an empty message.
  if (!profile.ParseFromString(*raw) || profile.sample_type_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a pprof profile"));
  }
  return profile;
}

}  // namespace collector
}  // namespace ringprof
