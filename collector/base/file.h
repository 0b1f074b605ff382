// Whole-file reads and atomic writes for everything the collector writes:
// profiles, flame graphs, the spool, ring state.
//
// Thread-safe (no shared state). Errors name the path and errno's text.
#ifndef RINGPROF_COLLECTOR_BASE_FILE_H_
#define RINGPROF_COLLECTOR_BASE_FILE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

struct WriteOptions {
  mode_t mode = 0644;
  // fsync the file before the rename and the directory after it, so the
  // file survives a machine crash once the call returns.
  bool durable = false;
};

// Writes `contents` to a temporary file ".<name>.<pid>.tmp" beside `path`
// and renames it over `path`: readers see the old file or the whole new one,
// never a part. On failure the temporary file is removed.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 const WriteOptions& options = {});

// DataLoss when the file holds more than `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes = SIZE_MAX);

// For paths anyone else may have planted something at (state files, secret
// files): reads only a regular file, refusing a FIFO or a device without
// blocking on it (FailedPrecondition "... is not a regular file"), a file of
// more than `max_bytes` (DataLoss "... is larger than N bytes"), and, with
// `follow_symlinks` false, a symlink. NotFound when there is no file.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            size_t max_bytes,
                                            bool follow_symlinks = true);

// mkdir -p with `mode` for the directories it creates.
absl::Status MakeDirs(const std::string& dir, mode_t mode);

// The last component of `path` (all of it without a '/'; empty after a
// trailing '/'). Points into `path`.
absl::string_view Basename(absl::string_view path);

// "<what> <path>: <strerror(errno)>".
absl::Status ErrnoError(absl::string_view what, absl::string_view path);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_FILE_H_
