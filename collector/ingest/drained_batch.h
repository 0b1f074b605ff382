// DrainedBatch and BatchQueue: the hand-off between the drain thread (which
// empties ring files promptly) and the processing thread (tick picking,
// symbolization, pprof; may be slow).
//
// BatchQueue is thread-safe: any number of producers and consumers. It is
// bounded by a record count: Push never blocks, but `full()` tells the
// drainer to stop polling for a moment; the rings then absorb the burst
// and, if it lasts, overwrite their oldest records, which the reader counts
// as lost. Memory stays bounded either way.
#ifndef RINGPROF_COLLECTOR_DRAINED_BATCH_H_
#define RINGPROF_COLLECTOR_DRAINED_BATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/types/span.h"
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
  explicit BatchQueue(size_t max_records) : max_records_(max_records) {}

  void Push(DrainedBatch batch) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_records_ += batch.records.size();
      batches_.push_back(std::move(batch));
    }
    not_empty_.notify_one();
  }

  // Waits up to `timeout` for batches; returns all queued ones.
  std::vector<DrainedBatch> PopAll(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait_for(lock, timeout, [this] { return !batches_.empty(); });
    std::vector<DrainedBatch> out(std::make_move_iterator(batches_.begin()),
                                  std::make_move_iterator(batches_.end()));
    batches_.clear();
    queued_records_ = 0;
    return out;
  }

  bool full() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_records_ >= max_records_;
  }

 private:
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built with
  // TSan, which would then not see this queue's happens-before edges.
  const size_t max_records_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::deque<DrainedBatch> batches_;  // guarded by mu_
  size_t queued_records_ = 0;         // guarded by mu_
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_DRAINED_BATCH_H_
