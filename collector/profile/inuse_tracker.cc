#include "collector/profile/inuse_tracker.h"

#include <algorithm>

namespace ringprof {
namespace collector {

void InUseTracker::Push(Event event) {
  event.arrival = arrivals_++;
  pending_.push_back(event);
}

void InUseTracker::OnAlloc(uint64_t ns, uint64_t address, uint32_t stack,
                           int64_t bytes, int64_t objects) {
  Push({ns, 0, Kind::kAlloc, address, 0, ns, 0, stack, bytes, objects});
}

void InUseTracker::OnFree(uint64_t ns, uint64_t address) {
  Push({ns, 0, Kind::kFree, address, 0, 0, 0, 0, 0, 0});
}

void InUseTracker::OnLive(uint64_t ns, uint64_t sweep_id, uint64_t alloc_ns,
                          uint64_t address, uint32_t stack, int64_t bytes,
                          int64_t objects) {
  Push({ns, 0, Kind::kLive, address, sweep_id, alloc_ns, 0, stack, bytes,
        objects});
}

void InUseTracker::OnSweepEnd(uint64_t ns, uint64_t sweep_id, uint64_t begin_ns,
                              uint64_t entries, uint64_t untracked) {
  stats_.untracked = untracked;
  Push({ns, 0, Kind::kSweepEnd, 0, sweep_id, begin_ns, entries, 0, 0, 0});
}

void InUseTracker::ApplyBefore(uint64_t ns) {
  auto ready =
      std::stable_partition(pending_.begin(), pending_.end(),
                            [ns](const Event& event) { return event.ns < ns; });
  // A sweep's end sorts after its entries even at an equal timestamp.
  std::sort(pending_.begin(), ready, [](const Event& a, const Event& b) {
    if (a.ns != b.ns) return a.ns < b.ns;
    const bool a_end = a.kind == Kind::kSweepEnd;
    const bool b_end = b.kind == Kind::kSweepEnd;
    if (a_end != b_end) return b_end;
    return a.arrival < b.arrival;
  });
  for (auto it = pending_.begin(); it != ready; ++it) Apply(*it);
  pending_.erase(pending_.begin(), ready);
}

void InUseTracker::Apply(const Event& event) {
  switch (event.kind) {
    case Kind::kAlloc:
      // An entry already at this address was freed; its free was lost.
      live_[event.address] = {event.stack, event.bytes, event.objects,
                              event.ns,    event.ns,    0};
      return;
    case Kind::kFree:
      live_.erase(event.address);
      return;
    case Kind::kLive:
      return ApplyLive(event);
    case Kind::kSweepEnd:
      return ApplySweepEnd(event);
  }
}

void InUseTracker::ApplyLive(const Event& event) {
  // Only a few sweeps are ever open at once (one, plus one abandoned at
  // exit); more means corrupt ids: forget them (those sweeps then count
  // as incomplete).
  if (sweep_received_.size() > 16 &&
      !sweep_received_.contains(event.sweep_id)) {
    sweep_received_.clear();
  }
  ++sweep_received_[event.sweep_id];
  if (live_.size() >= kMaxEntries && !live_.contains(event.address)) {
    ++stats_.over_limit;
    return;
  }
  auto [it, inserted] = live_.try_emplace(event.address);
  Entry& entry = it->second;
  if (inserted || entry.alloc_ns != event.alloc_ns) {
    if (inserted) ++stats_.resurrected;
    entry = {event.stack,    event.bytes, event.objects,
             event.alloc_ns, event.ns,    0};
  }
  entry.confirmed_sweep = event.sweep_id;
}

void InUseTracker::ApplySweepEnd(const Event& event) {
  auto received = sweep_received_.find(event.sweep_id);
  const uint64_t count =
      received == sweep_received_.end() ? 0 : received->second;
  if (received != sweep_received_.end()) sweep_received_.erase(received);
  // Sweeps of older ids that never ended (abandoned at exit, or their
  // end was lost) will not: forget their counts.
  for (auto it = sweep_received_.begin(); it != sweep_received_.end();) {
    auto next = std::next(it);
    if (it->first < event.sweep_id) sweep_received_.erase(it);
    it = next;
  }
  if (count != event.count) {
    ++stats_.sweeps_incomplete;
    return;
  }
  ++stats_.sweeps_complete;
  const uint64_t begin = event.alloc_ns;
  for (auto it = live_.begin(); it != live_.end();) {
    auto next = std::next(it);
    const Entry& entry = it->second;
    if (entry.confirmed_sweep != event.sweep_id &&
        entry.added_ns + kSweepGraceNs < begin) {
      live_.erase(it);
      ++stats_.pruned;
    }
    it = next;
  }
}

absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>>
InUseTracker::ByStack() const {
  absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>> out;
  for (const auto& [address, entry] : live_) {
    auto& [objects, bytes] = out[entry.stack];
    objects += entry.objects;
    bytes += entry.bytes;
  }
  return out;
}

}  // namespace collector
}  // namespace ringprof
