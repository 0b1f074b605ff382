// DrainedBatch and BatchQueue: the hand-off between the drain thread (which
// empties ring files promptly) and the processing thread (tick picking,
// symbolization, pprof; may be slow).
//
// BatchQueue is thread-safe: any number of producers and consumers. It is
// bounded by a record count: Push never blocks, but `full()` tells the
// drainer to stop polling for a moment; the rings then absorb the burst
// and, if it lasts, overwrite their oldest records, which the reader counts
// as lost. Memory stays bounded either way. Batches the consumer is done
// with go back (Recycle) so that the producer reuses their buffers (Spare)
// instead of allocating at every poll.
#ifndef RINGPROF_COLLECTOR_INGEST_DRAINED_BATCH_H_
#define RINGPROF_COLLECTOR_INGEST_DRAINED_BATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "collector/ingest/ring_state.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace collector {

struct DrainedBatch {
  enum class Kind {
    kOpened,   // first batch of a process: `info` is set
    kRecords,  // records (possibly none) and a new watermark
    kEnded,    // the process ended (or its file broke) and is fully drained
  };
  Kind kind = Kind::kRecords;
  uint32_t process = 0;  // drainer-assigned id, unique per ring file
  std::shared_ptr<const ringfile::FileInfo> info;  // kOpened only
  std::string path;                                // kOpened only
  // kOpened: where an earlier collector stopped (the reader resumed at its
  // positions); null when starting afresh.
  std::shared_ptr<const RingState> resumed;
  // kEnded: the process ended and its ring is drained (false: the collector
  // stops while the process may still write; its state is kept).
  bool process_done = false;

  // Records: payload copies in `arena` (8-byte aligned words).
  struct Record {
    ringfile::RecordType type;
    uint32_t ring;
    uint64_t index;
    uint32_t word_offset;  // into arena
    uint32_t payload_size;
  };
  std::vector<Record> records;
  std::vector<uint64_t> arena;

  // kRecords: the reader's position in each ring after these records.
  std::vector<uint64_t> positions;

  // No record older than this (process CLOCK_MONOTONIC) will follow; 0 when
  // unknown.
  uint64_t watermark_ns = 0;

  ringfile::RecordView view(const Record& r) const {
    ringfile::RecordView v;
    v.type = r.type;
    v.ring = r.ring;
    v.index = r.index;
    v.payload = absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(arena.data() + r.word_offset),
        r.payload_size);
    return v;
  }
  // Empty again, keeping the buffers' capacity.
  void Clear() {
    kind = Kind::kRecords;
    process = 0;
    info.reset();
    path.clear();
    resumed.reset();
    process_done = false;
    records.clear();
    arena.clear();
    positions.clear();
    watermark_ns = 0;
  }
  void Append(const ringfile::RecordView& v) {
    const uint32_t offset = static_cast<uint32_t>(arena.size());
    arena.resize(arena.size() + (v.payload.size() + 7) / 8);
    if (!v.payload.empty()) {
      std::memcpy(arena.data() + offset, v.payload.data(), v.payload.size());
    }
    records.push_back({v.type, v.ring, v.index, offset,
                       static_cast<uint32_t>(v.payload.size())});
  }
};

class BatchQueue {
 public:
  // Full at `max_records` records or `max_bytes` of payload.
  explicit BatchQueue(size_t max_records, size_t max_bytes = 64 << 20)
      : max_records_(max_records), max_bytes_(max_bytes) {}

  // Appends `batch` and wakes a waiting PopAll; with `notify` false it
  // leaves that to a later Notify() (one wake-up for a round of pushes).
  void Push(DrainedBatch batch, bool notify = true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_records_ += batch.records.size();
      queued_bytes_ += batch.arena.size() * sizeof(uint64_t);
      batches_.push_back(std::move(batch));
    }
    if (notify) not_empty_.notify_one();
  }

  // Wakes a waiting PopAll (if anything is queued, it returns it).
  void Notify() { not_empty_.notify_one(); }

  // Waits up to `timeout` for batches (or Close()); moves all queued ones
  // to `out` (cleared first).
  void PopAll(std::chrono::milliseconds timeout,
              std::vector<DrainedBatch>* out) {
    out->clear();
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait_for(lock, timeout,
                        [this] { return !batches_.empty() || closed_; });
    out->reserve(batches_.size());
    for (DrainedBatch& batch : batches_) out->push_back(std::move(batch));
    batches_.clear();
    queued_records_ = 0;
    queued_bytes_ = 0;
  }

  // No more Push: a waiting PopAll returns at once.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    not_empty_.notify_all();
  }

  bool full() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_records_ >= max_records_ || queued_bytes_ >= max_bytes_;
  }

  // Takes back a batch the consumer is done with, for Spare(). Batches
  // holding more than kMaxSpareBytes of buffers are freed instead.
  void Recycle(DrainedBatch batch) {
    const size_t bytes =
        batch.records.capacity() * sizeof(DrainedBatch::Record) +
        batch.arena.capacity() * sizeof(uint64_t);
    if (bytes > kMaxSpareBytes) return;
    batch.Clear();
    std::lock_guard<std::mutex> lock(mu_);
    if (spares_.size() < kMaxSpares) spares_.push_back(std::move(batch));
  }

  // An empty batch, with the buffers of a recycled one when there is one.
  DrainedBatch Spare() {
    std::lock_guard<std::mutex> lock(mu_);
    if (spares_.empty()) return DrainedBatch();
    DrainedBatch batch = std::move(spares_.back());
    spares_.pop_back();
    return batch;
  }

 private:
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, which would then not see this queue's happens-before edges.
  const size_t max_records_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  static constexpr size_t kMaxSpares = 16;
  static constexpr size_t kMaxSpareBytes = 1 << 20;
  std::deque<DrainedBatch> batches_;  // guarded by mu_
  std::vector<DrainedBatch> spares_;  // guarded by mu_
  size_t queued_records_ = 0;         // guarded by mu_
  size_t queued_bytes_ = 0;           // guarded by mu_
  bool closed_ = false;               // guarded by mu_
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_DRAINED_BATCH_H_
