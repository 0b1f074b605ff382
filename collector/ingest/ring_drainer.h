// RingDrainer: follows every ring file in a directory and copies committed
// records into a BatchQueue, promptly, so that fixed-size rings do not
// overwrite data while the processing thread is busy symbolizing.
//
// Per ring file (= per profiled process):
//   * opened when it appears (inotify + periodic rescan). A file whose header
//     is not ready yet is retried; a file that is still invalid after
//     `open_grace` is reported once (path and reason) and skipped. Retries
//     come at every poll for the first second (a file made ready through
//     its mapping raises no inotify event, and its rings fill at once),
//     then every 100 ms;
//   * polled as often as its records arrive, so that the collector's cost
//     follows what it receives: after each poll the next one is set for
//     when, at the rate just seen, a quarter of one ring would be filled,
//     but at least `poll_interval` and at most kMaxActivePollInterval
//     (20 ms) later while records came within the last second, at most
//     kMaxPollInterval (100 ms) after that; at once again when a poll was
//     cut short by its budget. A wake-up also polls every ring due soon
//     (EarliestPoll), so rings share wake-ups, and the round's batches
//     wake the processing thread once, at its end. Each
//     batch carries a watermark on the process's own CLOCK_MONOTONIC: the
//     time up to which every record has been read, minus `watermark_slack`
//     (records are stamped shortly before they are committed);
//   * ended when the reader reports the process-ended flag with every ring
//     drained, or when the process is gone (no progress, and its pid is dead
//     or reused - checked through /proc/<pid>/stat's start time, or
//     kill(pid, 0)) after it was once seen alive: the rest is then drained
//     with PollOptions::writer_dead. Once any ring's process has been seen
//     alive with its recorded start time (so we share the writers' pid
//     namespace), a ring whose process is gone when it is opened (it
//     exited before we looked, or never existed) is drained and ended at
//     once. Otherwise a process that was never visible (other pid
//     namespace) is only ended by its end flag or by Stop();
//   * at most max_open_rings files are open (each holds a descriptor and a
//     mapping); the rest wait, files of processes seen alive first. A ring
//     without a record for ten seconds is polled every second;
//   * a file that breaks while being read (truncated, corrupt) is reported,
//     its process ended with what was read, and the file skipped;
//   * retention: once a process has ended and its ring is drained, the ring
//     file is deleted, unless keep_rings. Broken files and files of
//     processes still alive at shutdown are left in place.
//
// The drain thread sleeps until the earliest ring is due (or the directory
// changes, or Wake()), never longer than `rescan_interval`.
//
// Thread-compatible: one thread calls RunOnce/DrainAllAndEnd; Wake() and
// the counters may be used from any thread.
#ifndef RINGPROF_COLLECTOR_INGEST_RING_DRAINER_H_
#define RINGPROF_COLLECTOR_INGEST_RING_DRAINER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/ingest/drained_batch.h"
#include "collector/ingest/ring_dir_watcher.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace collector {

struct DrainerOptions {
  std::string ring_dir;
  absl::Duration poll_interval = absl::Milliseconds(5);
  absl::Duration rescan_interval = absl::Seconds(1);
  absl::Duration watermark_slack = absl::Milliseconds(250);
  absl::Duration liveness_interval = absl::Seconds(1);
  absl::Duration open_grace = absl::Seconds(5);
  bool keep_rings = false;
  uint32_t max_records_per_poll = 4096;
  // Lowered at Create when RLIMIT_NOFILE (raised to its hard limit if need
  // be) leaves less room.
  uint32_t max_open_rings = 256;
  // Saved read positions (ring_state.h); empty: none.
  std::string state_dir;
};

// Liveness of a ring file's writer process, as far as we can see.
enum class Liveness { kAlive, kGone, kUnknown };
// `verified` (optional) is set when the answer kAlive comes from
// /proc/<pid>/stat with the same start time, i.e. the writer's pid
// namespace is ours.
Liveness CheckProcess(uint32_t pid, uint64_t process_start_ticks,
                      bool* verified = nullptr);

// How long after a poll that found `records` records (read or lost), `since`
// after the previous poll, a ring of `slots_per_ring` slots per ring is
// polled again: when a quarter of one ring would be full at that rate (a
// process's records may all go to one of its rings), within
// [min_interval, max(min_interval, max_interval)].
absl::Duration PollDelay(uint64_t records, absl::Duration since,
                         uint32_t slots_per_ring, absl::Duration min_interval,
                         absl::Duration max_interval);

// From when a ring polled at `polled` and due at `due` is polled along
// with others when the drain thread is awake anyway: at most
// `min_interval` and half its delay early, so that rings opened at
// different moments share wake-ups instead of each waking the thread.
absl::Time EarliestPoll(absl::Time polled, absl::Time due,
                        absl::Duration min_interval);

class RingDrainer {
 public:
  static absl::StatusOr<std::unique_ptr<RingDrainer>> Create(
      const DrainerOptions& options, BatchQueue* queue);

