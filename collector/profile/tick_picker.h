// TickPicker: estimates where a process spends time from samples that were
// taken at irregular moments (allocations), Pyro Caml's "tick picking".
//
// Ticks are the instants k * tick_ns on the samples' own CLOCK_MONOTONIC
// (never the collector's poll time). For every tick T and every thread, the
// thread's sample whose timestamp is closest to T is picked, provided it is
// within max_distance_ns of T (ties go to the earlier sample). Each pick is
// worth one tick of time to the picked sample's stack. A thread whose
// samples are farther than max_distance_ns from a tick gets nothing for it:
// the estimate cannot tell "idle" from "busy in code that does not allocate".
// With report_empty_ticks, a tick at which no thread of the process got a
// pick (between the process's first and last sample) is reported once with
// tid 0 and kNoSample, so the caller may record a synthetic frame for it.
//
// Samples may arrive out of order across threads (one ring per thread shard
// is drained at a time). Ticks are therefore decided behind a watermark: the
// caller promises that no sample older than the watermark will be added any
// more; tick T is decided once T + max_distance_ns <= watermark. A sample
// that arrives older than what was already decided is counted in
// late_samples() and ignored for picking.
//
// Thread-compatible. Memory: the samples of the undecided span only.
#ifndef RINGPROF_COLLECTOR_PROFILE_TICK_PICKER_H_
#define RINGPROF_COLLECTOR_PROFILE_TICK_PICKER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace ringprof {
namespace collector {

class TickPicker {
 public:
  static constexpr uint32_t kNoSample = std::numeric_limits<uint32_t>::max();

  struct Options {
    uint64_t tick_ns = 10'000'000;
    uint64_t max_distance_ns = 10'000'000;
    bool report_empty_ticks = false;
  };

  // Called once per pick: the tick instant, the thread, and the `payload`
  // the sample was added with (the caller's stack id).
  using PickFn =
      std::function<void(uint64_t tick_ns, uint32_t tid, uint32_t payload)>;

  explicit TickPicker(const Options& options);

  // `payload` must not be kNoSample.
  void Add(uint32_t tid, uint64_t timestamp_ns, uint32_t payload);

  // Decides every tick T with T + max_distance_ns <= watermark_ns, in
  // increasing tick order per thread (threads are not interleaved in order).
  void Advance(uint64_t watermark_ns, const PickFn& pick);

  // Decides every remaining tick (end of the process).
  void Finish(const PickFn& pick);

  uint64_t late_samples() const { return late_samples_; }
  uint64_t tick_ns() const { return options_.tick_ns; }

 private:
  struct Sample {
    uint64_t timestamp_ns;
    uint32_t payload;
  };
  struct Thread {
    std::deque<Sample> samples;  // sorted by timestamp
  };

  // Decides ticks in [first_undecided_tick_, end_tick) for every thread.
  void DecideUntil(uint64_t end_tick, const PickFn& pick);
  // Picks for one thread; marks picked ticks in `picked` (indexed relative
  // to first_undecided_tick_) when it is not null.
  void DecideThread(uint32_t tid, Thread& thread, uint64_t end_tick,
                    const PickFn& pick, std::vector<uint8_t>* picked);

  Options options_;
  absl::flat_hash_map<uint32_t, Thread> threads_;
  // Ticks are numbered k (instant k * tick_ns); every tick below this is
  // decided. Until the first decision it follows the earliest sample.
  uint64_t first_undecided_tick_ = 0;
  bool started_ = false;
  bool decided_any_ = false;
  uint64_t last_timestamp_ns_ = 0;
  uint64_t late_samples_ = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_TICK_PICKER_H_
