#include "collector/profile/pprof_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

absl::Status ErrnoStatus(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> GzipCompress(absl::string_view data) {
  z_stream zs{};
  // 15 window bits + 16: gzip header instead of zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return absl::InternalError("deflate failed");
  out.resize(zs.total_out);
  return out;
}

absl::StatusOr<std::string> MaybeGunzip(absl::string_view data,
                                        size_t max_size) {
  if (data.size() < 2 || static_cast<uint8_t>(data[0]) != 0x1f ||
      static_cast<uint8_t>(data[1]) != 0x8b) {
    return std::string(data);
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
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

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  absl::Status status = WriteAll(fd, contents);
  if (::close(fd) != 0 && status.ok()) status = ErrnoStatus("close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoStatus("cannot rename to", path);
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return absl::Status(status.code(),
                        absl::StrCat("writing ", path, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path);
  std::string out;
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoStatus("cannot read", path);
      ::close(fd);
      return status;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status WriteProfileFile(const std::string& path,
                              absl::string_view serialized_profile) {
  absl::StatusOr<std::string> gz = GzipCompress(serialized_profile);
  if (!gz.ok()) return gz.status();
  return WriteFileAtomically(path, *gz);
}

absl::StatusOr<perftools::profiles::Profile> ReadProfileFile(
    const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::string> raw = MaybeGunzip(*bytes);
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
