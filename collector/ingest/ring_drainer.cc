#include "collector/ingest/ring_drainer.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/base/clock.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/profile/pprof_io.h"

namespace ringprof {
namespace collector {
namespace {

Counter& RingsOpened() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_ring_files_opened_total", "Ring files opened.");
  return c;
}
Counter& RingsCorrupt() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_ring_files_corrupt_total",
      "Ring files skipped because they are corrupt or truncated.");
  return c;
}
Counter& RecordsLost() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_ring_records_lost_total",
      "Records lost in ring files: overwritten before being read, torn, "
      "or left uncommitted by a stalled or dead writer.");
  return c;
}
Counter& WriterDropped() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_ring_records_dropped_total",
      "Records emitters dropped because a slot was still being written.");
  return c;
}
Counter& RecordsRead() {
  static Counter& c = Metrics::Get().GetCounter(
      "ringprof_ring_records_read_total", "Records read from ring files.");
  return c;
}

// The process's CLOCK_MONOTONIC now, through the wall clock both share.
uint64_t EstimateProcessNowNs(const ringfile::FileInfo& info) {
  const int64_t real = UnixNowNs();
  const int64_t estimate =
      static_cast<int64_t>(info.created_monotonic_ns) +
      (real - static_cast<int64_t>(info.created_realtime_ns));
  return estimate < 0 ? 0 : static_cast<uint64_t>(estimate);
}

class BatchAppender : public ringfile::RecordVisitor {
 public:
  explicit BatchAppender(DrainedBatch* batch) : batch_(batch) {}
  void OnRecord(const ringfile::RecordView& record) override {
    batch_->Append(record);
  }

 private:
  DrainedBatch* batch_;
};

}  // namespace

Liveness CheckProcess(uint32_t pid, uint64_t process_start_ticks) {
  if (pid == 0) return Liveness::kUnknown;
  absl::StatusOr<std::string> stat =
      ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (stat.ok()) {
    // Fields after the command name, which is in parentheses and may hold
    // spaces: state is field 3, starttime field 22.
    const size_t paren = stat->rfind(')');
    if (paren == std::string::npos) return Liveness::kUnknown;
    std::vector<absl::string_view> fields = absl::StrSplit(
        absl::string_view(*stat).substr(paren + 1), ' ', absl::SkipEmpty());
    if (fields.size() < 20) return Liveness::kUnknown;
    if (fields[0] == "Z" || fields[0] == "X") return Liveness::kGone;
    uint64_t start = 0;
    if (process_start_ticks != 0 && absl::SimpleAtoi(fields[19], &start) &&
        start != process_start_ticks) {
      return Liveness::kGone;  // the pid was reused
    }
    return Liveness::kAlive;
  }
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) {
    return Liveness::kAlive;
  }
  return errno == ESRCH ? Liveness::kGone : Liveness::kUnknown;
}

absl::StatusOr<std::unique_ptr<RingDrainer>> RingDrainer::Create(
    const DrainerOptions& options, BatchQueue* queue) {
  absl::StatusOr<std::unique_ptr<RingDirWatcher>> watcher =
      RingDirWatcher::Create(options.ring_dir, options.rescan_interval);
  if (!watcher.ok()) return watcher.status();
  return std::unique_ptr<RingDrainer>(
      new RingDrainer(options, queue, std::move(*watcher)));
}

RingDrainer::RingDrainer(const DrainerOptions& options, BatchQueue* queue,
                         std::unique_ptr<RingDirWatcher> watcher)
    : options_(options), queue_(queue), watcher_(std::move(watcher)) {}

