#include "collector/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("cannot write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

void SyncDirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

absl::string_view Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

absl::Status ErrnoError(absl::string_view what, absl::string_view path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents,
                                 const WriteOptions& options) {
  const size_t slash = path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  const std::string tmp =
      absl::StrCat(path.substr(0, name_at), ".", path.substr(name_at), ".",
                   ::getpid(), ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        options.mode);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  absl::Status status = WriteAll(fd, contents, tmp);
  if (status.ok() && options.durable && ::fsync(fd) != 0) {
    status = ErrnoError("cannot fsync", tmp);
  }
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot rename to", path);
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return absl::Status(status.code(),
                        absl::StrCat("writing ", path, ": ", status.message()));
  }
  if (options.durable) SyncDirectoryOf(path);
  return absl::OkStatus();
}

namespace {

absl::Status TooLarge(const std::string& path, size_t max_bytes) {
  return absl::DataLossError(
      absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
}

// Reads `fd` to its end, at most `max_bytes`; closes it.
absl::StatusOr<std::string> ReadToEnd(int fd, const std::string& path,
                                      size_t max_bytes) {
  std::string out;
  char buffer[64 * 1024];
  absl::Status status;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoError("cannot read", path);
      break;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      status = TooLarge(path, max_bytes);
      break;
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return out;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  return ReadToEnd(fd, path, max_bytes);
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            size_t max_bytes,
                                            bool follow_symlinks) {
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                               (follow_symlinks ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return TooLarge(path, max_bytes);
  }
  return ReadToEnd(fd, path, max_bytes);  // it may grow meanwhile
}

absl::Status MakeDirs(const std::string& dir, mode_t mode) {
  // The directory itself first, its parents only when missing: a directory
  // that exists, or whose parent does, costs one mkdir.
  if (::mkdir(dir.c_str(), mode) == 0 || errno == EEXIST) {
    return absl::OkStatus();
  }
  const size_t slash = dir.find_last_of('/');
  if (errno != ENOENT || slash == std::string::npos || slash == 0) {
    return ErrnoError("cannot create directory", dir);
  }
  absl::Status parent = MakeDirs(dir.substr(0, slash), mode);
  if (!parent.ok()) return parent;
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError("cannot create directory", dir);
  }
  return absl::OkStatus();
}

}  // namespace collector
}  // namespace ringprof
