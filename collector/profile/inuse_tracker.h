// InUseTracker: one process's in-use heap (sampled allocations not yet
// freed), rebuilt from the ring's AllocSample, FreeSampled, LiveSample and
// LiveSweepEnd records by the reader algorithm of ringfile/FORMAT.md §5.1.
//
// Records arrive out of order across rings, so events are buffered and
// applied in timestamp order up to a time the caller knows is complete
// (the watermark): ApplyBefore(t), then ByStack() is the snapshot at t.
// Every event is idempotent per address, so a restarted collector reading
// old records again converges to the same set, and the emitter's sweeps
// correct whatever the ring lost: a complete sweep removes entries it did
// not confirm (their free was lost).
//
// Thread-compatible. Memory: one entry per live sample, plus the events of
// records not applied yet.
#ifndef RINGPROF_COLLECTOR_PROFILE_INUSE_TRACKER_H_
#define RINGPROF_COLLECTOR_PROFILE_INUSE_TRACKER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace ringprof {
namespace collector {

class InUseTracker {
 public:
  // An entry added more than this before a complete sweep began and not
  // confirmed by it is dropped (the grace covers an entry sampled just
  // before the sweep and entered into the emitter's set just after).
  static constexpr uint64_t kSweepGraceNs = 1'000'000'000;
  // Bound on tracked addresses (the emitter tracks at most 16384): records
  // are untrusted, and beyond this new addresses are ignored and counted.
  static constexpr size_t kMaxEntries = 1 << 16;

  struct Stats {
    uint64_t sweeps_complete = 0;
    uint64_t sweeps_incomplete = 0;
    uint64_t pruned = 0;       // entries a complete sweep did not confirm
    uint64_t resurrected = 0;  // entries a sweep re-sent that we lacked
    uint64_t untracked = 0;    // the emitter's count, from the last sweep
    uint64_t over_limit = 0;   // additions refused at kMaxEntries
  };

  // Sample values: bytes (weight) and objects (estimated allocations).
  void OnAlloc(uint64_t ns, uint64_t address, uint32_t stack, int64_t bytes,
               int64_t objects);
  void OnFree(uint64_t ns, uint64_t address);
  void OnLive(uint64_t ns, uint64_t sweep_id, uint64_t alloc_ns,
              uint64_t address, uint32_t stack, int64_t bytes, int64_t objects);
  void OnSweepEnd(uint64_t ns, uint64_t sweep_id, uint64_t begin_ns,
                  uint64_t entries, uint64_t untracked);

  // Applies, in timestamp order, every buffered event older than `ns`.
  void ApplyBefore(uint64_t ns);

  // The applied state: (objects, bytes) by stack.
  absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>> ByStack() const;
  bool empty() const { return live_.empty() && pending_.empty(); }
  size_t live_entries() const { return live_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  enum class Kind : uint8_t { kAlloc, kFree, kLive, kSweepEnd };
  struct Event {
    uint64_t ns;
    uint64_t arrival;  // tie-break: records of one ring keep their order
    Kind kind;
    uint64_t address;
    uint64_t sweep_id;
    uint64_t alloc_ns;  // kLive: the allocation; kSweepEnd: the begin time
    uint64_t count;     // kSweepEnd: entries
    uint32_t stack;
    int64_t bytes;
    int64_t objects;
  };
  struct Entry {
    uint32_t stack;
    int64_t bytes;
    int64_t objects;
    uint64_t alloc_ns;
    uint64_t added_ns;
    uint64_t confirmed_sweep;
  };

  void Push(Event event);
  void Apply(const Event& event);
  void ApplyLive(const Event& event);
  void ApplySweepEnd(const Event& event);

  std::vector<Event> pending_;
  uint64_t arrivals_ = 0;
  absl::flat_hash_map<uint64_t, Entry> live_;  // by address
  // LiveSample records applied, per sweep not yet ended.
  absl::flat_hash_map<uint64_t, uint64_t> sweep_received_;
  Stats stats_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_INUSE_TRACKER_H_
