// Collector: the ring-file-to-profile pipeline on two threads.
//
//   drain thread       RingDrainer: discover ring files, copy records out
//                      as often as they arrive, detect process ends,
//                      retention
//        │ BatchQueue (bounded by records)
//        ▼
//   processing thread  one ProcessProfiler per process: tick picking,
//                      allocation profiles, symbolization, pprof per window,
//                      ProfileSink::Submit
//
// Stop() drains every ring once more, ends every process (each emits its
// final partial window) and joins both threads; the caller then flushes the
// sink. Stop(deadline) bounds that: the drainer stops reading at half the
// time left, and batches of records still queued at three quarters are
// dropped (counted in ringprof_shutdown_dropped_records_total; with
// --state-dir the next collector reads them again).
//
// With a state directory, each process's Checkpoint is saved there
// (ring_state.h) whenever one of its windows was handed to the sink, and
// removed when the process has ended.
//
// Thread-safety: Start/Stop from one thread; the counters from any thread.
#ifndef RINGPROF_COLLECTOR_COLLECTOR_H_
#define RINGPROF_COLLECTOR_COLLECTOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collector/ingest/drained_batch.h"
#include "collector/ingest/ring_drainer.h"
#include "collector/profile/process_profiler.h"
#include "collector/sink/sink.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {

struct CollectorOptions {
  DrainerOptions drainer;
  ProcessProfilerOptions profiler;
  // Records queued between the threads before the drainer pauses.
  size_t max_queued_records = 256 * 1024;
  // Shared budget of every ProcessProfiler (MemoryBudget).
  uint64_t max_memory_bytes = uint64_t{1} << 30;
};

// Totals over the processes that ended (for the final report).
struct CollectorSummary {
  uint64_t processes = 0;
  ProcessStats totals;
};

class Collector {
 public:
  // `symbolizer` may be null; both must outlive the collector.
  Collector(const CollectorOptions& options, Symbolizer* symbolizer,
            ProfileSink* sink);
  ~Collector();

  // Fails (without starting anything) when the ring directory cannot be
  // listed.
  absl::Status Start();

  // Idempotent. Returns after every process's last window was submitted,
  // or soon after `deadline` (see above).
  void Stop(absl::Time deadline = absl::InfiniteFuture());

  // Polls every ring now rather than when it is due (e.g. the profiled
  // command exited). Any thread.
  void Wake();

  uint64_t rings_opened() const;
  uint64_t rings_ended() const;
  CollectorSummary summary() const;

 private:
  void DrainLoop();
  void ProcessLoop();
  void Handle(DrainedBatch& batch);
  void SaveCheckpoint(uint32_t process, bool force);

  const CollectorOptions options_;
  Symbolizer* const symbolizer_;
  ProfileSink* const sink_;
  BatchQueue queue_;
  std::unique_ptr<RingDrainer> drainer_;
  std::thread drain_thread_;
  std::thread process_thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> drain_done_{false};
  // Set before stop_: the drainer's and the processing thread's deadlines.
  absl::Time drain_deadline_ = absl::InfiniteFuture();
  absl::Time process_deadline_ = absl::InfiniteFuture();
  bool started_ = false;

  // Processing thread only.
  MemoryBudget budget_;
  std::map<uint32_t, std::unique_ptr<ProcessProfiler>> processes_;
  std::map<uint32_t, std::string> paths_;  // ring file of each process
  mutable std::mutex summary_mu_;          // std: see BatchQueue on TSan
  CollectorSummary summary_;               // guarded by summary_mu_
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_COLLECTOR_H_
