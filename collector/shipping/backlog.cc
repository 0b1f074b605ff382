#include "collector/shipping/backlog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "collector/base/file.h"
#include "collector/shipping/codec.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr char kSuffix[] = ".rpspool";
// Far above any valid record (4 MiB pprof + labels): a larger claim is
// corruption.
constexpr size_t kMaxRecordBytes = 64 << 20;

}  // namespace

// --- MemoryBacklog ---

absl::StatusOr<size_t> MemoryBacklog::Append(const SpoolRecord& record) {
  const uint64_t size = record.ByteSizeLong();
  if (size > max_bytes_) return 1;
  size_t dropped = 0;
  while (bytes_ + size > max_bytes_) {
    PopFront();
    ++dropped;
  }
  records_.push_back(record);
  bytes_ += size;
  return dropped;
}

absl::StatusOr<SpoolRecord> MemoryBacklog::Front() { return records_.front(); }

void MemoryBacklog::PopFront() {
  bytes_ -= records_.front().ByteSizeLong();
  records_.pop_front();
}

// --- DiskSpool ---

absl::StatusOr<std::unique_ptr<DiskSpool>> DiskSpool::Open(
    const std::string& dir, uint64_t max_bytes) {
  if (absl::Status s = MakeDirs(dir, 0700); !s.ok()) return s;
  const std::string lock_path = dir + "/.lock";
  const int lock_fd =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return ErrnoError("cannot open", lock_path);
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    close(lock_fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "spool directory ", dir, " is in use by another ringprof collector"));
  }
  std::unique_ptr<DiskSpool> spool(new DiskSpool(dir, max_bytes, lock_fd));

  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("cannot list", dir);
  std::vector<File> files;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (name.size() > 4 && name[0] == '.' &&
        name.substr(name.size() - 4) == ".tmp") {
      // A write interrupted before its rename: never complete, never listed.
      unlinkat(dirfd(d), e->d_name, 0);
      continue;
    }
    if (!absl::ConsumeSuffix(&name, kSuffix)) continue;
    uint64_t seq;
    if (!absl::SimpleAtoi(name, &seq) || seq == 0) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;
    files.push_back({seq, static_cast<uint64_t>(st.st_size)});
  }
  closedir(d);
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.seq < b.seq; });
  for (const File& f : files) {
    spool->files_.push_back(f);
    spool->bytes_ += f.bytes;
    spool->next_seq_ = f.seq + 1;
  }
  return spool;
}

DiskSpool::~DiskSpool() { close(lock_fd_); }

std::string DiskSpool::PathOf(uint64_t seq) const {
  char name[48];
  std::snprintf(name, sizeof(name), "/%020" PRIu64 "%s", seq, kSuffix);
  return dir_ + name;
}

absl::StatusOr<size_t> DiskSpool::Append(const SpoolRecord& record) {
  const std::string data = ZstdCompress(record.SerializeAsString());
  if (data.size() > max_bytes_) return 1;
  size_t dropped = 0;
  while (!files_.empty() && bytes_ + data.size() > max_bytes_) {
    PopFront();
    ++dropped;
  }

  const uint64_t seq = next_seq_++;
  WriteOptions options;
  options.mode = 0600;
  options.durable = true;
  // The temporary file is ".<name>.<pid>.tmp": Open removes leftovers.
  if (absl::Status s = WriteFileAtomically(PathOf(seq), data, options);
      !s.ok()) {
    return s;
  }
  files_.push_back({seq, data.size()});
  bytes_ += data.size();
  return dropped;
}

absl::StatusOr<SpoolRecord> DiskSpool::Front() {
  const std::string path = PathOf(files_.front().seq);
  absl::StatusOr<std::string> data = ReadFile(path, kMaxRecordBytes);
  if (!data.ok()) return absl::DataLossError(data.status().message());
  absl::StatusOr<std::string> raw = ZstdDecompress(*data, kMaxRecordBytes);
  if (!raw.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", raw.status().message()));
  }
  SpoolRecord record;
  if (!record.ParseFromString(*raw)) {
    return absl::DataLossError(absl::StrCat(path, ": not a spool record"));
  }
  return record;
}

void DiskSpool::PopFront() {
  unlink(PathOf(files_.front().seq).c_str());
  bytes_ -= files_.front().bytes;
  files_.pop_front();
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
