#include "emitter/free_tracker.h"

#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

std::atomic<bool> g_free_tracking{false};

namespace {

void AppendFree(uint64_t address, uint64_t free_ns) {
  ringfile::FreeSampled record;
  record.monotonic_ns = free_ns;
  record.tid = CurrentTid();
  record.reserved = 0;
  record.address = address;
  AppendRecord(ringfile::RecordType::kFreeSampled, &record, sizeof(record),
               nullptr, 0);
}

}  // namespace

void OnFreeOfPossiblySampled(uint64_t address) {
  const uint32_t entry = LiveSetDetach(address);
  if (entry == kNoEntry) return;  // a filter collision, or a double free
  AppendFree(address, MonotonicNowNs());
  LiveSetRelease(entry);
}

PendingRealloc BeforeRealloc(uint64_t address) {
  PendingRealloc pending;
  pending.entry = LiveSetDetach(address);
  if (pending.entry == kNoEntry) return pending;
  pending.address = address;
  pending.free_ns = MonotonicNowNs();
  return pending;
}

void AfterRealloc(const PendingRealloc& pending, bool succeeded) {
  if (pending.entry == kNoEntry) return;
  if (!succeeded) {
    LiveSetRestore(pending.entry, pending.address);
    return;
  }
  // Timestamped before the realloc: another thread may already have been
  // given (and sampled) the old address, and its AllocSample sorts after.
  AppendFree(pending.address, pending.free_ns);
  LiveSetRelease(pending.entry);
}

uint32_t ReserveLiveEntry(uint64_t address) {
  if (!FreeTrackingOn()) return kNoEntry;
  const uint32_t entry = LiveSetReserve(address);
  if (entry == kNoEntry) CountUntrackedSample();
  return entry;
}

}  // namespace emitter
}  // namespace ringprof
