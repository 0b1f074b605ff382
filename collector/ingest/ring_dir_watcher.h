// RingDirWatcher: finds ring files (`*.ring`, the emitter's naming) that
// appear in a directory. Uses inotify when the kernel offers it and always
// rescans the directory every `rescan_interval` as well, because inotify is
// absent or incomplete on some file systems (gVisor's shared mounts, NFS).
// An event adds the file it names; only the periodic rescan (or an
// overflowed event queue) lists the directory, so a busy directory costs
// no listing per event.
//
// Thread-compatible: one thread (the drainer) owns it; Wake() may be called
// from any thread.
#ifndef RINGPROF_COLLECTOR_INGEST_RING_DIR_WATCHER_H_
#define RINGPROF_COLLECTOR_INGEST_RING_DIR_WATCHER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ringprof {
namespace collector {

class RingDirWatcher {
 public:
  // NotFound / PermissionDenied when `dir` cannot be listed.
  static absl::StatusOr<std::unique_ptr<RingDirWatcher>> Create(
      const std::string& dir, absl::Duration rescan_interval);
  ~RingDirWatcher();

  // Waits up to `timeout` for directory activity (returns early on an
  // inotify event or a Wake()), then returns the paths of ring files not
  // returned before: those the events name (regular files only), and the
  // listing's when a rescan is due or the event queue overflowed.
  std::vector<std::string> Wait(absl::Duration timeout);

  // Ends the current Wait, or the next one, at once. Thread-safe.
  void Wake();

  // Lists the directory now; returns ring files not returned before.
  std::vector<std::string> Rescan();

  // Forget `path` (deleted by retention), so a new file of that name is
  // reported again.
  void Forget(const std::string& path) { known_.erase(path); }

  bool using_inotify() const { return inotify_fd_ >= 0; }

  // When Wait lists the directory next even without activity (in the past
  // before the first listing): a caller's wait must not run beyond it.
  absl::Time next_scan() const { return next_scan_; }

 private:
  RingDirWatcher(std::string dir, absl::Duration rescan_interval);
  // Appends the ring files of the listing not returned before (unsorted).
  void Scan(std::vector<std::string>* found);
  // Drains the inotify queue, appending new ring files the events name;
  // true when the queue overflowed (events were lost: list the directory).
  bool ReadEvents(std::vector<std::string>* found);

  const std::string dir_;
  const absl::Duration rescan_interval_;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;  // eventfd; -1 if none could be made (Wait then polls)
  absl::Time next_scan_ = absl::InfinitePast();
  absl::flat_hash_set<std::string> known_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_RING_DIR_WATCHER_H_
