#include "collector/collector.h"

#include "absl/strings/str_cat.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "collector/ingest/ring_state.h"

namespace ringprof {
namespace collector {
namespace {

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& shutdown_dropped = Metrics::Get().GetCounter(
      "ringprof_shutdown_dropped_records_total",
      "Records read but not processed because the shutdown deadline came "
      "first (with --state-dir, the next collector reads them again).");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

}  // namespace

Collector::Collector(const CollectorOptions& options, Symbolizer* symbolizer,
                     ProfileSink* sink)
    : options_(options),
      symbolizer_(symbolizer),
      sink_(sink),
      queue_(options.max_queued_records) {
  budget_.limit_bytes = options.max_memory_bytes;
}

Collector::~Collector() { Stop(); }

absl::Status Collector::Start() {
  absl::StatusOr<std::unique_ptr<RingDrainer>> drainer =
      RingDrainer::Create(options_.drainer, &queue_);
  if (!drainer.ok()) return drainer.status();
  drainer_ = std::move(*drainer);
  started_ = true;
  drain_thread_ = std::thread([this] { DrainLoop(); });
  process_thread_ = std::thread([this] { ProcessLoop(); });
  return absl::OkStatus();
}

void Collector::Stop(absl::Time deadline) {
  if (!started_) return;
  started_ = false;
  if (deadline != absl::InfiniteFuture()) {
    const absl::Time now = absl::Now();
    const absl::Duration left = std::max(absl::ZeroDuration(), deadline - now);
    drain_deadline_ = now + left / 2;
    process_deadline_ = now + left * 3 / 4;
  }
  stop_.store(true);
  drainer_->Wake();
  drain_thread_.join();
  process_thread_.join();
}

uint64_t Collector::rings_opened() const {
  return drainer_ != nullptr ? drainer_->rings_opened() : 0;
}
uint64_t Collector::rings_ended() const {
  return drainer_ != nullptr ? drainer_->rings_ended() : 0;
}

CollectorSummary Collector::summary() const {
  std::lock_guard<std::mutex> lock(summary_mu_);
  return summary_;
}

void Collector::DrainLoop() {
  while (!stop_.load()) drainer_->RunOnce(/*wait=*/true);
  drainer_->RunOnce(/*wait=*/false);  // files that appeared just now
  drainer_->DrainAllAndEnd(drain_deadline_);
  drain_done_.store(true);
  queue_.Close();
}

void Collector::Wake() {
  if (drainer_ != nullptr) drainer_->Wake();
}

void Collector::ProcessLoop() {
  std::vector<DrainedBatch> batches;
  while (true) {
    // Read the flag first: once set, everything the drainer produced is
    // already in the queue. The drainer closes the queue then, which ends
    // the wait; the timeout only bounds a lost wake-up.
    const bool done = drain_done_.load();
    queue_.PopAll(std::chrono::milliseconds(1000), &batches);
    for (DrainedBatch& batch : batches) {
      if (batch.kind == DrainedBatch::Kind::kRecords && stop_.load() &&
          absl::Now() >= process_deadline_) {
        metrics().shutdown_dropped.Add(batch.records.size());
      } else {
        Handle(batch);
      }
      queue_.Recycle(std::move(batch));
    }
    if (done && batches.empty()) break;
  }
  // Not reached in practice (the drainer ends every process), but never
  // lose windows.
  for (auto& [id, process] : processes_) process->Finish();
  processes_.clear();
}

void Collector::SaveCheckpoint(uint32_t id, bool force) {
  if (options_.drainer.state_dir.empty()) return;
  ProcessProfiler& process = *processes_[id];
  std::optional<Checkpoint> checkpoint = process.TakeCheckpoint(force);
  if (!checkpoint) return;
  absl::Status saved =
      SaveRingState(options_.drainer.state_dir, paths_[id],
                    RingStateOf(process.info(), *std::move(checkpoint)));
  if (!saved.ok()) {
    LogWarningLimited(
        "state-save",
        absl::StrCat("cannot save the state of ", paths_[id],
                     " (a restart would read it again): ", saved.message()));
  }
}

void Collector::Handle(DrainedBatch& batch) {
  if (batch.kind == DrainedBatch::Kind::kOpened) {
    auto profiler = std::make_unique<ProcessProfiler>(
        *batch.info, options_.profiler, symbolizer_, sink_, &budget_);
    if (batch.resumed) profiler->Resume(*batch.resumed);
    processes_[batch.process] = std::move(profiler);
    paths_[batch.process] = batch.path;
    return;
  }
  auto it = processes_.find(batch.process);
  if (it == processes_.end()) return;
  ProcessProfiler& process = *it->second;
  if (batch.kind == DrainedBatch::Kind::kRecords) {
    process.OnBatch(batch);
    SaveCheckpoint(batch.process, /*force=*/false);
    return;
  }
  process.Finish();
  if (!options_.drainer.state_dir.empty()) {
    if (batch.process_done) {
      RemoveRingState(options_.drainer.state_dir, paths_[batch.process]);
    } else {
      SaveCheckpoint(batch.process, /*force=*/true);
    }
  }
  paths_.erase(batch.process);
  const ProcessStats& s = process.stats();
  LogDebug(absl::StrCat("pid ", process.info().pid, " done: ", s.alloc_samples,
                        " allocation samples, ", s.cpu_samples,
                        " CPU samples, ", s.ticks_picked, " ticks picked, ",
                        s.windows_emitted, " profiles"));
  {
    std::lock_guard<std::mutex> lock(summary_mu_);
    ++summary_.processes;
    summary_.totals += s;
  }
  processes_.erase(it);
}

}  // namespace collector
}  // namespace ringprof
