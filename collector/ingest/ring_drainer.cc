#include "collector/ingest/ring_drainer.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/base/clock.h"
#include "collector/base/file.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/ingest/ring_dir_filesystem.h"

namespace ringprof {
namespace collector {
namespace {

// How long a file that is not ready yet is looked at every poll (then every
// 100 ms until the open grace runs out).
constexpr absl::Duration kFastRetryPeriod = absl::Seconds(1);

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& rings_opened = Metrics::Get().GetCounter(
      "ringprof_ring_files_opened_total", "Ring files opened.");
  Counter& rings_corrupt = Metrics::Get().GetCounter(
      "ringprof_ring_files_corrupt_total",
      "Ring files skipped because they are corrupt or truncated.");
  Counter& records_lost = Metrics::Get().GetCounter(
      "ringprof_ring_records_lost_total",
      "Records lost in ring files: overwritten before being read, torn, "
      "or left uncommitted by a stalled or dead writer.");
  Counter& writer_dropped = Metrics::Get().GetCounter(
      "ringprof_ring_records_dropped_total",
      "Records emitters dropped because a slot was still being written.");
  Counter& rings_ended_unseen = Metrics::Get().GetCounter(
      "ringprof_ring_files_ended_unseen_total",
      "Ring files of processes never seen alive (exited before the collector "
      "looked, or never existed), drained and ended at once.");
  Gauge& rings_open = Metrics::Get().GetGauge(
      "ringprof_ring_files_open",
      "Ring files open now (at most --max-open-rings).");
  Gauge& rings_waiting = Metrics::Get().GetGauge(
      "ringprof_ring_files_waiting",
      "Ring files found but not open (--max-open-rings reached, or not "
      "ready yet).");
  Counter& states_ignored = Metrics::Get().GetCounter(
      "ringprof_ring_states_ignored_total",
      "Saved ring states (--state-dir) that were invalid or did not fit "
      "their ring file; the ring was read afresh.");
  Counter& ring_polls = Metrics::Get().GetCounter(
      "ringprof_ring_polls_total",
      "Polls of ring files (each as often as the ring's records arrive).");
  Counter& records_read = Metrics::Get().GetCounter(
      "ringprof_ring_records_read_total", "Records read from ring files.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
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

absl::Duration PollDelay(uint64_t records, absl::Duration since,
                         uint32_t slots_per_ring, absl::Duration min_interval,
                         absl::Duration max_interval) {
  absl::Duration delay = max_interval;
  if (records > 0 && since > absl::ZeroDuration()) {
    const double quarter = std::max<double>(1, slots_per_ring / 4);
    delay = std::min(delay, since * (quarter / static_cast<double>(records)));
  }
  return std::max(delay, min_interval);
}

absl::Time EarliestPoll(absl::Time polled, absl::Time due,
                        absl::Duration min_interval) {
  return due - std::min(min_interval, (due - polled) / 2);
}

Liveness CheckProcess(uint32_t pid, uint64_t process_start_ticks,
                      bool* verified) {
  if (verified != nullptr) *verified = false;
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
    const bool parsed = absl::SimpleAtoi(fields[19], &start);
    if (process_start_ticks != 0 && parsed && start != process_start_ticks) {
      return Liveness::kGone;  // the pid was reused
    }
    // Our own pid proves nothing: a workload in another namespace could
    // name it (we are often pid 1 of our container).
    if (verified != nullptr) {
      *verified = process_start_ticks != 0 && parsed &&
                  static_cast<pid_t>(pid) != ::getpid();
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
  DrainerOptions adjusted = options;
  if (adjusted.max_open_rings == 0) adjusted.max_open_rings = 1;
  // Each open ring holds a descriptor: keep room for them and for the
  // collector's own files (sinks, symbol files, sockets).
  constexpr rlim_t kReserve = 64;
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    const rlim_t want = adjusted.max_open_rings + kReserve;
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
      struct rlimit raised = limit;
      raised.rlim_cur = limit.rlim_max == RLIM_INFINITY
                            ? want
                            : std::min<rlim_t>(want, limit.rlim_max);
      if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
      const rlim_t room = limit.rlim_cur > 2 * kReserve
                              ? limit.rlim_cur - kReserve
                              : std::max<rlim_t>(1, limit.rlim_cur / 2);
      LogWarning(absl::StrCat("open files limited to ", limit.rlim_cur,
                              ": following at most ", room,
                              " ring files at a time (--max-open-rings ",
                              adjusted.max_open_rings, ")"));
      adjusted.max_open_rings = static_cast<uint32_t>(room);
    }
  }
  if (!adjusted.state_dir.empty()) {
    RemoveOrphanedStates(adjusted.state_dir, adjusted.ring_dir);
  }
  CheckRingDirFilesystem(adjusted.ring_dir);
  return std::unique_ptr<RingDrainer>(
      new RingDrainer(adjusted, queue, std::move(*watcher)));
}

RingDrainer::RingDrainer(const DrainerOptions& options, BatchQueue* queue,
                         std::unique_ptr<RingDirWatcher> watcher)
    : options_(options), queue_(queue), watcher_(std::move(watcher)) {}

absl::Duration RingDrainer::WaitBudget(absl::Time now) const {
  // Back-pressure: look again soon whether the processing thread caught up.
  if (queue_->full()) return options_.poll_interval;
  // The directory's next listing (at once before the first: rings that
  // exist at start make no inotify event).
  absl::Time until =
      std::min(now + options_.rescan_interval, watcher_->next_scan());
  if (!pending_.empty()) until = std::min(until, next_pending_pass_);
  for (const auto& [id, ring] : rings_) {
    if (ring.check_liveness_now) return absl::ZeroDuration();
    until = std::min(until, ring.next_poll);
  }
  return std::max(absl::ZeroDuration(), until - now);
}

absl::Time RingDrainer::NextPoll(const Ring& ring, absl::Time now,
                                 uint64_t records, PollResult result) const {
  // Cut short by the poll budget: there is more right now.
  if (result == PollResult::kMore) return now;
  // Nothing for ten seconds: every second is enough (the watermark matters
  // per window, and liveness is checked at polls).
  const absl::Duration idle = now - ring.last_progress;
  if (idle >= absl::Seconds(10)) return now + absl::Seconds(1);
  // A ring that received records within the last second may receive a
  // burst at any moment (an allocating phase after a computing one).
  return now + PollDelay(records, now - ring.last_poll,
                         ring.info->slots_per_ring, options_.poll_interval,
                         idle >= absl::Seconds(1)
                             ? RingDrainer::kMaxPollInterval
                             : RingDrainer::kMaxActivePollInterval);
}

void RingDrainer::Publish(DrainedBatch batch) {
  queue_->Push(std::move(batch), /*notify=*/!in_round_);
  published_in_round_ |= in_round_;
}

RingDrainer::ScopedRound::ScopedRound(RingDrainer* drainer)
    : drainer_(drainer) {
  drainer_->in_round_ = true;
}

RingDrainer::ScopedRound::~ScopedRound() {
  drainer_->in_round_ = false;
  // Only after pushes: a wake-up for nothing costs the consumer a futex
  // wait.
  if (drainer_->published_in_round_) drainer_->queue_->Notify();
  drainer_->published_in_round_ = false;
}

void RingDrainer::RunOnce(bool wait) {
  const absl::Duration budget = wait && !poll_all_.load()
                                    ? WaitBudget(absl::Now())
                                    : absl::ZeroDuration();
  const absl::Time now = absl::Now();
  // The processing thread is woken once, after the round (ScopedRound).
  ScopedRound round(this);
  for (std::string& path : watcher_->Wait(budget)) {
    pending_.emplace(std::move(path), Pending{now, now});
    next_pending_pass_ = now;
  }
  if (absl::Now() >= next_pending_pass_) TryOpenPending();

  const bool poll_all = poll_all_.exchange(false);
  for (auto it = rings_.begin(); it != rings_.end();) {
    Ring& ring = it->second;
    // Back-pressure: leave records in the rings while the processing thread
    // catches up (they are lost only if the ring wraps meanwhile).
    if (queue_->full()) break;
    absl::Time t = absl::Now();
    if (t < ring.early_poll && !ring.check_liveness_now && !poll_all) {
      ++it;
      continue;
    }
    uint64_t records = 0;
    const PollResult result =
        PollRing(ring, /*max_polls=*/4, absl::InfiniteFuture(), &records);
    t = absl::Now();
    ring.next_poll = NextPoll(ring, t, records, result);
    ring.early_poll = EarliestPoll(t, ring.next_poll, options_.poll_interval);
    ring.last_poll = t;
    if (result == PollResult::kBroken) {
      EndRing(ring, /*delete_file=*/false);
      it = rings_.erase(it);
      continue;
    }
    if (result == PollResult::kCaughtUp && ring.reader->Finished()) {
      EndRing(ring, !options_.keep_rings, /*process_done=*/true);
      it = rings_.erase(it);
      continue;
    }
    if (ring.check_liveness_now ||
        (t - ring.last_progress >= options_.liveness_interval &&
         t >= ring.next_liveness_check)) {
      ring.check_liveness_now = false;
      ring.next_liveness_check = t + options_.liveness_interval;
      bool verified = false;
      const Liveness liveness = CheckProcess(
          ring.info->pid, ring.info->process_start_ticks, &verified);
      if (liveness == Liveness::kAlive) ring.seen_alive = true;
      pid_namespace_shared_ |= verified;
      // Gone after we saw it alive, or gone at first sight while we share
      // the writers' pid namespace (it exited before we looked, or never
      // existed): whatever is uncommitted now never will be.
      if (liveness == Liveness::kGone &&
          (ring.seen_alive || pid_namespace_shared_)) {
        if (!ring.seen_alive) metrics().rings_ended_unseen.Add(1);
        ring.writer_dead = true;
        if (PollRing(ring, /*max_polls=*/1 << 20) == PollResult::kBroken) {
          EndRing(ring, /*delete_file=*/false);
        } else {
          EndRing(ring, !options_.keep_rings, /*process_done=*/true);
        }
        it = rings_.erase(it);
        continue;
      }
    }
    ++it;
  }
  metrics().rings_open.Set(static_cast<double>(rings_.size()));
  metrics().rings_waiting.Set(static_cast<double>(pending_.size()));
}

Liveness RingDrainer::NameLiveness(const std::string& path) {
  // SERVICE.PID.START[.N].ring; the service may hold dots, so try both
  // readings of the numeric tail. Only used to order files, never trusted.
  std::string name = path.substr(path.rfind('/') + 1);
  name.resize(name.size() - 5);  // ".ring"
  std::vector<absl::string_view> parts = absl::StrSplit(name, '.');
  Liveness result = Liveness::kUnknown;
  for (size_t tail : {size_t{2}, size_t{3}}) {
    if (parts.size() < tail + 1) continue;
    uint32_t pid = 0;
    uint64_t start = 0;
    if (!absl::SimpleAtoi(parts[parts.size() - tail], &pid) ||
        !absl::SimpleAtoi(parts[parts.size() - tail + 1], &start)) {
      continue;
    }
    bool verified = false;
    const Liveness liveness = CheckProcess(pid, start, &verified);
    pid_namespace_shared_ |= verified;
    if (liveness == Liveness::kAlive) return Liveness::kAlive;
    if (liveness == Liveness::kGone) result = Liveness::kGone;
  }
  return result;
}

void RingDrainer::TryOpenPending() {
  const absl::Time now = absl::Now();
  // At capacity nothing can open until a ring ends (which brings the next
  // pass forward): look again only to refresh liveness.
  next_pending_pass_ = now + (rings_.size() >= options_.max_open_rings
                                  ? options_.liveness_interval
                                  : absl::Milliseconds(50));
  if (pending_.empty()) return;
  // Files of processes seen alive first, then unknown, then gone; within
  // one class the oldest first.
  std::vector<std::map<std::string, Pending>::iterator> order;
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.next_attempt > now) {
      next_pending_pass_ =
          std::min(next_pending_pass_, it->second.next_attempt);
      continue;
    }
    if (now - it->second.liveness_checked >= options_.liveness_interval) {
      it->second.liveness = NameLiveness(it->first);
      it->second.liveness_checked = now;
    }
    order.push_back(it);
  }
  auto rank = [](Liveness l) {
    return l == Liveness::kAlive ? 0 : l == Liveness::kUnknown ? 1 : 2;
  };
  std::sort(order.begin(), order.end(), [&](auto a, auto b) {
    if (rank(a->second.liveness) != rank(b->second.liveness)) {
      return rank(a->second.liveness) < rank(b->second.liveness);
    }
    return a->second.first_seen < b->second.first_seen;
  });
  // Bounded work per pass, whatever the directory holds.
  int attempts = 64;
  for (auto it : order) {
    if (rings_.size() >= options_.max_open_rings || attempts-- <= 0) break;
    const std::string path = it->first;
    absl::StatusOr<std::unique_ptr<ringfile::RingReader>> reader =
        ringfile::RingReader::Open(path);
    if (!reader.ok()) {
      if (absl::IsNotFound(reader.status())) {  // gone before we looked
        watcher_->Forget(path);
        pending_.erase(it);
        continue;
      }
      // Not ready yet, or still being created (size 0 before fallocate).
      // A writer without O_TMPFILE (gVisor's tmpfs) makes the file ready
      // through its mapping, which no inotify event reports: look again at
      // every poll for a while, since its rings start filling at once and
      // a busy thread laps its ring in about 100 ms.
      if (now - it->second.first_seen < options_.open_grace) {
        it->second.next_attempt =
            now + (now - it->second.first_seen < kFastRetryPeriod
                       ? options_.poll_interval
                       : absl::Milliseconds(100));
        next_pending_pass_ =
            std::min(next_pending_pass_, it->second.next_attempt);
        continue;
      }
      metrics().rings_corrupt.Add(1);
      LogErrorLimited("ring-unreadable",
                      absl::StrCat("skipping ring file ", path, ": ",
                                   reader.status().ToString()));
      pending_.erase(it);  // stays known to the watcher: not retried
      continue;
    }
    pending_.erase(it);
    Open(path, std::move(*reader));
  }
}

void RingDrainer::Open(const std::string& path,
                       std::unique_ptr<ringfile::RingReader> reader) {
  const absl::Time now = absl::Now();
  Ring ring;
  ring.id = next_id_++;
  ring.path = path;
  ring.reader = std::move(reader);
  ring.info = std::make_shared<const ringfile::FileInfo>(ring.reader->info());
  ring.last_progress = now;
  ring.next_poll = now;
  ring.early_poll = now;
  ring.last_poll = now;
  // Same clock domain unless the process's CLOCK_MONOTONIC, estimated
  // through the wall clock, is far from ours (e.g. another gVisor kernel).
  const int64_t ours = MonotonicNowNs();
  const int64_t estimate =
      static_cast<int64_t>(EstimateProcessNowNs(*ring.info));
  ring.same_clock_domain = std::llabs(estimate - ours) < 1'000'000'000;
  bool verified = false;
  ring.seen_alive = CheckProcess(ring.info->pid, ring.info->process_start_ticks,
                                 &verified) == Liveness::kAlive;
  pid_namespace_shared_ |= verified;
  // Decide at the first poll whether a writer never seen alive is gone.
  ring.check_liveness_now = !ring.seen_alive;

  DrainedBatch opened;
  opened.kind = DrainedBatch::Kind::kOpened;
  opened.process = ring.id;
  opened.info = ring.info;
  opened.path = path;
  if (!options_.state_dir.empty()) {
    absl::StatusOr<std::optional<RingState>> state =
        LoadRingState(options_.state_dir, path);
    absl::Status resumed = state.status();
    if (state.ok() && state->has_value()) {
      if (!StateMatches(**state, *ring.info)) {
        resumed = absl::InvalidArgumentError("saved for another file");
      } else {
        resumed = ring.reader->Resume((*state)->positions);
      }
      if (resumed.ok()) {
        opened.resumed = std::make_shared<const RingState>(std::move(**state));
      }
    }
    if (!resumed.ok()) {
      metrics().states_ignored.Add(1);
      LogWarningLimited("ring-state",
                        absl::StrCat("ignoring the saved state of ", path, ": ",
                                     resumed.message()));
    }
  }
  metrics().rings_opened.Add(1);
  opened_.fetch_add(1);
  LogDebug(absl::StrCat("following ", path, " (pid ", ring.info->pid,
                        ", service '", ring.info->service_name, "')",
                        opened.resumed ? ", resuming where the last collector "
                                         "stopped"
                                       : ""));
  Publish(std::move(opened));
  rings_.emplace(ring.id, std::move(ring));
}

uint64_t RingDrainer::ProcessNowNs(const Ring& ring) const {
  if (ring.same_clock_domain) return static_cast<uint64_t>(MonotonicNowNs());
  return EstimateProcessNowNs(*ring.info);
}

RingDrainer::PollResult RingDrainer::PollRing(Ring& ring, int max_polls,
                                              absl::Time deadline,
                                              uint64_t* records) {
  polls_.fetch_add(1, std::memory_order_relaxed);
  metrics().ring_polls.Add(1);
  DrainedBatch batch = queue_->Spare();
  batch.process = ring.id;
  BatchAppender appender(&batch);
  PollResult result = PollResult::kMore;
  const ringfile::PollStats before = ring.stats;
  // Everything committed before this instant is read when we catch up.
  const uint64_t process_now = ProcessNowNs(ring);
  for (int i = 0; i < max_polls; ++i) {
    if (i > 0 && absl::Now() >= deadline) break;
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
      metrics().rings_corrupt.Add(1);
      LogErrorLimited(
          "ring-broken",
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
  metrics().records_read.Add(ring.stats.delivered - before.delivered);
  metrics().records_lost.Add(ring.stats.lost - before.lost);
  if (records != nullptr) {
    *records = ring.stats.delivered - before.delivered +
               (ring.stats.lost - before.lost);
  }
  metrics().writer_dropped.Add(ring.stats.writer_dropped -
                               before.writer_dropped);
  if (result == PollResult::kCaughtUp) {
    const uint64_t slack = absl::ToInt64Nanoseconds(options_.watermark_slack);
    if (process_now > slack) {
      ring.watermark_ns = std::max(ring.watermark_ns, process_now - slack);
    }
  }
  batch.watermark_ns = ring.watermark_ns;
  if (result != PollResult::kBroken) batch.positions = ring.reader->Positions();
  // An empty batch only moves the watermark: send one when that matters
  // (a tick or so), not every poll.
  constexpr uint64_t kMinWatermarkStepNs = 50'000'000;
  if (!batch.records.empty() ||
      (result == PollResult::kCaughtUp &&
       ring.watermark_ns >= ring.sent_watermark_ns + kMinWatermarkStepNs)) {
    ring.sent_watermark_ns = ring.watermark_ns;
    Publish(std::move(batch));
  } else {
    queue_->Recycle(std::move(batch));
  }
  return result;
}

void RingDrainer::EndRing(Ring& ring, bool delete_file, bool process_done) {
  DrainedBatch ended;
  ended.kind = DrainedBatch::Kind::kEnded;
  ended.process = ring.id;
  ended.process_done = process_done;
  Publish(std::move(ended));
  next_pending_pass_ = absl::InfinitePast();  // a slot is free
  ended_.fetch_add(1);
  if (ring.stats.lost > 0 || ring.stats.writer_dropped > 0) {
    LogWarningLimited(
        "ring-loss",
        absl::StrCat(
            "pid ", ring.info->pid, ": ", ring.stats.lost,
            " records lost in the ring (read too late, torn or uncommitted), ",
            ring.stats.writer_dropped, " dropped by the writer, of ",
            ring.stats.delivered + ring.stats.lost,
            "; a larger ring (RINGPROF_RING_KIB) or a faster collector would "
            "keep them"));
  }
  ring.reader.reset();
  if (delete_file) {
    if (::unlink(ring.path.c_str()) == 0) watcher_->Forget(ring.path);
  }
}

void RingDrainer::DrainAllAndEnd(absl::Time deadline) {
  // Files that appeared since the last scan (a child's, just before exit).
  const absl::Time now = absl::Now();
  for (std::string& path : watcher_->Rescan()) {
    pending_.emplace(std::move(path), Pending{now, now});
  }
  if (now < deadline) TryOpenPending();
  for (auto& [id, ring] : rings_) {
    if (absl::Now() >= deadline) {
      // Out of time: end it as it is; the file (and its saved state) stay
      // for the next collector.
      EndRing(ring, /*delete_file=*/false);
      continue;
    }
    const Liveness liveness =
        CheckProcess(ring.info->pid, ring.info->process_start_ticks);
    ring.writer_dead = liveness == Liveness::kGone;
    const PollResult result = PollRing(ring, /*max_polls=*/1 << 20, deadline);
    const bool done = result == PollResult::kCaughtUp &&
                      (ring.reader->Finished() || ring.writer_dead);
    EndRing(ring, done && !options_.keep_rings, done);
  }
  rings_.clear();
}

}  // namespace collector
}  // namespace ringprof
