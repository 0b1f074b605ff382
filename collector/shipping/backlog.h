// Backlog: profiles that could not be uploaded yet, oldest first, bounded in
// bytes. Two implementations:
//  - DiskSpool: one zstd-compressed file per profile in a directory, named
//    by a zero-padded sequence number (so a directory listing sorts in
//    upload order), written to a temporary file, fsync'd and renamed, so a
//    crash leaves either the whole file or nothing. A later process opening
//    the same directory replays what is there. An flock on DIR/.lock keeps
//    two collectors from sharing one spool.
//  - MemoryBacklog: the same in RAM, for when no spool directory is set
//    (lost on exit).
// When appending would exceed the bound, the oldest records are dropped
// first; a record larger than the whole bound is dropped itself.
//
// Thread-compatible: owned and used by the upload thread only.
#ifndef RINGPROF_COLLECTOR_SHIPPING_BACKLOG_H_
#define RINGPROF_COLLECTOR_SHIPPING_BACKLOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/shipping/spool_record.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {

class Backlog {
 public:
  virtual ~Backlog() = default;

  // Stores `record` as the newest entry. Returns how many records were
  // dropped to respect the bound (including `record` itself if it alone
  // exceeds it), or an error when the record could not be stored (it is
  // then not in the backlog).
  virtual absl::StatusOr<size_t> Append(const SpoolRecord& record) = 0;
  // The oldest record. DataLoss when it cannot be read back (a corrupt or
  // truncated file); the caller then drops it with PopFront.
  virtual absl::StatusOr<SpoolRecord> Front() = 0;
  // Removes the oldest record. Requires !empty().
  virtual void PopFront() = 0;

  virtual size_t size() const = 0;
  bool empty() const { return size() == 0; }
  // Bytes held: file sizes on disk, serialized sizes in memory.
  virtual uint64_t bytes() const = 0;
  // True when the records survive a restart.
  virtual bool persistent() const = 0;
};

class MemoryBacklog final : public Backlog {
 public:
  explicit MemoryBacklog(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  absl::StatusOr<size_t> Append(const SpoolRecord& record) override;
  absl::StatusOr<SpoolRecord> Front() override;
  void PopFront() override;
  size_t size() const override { return records_.size(); }
  uint64_t bytes() const override { return bytes_; }
  bool persistent() const override { return false; }

 private:
  const uint64_t max_bytes_;
  std::deque<SpoolRecord> records_;
  uint64_t bytes_ = 0;
};

class DiskSpool final : public Backlog {
 public:
  // Creates `dir` (and parents) if needed, takes its lock, removes partial
  // temporary files and indexes the existing spool files.
  static absl::StatusOr<std::unique_ptr<DiskSpool>> Open(const std::string& dir,
                                                         uint64_t max_bytes);
  ~DiskSpool() override;

  absl::StatusOr<size_t> Append(const SpoolRecord& record) override;
  absl::StatusOr<SpoolRecord> Front() override;
  void PopFront() override;
  size_t size() const override { return files_.size(); }
  uint64_t bytes() const override { return bytes_; }
  bool persistent() const override { return true; }

  const std::string& dir() const { return dir_; }

 private:
  struct File {
    uint64_t seq;
    uint64_t bytes;
  };
  DiskSpool(std::string dir, uint64_t max_bytes, int lock_fd)
      : dir_(std::move(dir)), max_bytes_(max_bytes), lock_fd_(lock_fd) {}
  std::string PathOf(uint64_t seq) const;

  const std::string dir_;
  const uint64_t max_bytes_;
  const int lock_fd_;
  std::deque<File> files_;  // oldest first
  uint64_t bytes_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_BACKLOG_H_