  // The longest interval between two polls of a ring that received
  // records within the last second: a few quiet polls say little about the
  // next ones (a thread that starts allocating hard fills a 1024-slot ring
  // in about 100 ms, and a sleeping collector may wake late: in gVisor
  // under load, 100 ms polls lost 2-5% of the accuracy workload's records).
  static constexpr absl::Duration kMaxActivePollInterval =
      absl::Milliseconds(20);
  // The longest interval between two polls of a ring quiet for a second
  // (quiet for ten: every second).
  static constexpr absl::Duration kMaxPollInterval = absl::Milliseconds(100);

  // One round: when `wait`, sleep until a ring is due, the directory
  // changes or Wake() is called; then open new files, poll every ring that
  // is due, end processes that ended.
  void RunOnce(bool wait);

  // Ends the current (or next) RunOnce wait early: every ring is polled
  // now (e.g. the profiled command exited, or the collector stops).
  // Thread-safe.
  void Wake() {
    poll_all_.store(true);
    watcher_->Wake();
  }

  // Shutdown: drains everything committed so far and ends every process;
  // past `deadline` it stops reading and ends the rest as they are (their
  // files stay, to be resumed by the next collector).
  void DrainAllAndEnd(absl::Time deadline = absl::InfiniteFuture());

  // Rings opened so far / ended so far (any thread).
  uint64_t rings_opened() const { return opened_.load(); }
  uint64_t rings_ended() const { return ended_.load(); }
  // Polls of ring files so far (any thread).
  uint64_t polls() const { return polls_.load(); }
  uint32_t max_open_rings() const { return options_.max_open_rings; }

 private:
  struct Ring {
    uint32_t id = 0;
    std::string path;
    std::unique_ptr<ringfile::RingReader> reader;
    std::shared_ptr<const ringfile::FileInfo> info;
    bool same_clock_domain = true;
    bool seen_alive = false;
    bool writer_dead = false;
    bool check_liveness_now = false;
    absl::Time next_poll;
    absl::Time early_poll;  // from then on polled by any wake-up
    absl::Time last_poll;
    absl::Time last_progress;
    absl::Time next_liveness_check;
    uint64_t watermark_ns = 0;
    uint64_t sent_watermark_ns = 0;  // last one queued
    ringfile::PollStats stats;
  };
  enum class PollResult { kCaughtUp, kMore, kBroken };
  struct Pending {
    absl::Time first_seen;
    absl::Time next_attempt;
    absl::Time liveness_checked = absl::InfinitePast();
    Liveness liveness = Liveness::kUnknown;
  };

  RingDrainer(const DrainerOptions& options, BatchQueue* queue,
              std::unique_ptr<RingDirWatcher> watcher);
  void TryOpenPending();
  void Open(const std::string& path, std::unique_ptr<ringfile::RingReader>);
  // Liveness of a file's writer from its name (SERVICE.PID.START[.N].ring).
  Liveness NameLiveness(const std::string& path);
  // Polls one ring into a batch until caught up, `max_polls` polls, or
  // `deadline`. `records`: how many records (read or lost) it found.
  PollResult PollRing(Ring& ring, int max_polls,
                      absl::Time deadline = absl::InfiniteFuture(),
                      uint64_t* records = nullptr);
  // When to poll `ring` next, after a poll at `now` that found `records`.
  absl::Time NextPoll(const Ring& ring, absl::Time now, uint64_t records,
                      PollResult result) const;
  // How long RunOnce may sleep from `now`.
  absl::Duration WaitBudget(absl::Time now) const;
  uint64_t ProcessNowNs(const Ring& ring) const;
  // `process_done`: the process ended and its ring is drained.
  void EndRing(Ring& ring, bool delete_file, bool process_done = false);
  // Queues `batch`; within RunOnce the consumer is woken once at its end.
  void Publish(DrainedBatch batch);
  class ScopedRound {
   public:
    explicit ScopedRound(RingDrainer* drainer);
    ~ScopedRound();

   private:
    RingDrainer* const drainer_;
  };

  DrainerOptions options_;
  BatchQueue* const queue_;
  std::unique_ptr<RingDirWatcher> watcher_;
  // Files found but not opened yet.
  std::map<std::string, Pending> pending_;
  absl::Time next_pending_pass_ = absl::InfinitePast();
  // Some writer was seen alive with its recorded start time.
  bool pid_namespace_shared_ = false;
  std::map<uint32_t, Ring> rings_;
  uint32_t next_id_ = 1;
  std::atomic<uint64_t> opened_{0};
  std::atomic<uint64_t> ended_{0};
  std::atomic<uint64_t> polls_{0};
  std::atomic<bool> poll_all_{false};  // set by Wake()
  bool in_round_ = false;  // inside RunOnce: Publish defers the wake-up
  bool published_in_round_ = false;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_RING_DRAINER_H_
