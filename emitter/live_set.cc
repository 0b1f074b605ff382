#include "emitter/live_set.h"

#include <sys/mman.h>

#include <cstddef>

#include "emitter/fork_child.h"
#include "emitter/large_table.h"
#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

RINGPROF_LARGE_TABLE std::atomic<uint8_t> g_live_filter[1u << kLiveFilterBits];
// Page-aligned: every free's first load stays on one page.
alignas(4096) RINGPROF_LARGE_TABLE
    std::atomic<uint8_t> g_live_filter_summary[1u << (kLiveFilterBits -
                                                      kLiveFilterSummaryShift)];

namespace {

// Index slot states besides an address (0 is never a live address).
constexpr uint64_t kSlotEmpty = 0;  // ends a probe sequence
constexpr uint64_t kSlotRemoved = 1;
constexpr uint32_t kIndexSlots = 1u << kLiveIndexBits;

RINGPROF_LARGE_TABLE std::atomic<uint64_t> g_index_address[kIndexSlots];
RINGPROF_LARGE_TABLE std::atomic<uint32_t> g_index_entry[kIndexSlots];

// Entry layout, in 8-byte words (all accessed atomically: a sweep copies an
// entry while its owner may rewrite it, and the seqlock sorts that out).
enum Word : uint32_t {
  kSeq = 0,   // odd while being written
  kNextFree,  // free-list link (entry + 1; 0 = end)
  kAddress,   // 0 while not live
  kAllocNs,
  kTidFlags,  // tid | frame_count << 32 | flags << 48
  kRequested,
  kWeight,
  kFrames,  // frames[max_frames]
};

// Mapped by the first LiveSetReserve (MapEntries); g_entry_words != 0 once
// LiveSetInit ran.
std::atomic<std::atomic<uint64_t>*> g_entries{nullptr};
std::atomic<bool> g_entries_map_failed{false};
uint32_t g_entry_words = 0;
uint32_t g_max_frames = 0;
// Entries ever handed out (never-used ones are above), and the free list's
// head: (ABA tag << 32) | (entry + 1).
std::atomic<uint32_t> g_high_water{0};
std::atomic<uint64_t> g_free_head{0};
std::atomic<uint32_t> g_live_count{0};
std::atomic<uint64_t> g_untracked{0};

std::atomic<uint64_t>* Entry(uint32_t entry) {
  return g_entries.load(std::memory_order_acquire) +
         uint64_t{entry} * g_entry_words;
}

uint32_t IndexSlot(uint64_t address) {
  return static_cast<uint32_t>((address * 0xc2b2ae3d27d4eb4full) >>
                               (64 - kLiveIndexBits));
}

uint32_t PopEntry() {
  uint64_t head = g_free_head.load(std::memory_order_acquire);
  while ((head & 0xffffffffu) != 0) {
    const uint32_t entry = static_cast<uint32_t>(head & 0xffffffffu) - 1;
    const uint64_t next =
        Entry(entry)[kNextFree].load(std::memory_order_relaxed);
    const uint64_t replacement = ((head >> 32) + 1) << 32 | next;
    if (g_free_head.compare_exchange_weak(head, replacement,
                                          std::memory_order_acquire)) {
      return entry;
    }
  }
  uint32_t used = g_high_water.load(std::memory_order_relaxed);
  while (used < kLiveCapacity) {
    if (g_high_water.compare_exchange_weak(used, used + 1,
                                           std::memory_order_relaxed)) {
      return used;
    }
  }
  return kNoEntry;
}

void PushEntry(uint32_t entry) {
  uint64_t head = g_free_head.load(std::memory_order_relaxed);
  while (true) {
    Entry(entry)[kNextFree].store(head & 0xffffffffu,
                                  std::memory_order_relaxed);
    const uint64_t replacement = ((head >> 32) + 1) << 32 | (entry + 1);
    if (g_free_head.compare_exchange_weak(head, replacement,
                                          std::memory_order_release)) {
      return;
    }
  }
}

// Adds one to a counter unless it is saturated (then false).
bool CountUp(std::atomic<uint8_t>& counter) {
  uint8_t seen = counter.load(std::memory_order_relaxed);
  do {
    if (seen == 0xff) return false;
  } while (!counter.compare_exchange_weak(seen, seen + 1,
                                          std::memory_order_relaxed));
  return true;
}

// Both counters of `address` up, or neither (saturated: do not track).
bool FilterAdd(uint64_t address) {
  const uint32_t cell = LiveFilterCell(address);
  std::atomic<uint8_t>& summary =
      g_live_filter_summary[cell >> kLiveFilterSummaryShift];
  if (!CountUp(summary)) return false;
  if (CountUp(g_live_filter[cell])) return true;
  summary.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void FilterRemove(uint64_t address) {
  const uint32_t cell = LiveFilterCell(address);
  g_live_filter[cell].fetch_sub(1, std::memory_order_relaxed);
  g_live_filter_summary[cell >> kLiveFilterSummaryShift].fetch_sub(
      1, std::memory_order_relaxed);
}

bool IndexInsert(uint64_t address, uint32_t entry) {
  const uint32_t first = IndexSlot(address);
  for (int probe = 0; probe < kLiveMaxProbes; ++probe) {
    const uint32_t slot = (first + probe) & (kIndexSlots - 1);
    uint64_t seen = g_index_address[slot].load(std::memory_order_relaxed);
    if (seen != kSlotEmpty && seen != kSlotRemoved) continue;
    // Claim the slot, then name the entry: writing the entry before the
    // claim could overwrite the entry of a racing insert that won the slot.
    // A lookup of `address` comes after this insert returned (the address
    // is not handed out before), so it reads the entry written here.
    if (g_index_address[slot].compare_exchange_strong(
            seen, address, std::memory_order_acq_rel)) {
      g_index_entry[slot].store(entry, std::memory_order_release);
      return true;
    }
  }
  return false;
}

// Removes `address`; its entry, or kNoEntry. Exactly one of two racing
// removals (a double free) wins.
uint32_t IndexRemove(uint64_t address) {
  const uint32_t first = IndexSlot(address);
  for (int probe = 0; probe < kLiveMaxProbes; ++probe) {
    const uint32_t slot = (first + probe) & (kIndexSlots - 1);
    uint64_t seen = g_index_address[slot].load(std::memory_order_acquire);
    if (seen == kSlotEmpty) return kNoEntry;
    if (seen != address) continue;
    const uint32_t entry = g_index_entry[slot].load(std::memory_order_acquire);
    if (!g_index_address[slot].compare_exchange_strong(
            seen, kSlotRemoved, std::memory_order_acq_rel)) {
      return kNoEntry;
    }
    return entry;
  }
  return kNoEntry;
}

// Seqlock writer: `fill` runs between the odd and the even sequence.
template <typename Fill>
void WriteEntry(uint32_t entry, Fill fill) {
  std::atomic<uint64_t>* words = Entry(entry);
  const uint64_t seq = words[kSeq].load(std::memory_order_relaxed);
  words[kSeq].store(seq | 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  fill(words);
  words[kSeq].store((seq | 1) + 1, std::memory_order_release);
}

}  // namespace

bool LiveSetInit(int max_frames) {
  if (g_entry_words != 0) return true;
  g_max_frames = static_cast<uint32_t>(max_frames);
  g_entry_words = kFrames + g_max_frames;
  return true;
}

namespace {

// Maps the entries on first use: a process that never samples an
// allocation maps nothing (an mmap, and its unmapping at exit, in every
// short-lived process). Threads racing here, or a signal handler that
// interrupted this on the same thread, map their own; one wins and the
// others unmap theirs. After a failure (address space limit) the samples
// are untracked, without a system call each.
bool MapEntries() {
  if (g_entries.load(std::memory_order_acquire) != nullptr) return true;
  if (g_entry_words == 0 ||
      g_entries_map_failed.load(std::memory_order_relaxed)) {
    return false;
  }
  const size_t bytes =
      size_t{kLiveCapacity} * g_entry_words * sizeof(std::atomic<uint64_t>);
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    g_entries_map_failed.store(true, std::memory_order_relaxed);
    return false;
  }
  // Zero-filled pages are valid atomics of value 0 (lock-free, address-free).
  std::atomic<uint64_t>* expected = nullptr;
  if (!g_entries.compare_exchange_strong(
          expected, static_cast<std::atomic<uint64_t>*>(map),
          std::memory_order_acq_rel, std::memory_order_acquire)) {
    munmap(map, bytes);
  }
  return true;
}

}  // namespace

void LiveFilterPin(uint64_t address) {
  // Pins come first (bootstrap blocks exist before any sample), so the
  // count never saturates before the pin is in it, and removals of samples
  // never take it back to zero.
  FilterAdd(address);
}

void LiveSetPrefetch(uint64_t address) {
  const uint32_t slot = IndexSlot(address);
  __builtin_prefetch(&g_index_address[slot], 1, 3);
  __builtin_prefetch(&g_index_entry[slot], 1, 3);
}

uint32_t LiveSetReserve(uint64_t address) {
  if (address <= kSlotRemoved || !MapEntries()) return kNoEntry;
  const uint32_t entry = PopEntry();
  if (entry == kNoEntry) return kNoEntry;
  if (!FilterAdd(address)) {
    PushEntry(entry);
    return kNoEntry;
  }
  if (!IndexInsert(address, entry)) {
    FilterRemove(address);
    PushEntry(entry);
    return kNoEntry;
  }
  return entry;
}

void LiveSetPublish(uint32_t entry, uint64_t alloc_ns, uint32_t tid,
                    uint16_t flags, uint64_t requested_size,
                    uint64_t weight_bytes, uint64_t address,
                    const uint64_t* frames, uint16_t frame_count) {
  if (frame_count > g_max_frames) frame_count = g_max_frames;
  WriteEntry(entry, [&](std::atomic<uint64_t>* words) {
    words[kAllocNs].store(alloc_ns, std::memory_order_relaxed);
    words[kTidFlags].store(
        uint64_t{tid} | uint64_t{frame_count} << 32 | uint64_t{flags} << 48,
        std::memory_order_relaxed);
    words[kRequested].store(requested_size, std::memory_order_relaxed);
    words[kWeight].store(weight_bytes, std::memory_order_relaxed);
    for (uint16_t i = 0; i < frame_count; ++i) {
      words[kFrames + i].store(frames[i], std::memory_order_relaxed);
    }
    words[kAddress].store(address, std::memory_order_relaxed);
  });
  g_live_count.fetch_add(1, std::memory_order_relaxed);
}

uint32_t LiveSetDetach(uint64_t address) {
  const uint32_t entry = IndexRemove(address);
  if (entry == kNoEntry) return kNoEntry;
  FilterRemove(address);
  // Hidden before the caller reads the free's timestamp: a sweep that still
  // copied it did so earlier (FORMAT.md §5.1, timestamp order).
  bool was_live = false;
  WriteEntry(entry, [&](std::atomic<uint64_t>* words) {
    was_live = words[kAddress].exchange(0, std::memory_order_relaxed) != 0;
  });
  if (was_live) g_live_count.fetch_sub(1, std::memory_order_relaxed);
  return entry;
}

void LiveSetRelease(uint32_t entry) { PushEntry(entry); }

void LiveSetRestore(uint32_t entry, uint64_t address) {
  if (!FilterAdd(address)) {
    PushEntry(entry);
    return;
  }
  if (!IndexInsert(address, entry)) {
    FilterRemove(address);
    PushEntry(entry);
    return;
  }
  WriteEntry(entry, [&](std::atomic<uint64_t>* words) {
    words[kAddress].store(address, std::memory_order_relaxed);
  });
  g_live_count.fetch_add(1, std::memory_order_relaxed);
}

void CountUntrackedSample() {
  g_untracked.fetch_add(1, std::memory_order_relaxed);
}

uint32_t LiveSetSize() { return g_live_count.load(std::memory_order_relaxed); }

// ---------------------------------------------------------------------------
// Sweeps.

namespace {

std::atomic<bool> g_sweep_lock{false};
// When the next step (of the running sweep, or the next sweep) is due; read
// without the lock, written with it.
std::atomic<uint64_t> g_next_step_ns{0};
// Guarded by g_sweep_lock.
uint64_t g_sweep_id = 0;
bool g_sweeping = false;
uint64_t g_sweep_begin_ns = 0;
uint32_t g_sweep_next = 0;
uint64_t g_sweep_appended = 0;

bool TryLockSweep() {
  return !g_sweep_lock.load(std::memory_order_relaxed) &&
         !g_sweep_lock.exchange(true, std::memory_order_acquire);
}
void UnlockSweep() { g_sweep_lock.store(false, std::memory_order_release); }

// Copies entry `entry` into `out` (a LiveSample followed by its frames) if
// it is live and stable. Returns the record's tail size, or -1.
int CopyEntry(uint32_t entry, ringfile::LiveSample* head, uint64_t* frames) {
  const std::atomic<uint64_t>* words = Entry(entry);
  const uint64_t seq = words[kSeq].load(std::memory_order_acquire);
  if ((seq & 1) != 0) return -1;
  const uint64_t address = words[kAddress].load(std::memory_order_relaxed);
  if (address == 0) return -1;
  const uint64_t tid_flags = words[kTidFlags].load(std::memory_order_relaxed);
  uint16_t frame_count = static_cast<uint16_t>(tid_flags >> 32);
  if (frame_count > g_max_frames) frame_count = 0;
  head->alloc_ns = words[kAllocNs].load(std::memory_order_relaxed);
  head->tid = static_cast<uint32_t>(tid_flags);
  head->frame_count = frame_count;
  head->flags = static_cast<uint16_t>(tid_flags >> 48);
  head->requested_size = words[kRequested].load(std::memory_order_relaxed);
  head->weight_bytes = words[kWeight].load(std::memory_order_relaxed);
  head->address = address;
  for (uint16_t i = 0; i < frame_count; ++i) {
    frames[i] = words[kFrames + i].load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (words[kSeq].load(std::memory_order_relaxed) != seq) return -1;
  return frame_count * 8;
}

void BeginSweep(uint64_t now_ns) {
  g_sweeping = true;
  ++g_sweep_id;
  g_sweep_begin_ns = now_ns;
  g_sweep_next = 0;
  g_sweep_appended = 0;
}

// Copies up to `budget` entries; ends the sweep (LiveSweepEnd) when every
// entry was visited. Records are spread over the rings so that a sweep can
// be larger than one ring; the reader orders them by timestamp.
void SweepStep(uint32_t budget, uint64_t* frames) {
  const uint64_t now_ns = MonotonicNowNs();
  const uint32_t end = g_high_water.load(std::memory_order_relaxed);
  ringfile::LiveSample head = {};
  head.sweep_id = g_sweep_id;
  for (; g_sweep_next < end && budget > 0; ++g_sweep_next) {
    head.monotonic_ns = now_ns;
    const int tail = CopyEntry(g_sweep_next, &head, frames);
    if (tail < 0) continue;
    --budget;
    if (AppendRecordInRing(static_cast<uint32_t>(g_sweep_appended),
                           ringfile::RecordType::kLiveSample, &head,
                           sizeof(head), frames, static_cast<uint32_t>(tail))) {
      ++g_sweep_appended;
    }
  }
  if (g_sweep_next < end) return;
  ringfile::LiveSweepEnd done = {};
  done.monotonic_ns = MonotonicNowNs();
  done.begin_ns = g_sweep_begin_ns;
  done.sweep_id = g_sweep_id;
  done.entries = g_sweep_appended;
  done.untracked = g_untracked.load(std::memory_order_relaxed);
  AppendRecordInRing(static_cast<uint32_t>(g_sweep_appended),
                     ringfile::RecordType::kLiveSweepEnd, &done, sizeof(done),
                     nullptr, 0);
  g_sweeping = false;
}

uint64_t* FrameBuffer(void* storage) { return static_cast<uint64_t*>(storage); }

// Entries per step: kSweepBatch, or fewer with small rings, so that a
// collector polling every few milliseconds reads a sweep before the rings
// wrap (a step per millisecond fills at most 1/32 of the slots).
uint32_t SweepBatch() {
  const uint32_t batch = RingSlots() / 32;
  return batch == 0 ? 1 : (batch < kSweepBatch ? batch : kSweepBatch);
}

}  // namespace

void MaybeSweepLiveSet(uint64_t now_ns) {
  // (A set whose entries are not mapped yet sweeps empty.)
  if (g_entry_words == 0) return;
  if (now_ns < g_next_step_ns.load(std::memory_order_relaxed)) return;
  if (!TryLockSweep()) return;
  if (!g_sweeping) BeginSweep(now_ns);
  SweepStep(SweepBatch(),
            FrameBuffer(__builtin_alloca(sizeof(uint64_t) * g_max_frames)));
  g_next_step_ns.store(
      g_sweeping ? now_ns + kSweepStepNs : g_sweep_begin_ns + kSweepIntervalNs,
      std::memory_order_relaxed);
  UnlockSweep();
}

void SweepLiveSetNow() {
  if (g_entry_words == 0 || !TryLockSweep()) return;
  BeginSweep(MonotonicNowNs());
  uint64_t* frames =
      FrameBuffer(__builtin_alloca(sizeof(uint64_t) * g_max_frames));
  while (g_sweeping) SweepStep(kLiveCapacity, frames);
  UnlockSweep();
}

void ResetLiveSetSweepAfterFork() {
  if (g_sweeping) g_sweeping = false;  // (only if set: fork_child.h)
  StoreIfDifferent<uint64_t>(g_next_step_ns, 0);
  StoreIfDifferent(g_sweep_lock, false);
}

}  // namespace emitter
}  // namespace ringprof
