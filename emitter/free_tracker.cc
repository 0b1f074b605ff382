#include "emitter/free_tracker.h"

#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

std::atomic<bool> g_free_tracking{false};

namespace {

// 0: never used (ends a probe sequence); 1: removed (probing continues).
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kRemoved = 1;

std::atomic<uint64_t> g_slots[kFreeTrackerSlots];

uint32_t SlotOf(uint64_t address) {
  // Allocations are 16-byte aligned: drop the low bits, then multiply-shift.
  return static_cast<uint32_t>(((address >> 4) * 0x9e3779b97f4a7c15ull) >>
                               (64 - 14));
}

}  // namespace

void RememberSampledAddress(uint64_t address) {
  if (address <= kRemoved) return;
  const uint32_t first = SlotOf(address);
  for (int probe = 0; probe < kFreeTrackerMaxProbes; ++probe) {
    std::atomic<uint64_t>& slot =
        g_slots[(first + probe) & (kFreeTrackerSlots - 1)];
    uint64_t seen = slot.load(std::memory_order_relaxed);
    if (seen == address) return;
    if ((seen == kEmpty || seen == kRemoved) &&
        slot.compare_exchange_strong(seen, address,
                                     std::memory_order_relaxed)) {
      return;
    }
  }
}

void OnFreeOfPossiblySampled(uint64_t address) {
  const uint32_t first = SlotOf(address);
  for (int probe = 0; probe < kFreeTrackerMaxProbes; ++probe) {
    std::atomic<uint64_t>& slot =
        g_slots[(first + probe) & (kFreeTrackerSlots - 1)];
    uint64_t seen = slot.load(std::memory_order_relaxed);
    if (seen == kEmpty) return;
    if (seen != address) continue;
    if (!slot.compare_exchange_strong(seen, kRemoved,
                                      std::memory_order_relaxed)) {
      return;  // someone else freed it: a double free, not ours to report
    }
    ringfile::FreeSampled record;
    record.monotonic_ns = MonotonicNowNs();
    record.tid = CurrentTid();
    record.reserved = 0;
    record.address = address;
    AppendRecord(ringfile::RecordType::kFreeSampled, &record, sizeof(record),
                 nullptr, 0);
    return;
  }
}

}  // namespace emitter
}  // namespace ringprof
