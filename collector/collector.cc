#include "collector/collector.h"

#include "absl/strings/str_cat.h"
#include "collector/base/log.h"

namespace ringprof {
namespace collector {

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

void Collector::Stop() {
  if (!started_) return;
  started_ = false;
  stop_.store(true);
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
  drainer_->DrainAllAndEnd();
  drain_done_.store(true);
}

void Collector::ProcessLoop() {
  while (true) {
    // Read the flag first: once set, everything the drainer produced is
    // already in the queue.
    const bool done = drain_done_.load();
    std::vector<DrainedBatch> batches =
        queue_.PopAll(std::chrono::milliseconds(50));
    for (DrainedBatch& batch : batches) Handle(batch);
    if (done && batches.empty()) break;
  }
  // Not reached in practice (the drainer ends every process), but never
  // lose windows.
  for (auto& [id, process] : processes_) process->Finish();
  processes_.clear();
}

void Collector::Handle(DrainedBatch& batch) {
  if (batch.kind == DrainedBatch::Kind::kOpened) {
    processes_[batch.process] = std::make_unique<ProcessProfiler>(
        *batch.info, options_.profiler, symbolizer_, sink_, &budget_);
    return;
  }
  auto it = processes_.find(batch.process);
  if (it == processes_.end()) return;
  ProcessProfiler& process = *it->second;
  if (batch.kind == DrainedBatch::Kind::kRecords) {
    // Module maps first: samples in this batch may use them.
    for (const DrainedBatch::Record& record : batch.records) {
      if (record.type == ringfile::RecordType::kModuleMap) {
        process.OnRecord(batch.view(record));
      }
    }
    for (const DrainedBatch::Record& record : batch.records) {
      if (record.type != ringfile::RecordType::kModuleMap) {
        process.OnRecord(batch.view(record));
      }
    }
    if (batch.watermark_ns != 0) process.Advance(batch.watermark_ns);
    return;
  }
  process.Finish();
  const ProcessStats& s = process.stats();
  LogDebug(absl::StrCat("pid ", process.info().pid, " done: ", s.alloc_samples,
                        " allocation samples, ", s.cpu_samples,
                        " CPU samples, ", s.ticks_picked, " ticks picked, ",
                        s.windows_emitted, " profiles"));
  {
    std::lock_guard<std::mutex> lock(summary_mu_);
    ++summary_.processes;
    ProcessStats& t = summary_.totals;
    t.alloc_samples += s.alloc_samples;
    t.cpu_samples += s.cpu_samples;
    t.timing_only_samples += s.timing_only_samples;
    t.ticks_picked += s.ticks_picked;
    t.late_samples += s.late_samples;
    t.emitter_lost += s.emitter_lost;
    t.malformed_records += s.malformed_records;
    t.windows_emitted += s.windows_emitted;
  }
  processes_.erase(it);
}

}  // namespace collector
}  // namespace ringprof