void RingDrainer::RunOnce(bool wait) {
  const absl::Time now = absl::Now();
  for (std::string& path :
       watcher_->Wait(wait ? options_.poll_interval : absl::ZeroDuration())) {
    pending_.emplace(std::move(path), now);
  }
  TryOpenPending();

  for (auto it = rings_.begin(); it != rings_.end();) {
    Ring& ring = it->second;
    // Back-pressure: leave records in the rings while the processing thread
    // catches up (they are lost only if the ring wraps meanwhile).
    if (queue_->full()) break;
    const PollResult result = PollRing(ring, /*max_polls=*/4);
    const absl::Time t = absl::Now();
    if (result == PollResult::kBroken) {
      EndRing(ring, /*delete_file=*/false);
      it = rings_.erase(it);
      continue;
    }
    if (result == PollResult::kCaughtUp && ring.reader->Finished()) {
      EndRing(ring, !options_.keep_rings);
      it = rings_.erase(it);
      continue;
    }
    if (t - ring.last_progress >= options_.liveness_interval &&
        t >= ring.next_liveness_check) {
      ring.next_liveness_check = t + options_.liveness_interval;
      const Liveness liveness =
          CheckProcess(ring.info->pid, ring.info->process_start_ticks);
      if (liveness == Liveness::kAlive) ring.seen_alive = true;
      if (liveness == Liveness::kGone && ring.seen_alive) {
        // Killed without writing its end marker: whatever is uncommitted
        // now never will be.
        ring.writer_dead = true;
        if (PollRing(ring, /*max_polls=*/1 << 20) == PollResult::kBroken) {
          EndRing(ring, /*delete_file=*/false);
        } else {
          EndRing(ring, !options_.keep_rings);
        }
        it = rings_.erase(it);
        continue;
      }
    }
    ++it;
  }
}

void RingDrainer::TryOpenPending() {
  const absl::Time now = absl::Now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::string& path = it->first;
    absl::StatusOr<std::unique_ptr<ringfile::RingReader>> reader =
        ringfile::RingReader::Open(path);
    if (!reader.ok()) {
      if (absl::IsNotFound(reader.status())) {  // gone before we looked
        watcher_->Forget(path);
        it = pending_.erase(it);
        continue;
      }
      // Not ready yet, or still being created (size 0 before fallocate).
      if (now - it->second < options_.open_grace) {
        ++it;
        continue;
      }
      RingsCorrupt().Add(1);
      LogError(absl::StrCat("skipping ring file ", path, ": ",
                            reader.status().ToString()));
      it = pending_.erase(it);  // stays known to the watcher: not retried
      continue;
    }
    Ring ring;
    ring.id = next_id_++;
    ring.path = path;
    ring.reader = std::move(*reader);
    ring.info = std::make_shared<const ringfile::FileInfo>(ring.reader->info());
    ring.last_progress = now;
    // Same clock domain unless the process's CLOCK_MONOTONIC, estimated
    // through the wall clock, is far from ours (e.g. another gVisor kernel).
    const int64_t ours = MonotonicNowNs();
    const int64_t estimate =
        static_cast<int64_t>(EstimateProcessNowNs(*ring.info));
    ring.same_clock_domain = std::llabs(estimate - ours) < 1'000'000'000;
    ring.seen_alive =
        CheckProcess(ring.info->pid, ring.info->process_start_ticks) ==
        Liveness::kAlive;
    RingsOpened().Add(1);
    opened_.fetch_add(1);
    LogDebug(absl::StrCat("following ", path, " (pid ", ring.info->pid,
                          ", service '", ring.info->service_name, "')"));
    DrainedBatch opened;
    opened.kind = DrainedBatch::Kind::kOpened;
    opened.process = ring.id;
    opened.info = ring.info;
    queue_->Push(std::move(opened));
    rings_.emplace(ring.id, std::move(ring));
    it = pending_.erase(it);
  }
}

uint64_t RingDrainer::ProcessNowNs(const Ring& ring) const {
  if (ring.same_clock_domain) return static_cast<uint64_t>(MonotonicNowNs());
  return EstimateProcessNowNs(*ring.info);
}

RingDrainer::PollResult RingDrainer::PollRing(Ring& ring, int max_polls) {
  DrainedBatch batch;
  batch.process = ring.id;
  BatchAppender appender(&batch);
  PollResult result = PollResult::kMore;
  const ringfile::PollStats before = ring.stats;
  // Everything committed before this instant is read when we catch up.
  const uint64_t process_now = ProcessNowNs(ring);
  for (int i = 0; i < max_polls; ++i) {
    ringfile::PollOptions poll;
    poll.max_records = options_.max_records_per_poll;
    poll.writer_dead = ring.writer_dead;
    ringfile::PollStats stats;
    absl::Status status = ring.reader->Poll(poll, appender, stats);
    ring.stats.delivered += stats.delivered;
    ring.stats.lost += stats.lost;
    ring.stats.writer_dropped += stats.writer_dropped;
    ring.stats.unknown_types += stats.unknown_types;
    if (!status.ok()) {
      RingsCorrupt().Add(1);
      LogError(
          absl::StrCat("ring file ", ring.path,
                       " became unreadable, skipping it: ", status.ToString()));
      result = PollResult::kBroken;
      break;
    }
    if (stats.delivered > 0 || stats.lost > 0) ring.last_progress = absl::Now();
    if (stats.delivered < poll.max_records) {
      result = PollResult::kCaughtUp;
      break;
    }
  }
  RecordsRead().Add(ring.stats.delivered - before.delivered);
  RecordsLost().Add(ring.stats.lost - before.lost);
  WriterDropped().Add(ring.stats.writer_dropped - before.writer_dropped);
  if (result == PollResult::kCaughtUp) {
    const uint64_t slack = absl::ToInt64Nanoseconds(options_.watermark_slack);
    if (process_now > slack) {
      ring.watermark_ns = std::max(ring.watermark_ns, process_now - slack);
    }
  }
  batch.watermark_ns = ring.watermark_ns;
  // An empty batch only moves the watermark: send one when that matters
  // (a tick or so), not every poll.
  constexpr uint64_t kMinWatermarkStepNs = 50'000'000;
  if (!batch.records.empty() ||
      (result == PollResult::kCaughtUp &&
       ring.watermark_ns >= ring.sent_watermark_ns + kMinWatermarkStepNs)) {
    ring.sent_watermark_ns = ring.watermark_ns;
    queue_->Push(std::move(batch));
  }
  return result;
}

void RingDrainer::EndRing(Ring& ring, bool delete_file) {
  DrainedBatch ended;
  ended.kind = DrainedBatch::Kind::kEnded;
  ended.process = ring.id;
  queue_->Push(std::move(ended));
  ended_.fetch_add(1);
  if (ring.stats.lost > 0 || ring.stats.writer_dropped > 0) {
    LogWarning(absl::StrCat(
        "pid ", ring.info->pid, ": ", ring.stats.lost,
        " records lost in the ring (read too late, torn or uncommitted), ",
        ring.stats.writer_dropped, " dropped by the writer, of ",
        ring.stats.delivered + ring.stats.lost,
        "; a larger ring "
        "(RINGPROF_RING_KIB) or a faster collector would keep them"));
  }
  ring.reader.reset();
  if (delete_file) {
    if (::unlink(ring.path.c_str()) == 0) watcher_->Forget(ring.path);
  }
}

void RingDrainer::DrainAllAndEnd() {
  // Files that appeared since the last scan (a child's, just before exit).
  const absl::Time now = absl::Now();
  for (std::string& path : watcher_->Rescan()) {
    pending_.emplace(std::move(path), now);
  }
  TryOpenPending();
  for (auto& [id, ring] : rings_) {
    const Liveness liveness =
        CheckProcess(ring.info->pid, ring.info->process_start_ticks);
    ring.writer_dead = liveness == Liveness::kGone;
    const PollResult result = PollRing(ring, /*max_polls=*/1 << 20);
    const bool done = result != PollResult::kBroken &&
                      (ring.reader->Finished() || ring.writer_dead);
    EndRing(ring, done && !options_.keep_rings);
  }
  rings_.clear();
}

}  // namespace collector
}  // namespace ringprof
