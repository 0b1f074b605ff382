// LiveSet: the allocation samples of this process that are still allocated
// (the in-use heap), kept by the emitter so that it can re-send them
// (ringfile/FORMAT.md §5.1): a collector that lost records, started late or
// restarted rebuilds the truth from the next sweep.
//
// Contract: every function is lock-free, allocation-free and
// async-signal-safe (also re-entered from a signal handler on the same
// thread); the only syscall is the mmap of the entries by the first
// LiveSetReserve, none on the hot paths. Nothing blocks: when the set is
// full a sample is not tracked.
//
// Three parts:
//   * filter: 2^17 one-byte counters, one per 16-byte granule of a 2 MiB
//     region (LiveFilterCell), and a summary of 2^12 one-byte counters, one
//     per 32 neighbouring cells (512 bytes of the region). Each counts the
//     live entries in it, so the check every free() makes (MaybeLive) is
//     two shifts, an xor, a mask and a byte load from the summary, and only
//     where that is not zero a second from the filter; both are zero for
//     every address that was never sampled unless a sampled one shares its
//     cell (≈ live entries / 131072 of frees, e.g. 1.5% with 2000 live
//     samples). The summary is one page, so the frees of a program with
//     few live samples (a compiler) load from one page, not from any of the
//     filter's 32, most of which miss the TLB in a program with a large
//     heap (the free path was 0.70% of cc1's CPU with the filter alone,
//     0.41% with the summary in front). A summary counter saturates
//     (the sample is then not tracked) only with 255 live samples in one
//     group of 32 cells. The arrays are in .bss:
//     untouched 4 KiB pages read the kernel's shared zero page. (tcmalloc
//     marks sampled spans in its page map, which an interposer on top of
//     another allocator does not have; ddprof keeps a hashed address
//     bitset.
//     Counters instead of bits let a free clear its cell exactly.)
//   * index: open addressing (2^15 slots, at most kLiveMaxProbes probes),
//     address -> entry, consulted only when the filter says "maybe".
//   * entries: kLiveCapacity slots in an anonymous mapping made by the
//     first sample entered (pages are touched only as entries are used; a
//     freed entry is reused first), each holding one sample's fields and
//     stack behind a seqlock so that a sweep on another thread copies it
//     consistently.
#ifndef RINGPROF_EMITTER_LIVE_SET_H_
#define RINGPROF_EMITTER_LIVE_SET_H_

#include <atomic>
#include <cstdint>

namespace ringprof {
namespace emitter {

inline constexpr int kLiveFilterBits = 17;
inline constexpr uint32_t kLiveCapacity = 16384;
inline constexpr int kLiveIndexBits = 15;  // twice the capacity
inline constexpr int kLiveMaxProbes = 32;
inline constexpr uint32_t kNoEntry = 0xffffffffu;
// A sweep starts at most this often, and copies at most kSweepBatch
// entries per step (fewer with small rings: 1/32 of the slots), steps at
// least kSweepStepNs apart.
inline constexpr uint64_t kSweepIntervalNs = 10'000'000'000ull;
inline constexpr uint32_t kSweepBatch = 32;
inline constexpr uint64_t kSweepStepNs = 1'000'000ull;

// The summary's cells: one per kLiveFilterSummaryShift-aligned group of
// filter cells (4 KiB: one page, one TLB entry).
inline constexpr int kLiveFilterSummaryShift = 5;

extern std::atomic<uint8_t> g_live_filter[1u << kLiveFilterBits];
extern std::atomic<uint8_t>
    g_live_filter_summary[1u << (kLiveFilterBits - kLiveFilterSummaryShift)];

// The cell of a 16-byte granule: its offset within its 2 MiB region, folded
// with the region's number. Neighbouring blocks share a cache line of the
// filter (a free touches the line its neighbours' frees just touched, not
// a random one of 2048), and the same offset in different regions (thread
// arenas are 64 MiB-aligned) lands in different cells.
inline uint32_t LiveFilterCell(uint64_t address) {
  // (address >> 4) ^ (address >> 21), one instruction shorter.
  return static_cast<uint32_t>(((address ^ (address >> 17)) >> 4) &
                               ((1u << kLiveFilterBits) - 1));
}

// The free path's test: false means `address` is certainly not live.
inline bool MaybeLive(uint64_t address) {
  const uint32_t cell = LiveFilterCell(address);
  return g_live_filter_summary[cell >> kLiveFilterSummaryShift].load(
             std::memory_order_relaxed) != 0 &&
         g_live_filter[cell].load(std::memory_order_relaxed) != 0;
}

// Marks the cell of `address` for good, so that every free of it takes the
// slow path (next_allocator.h's bootstrap blocks, which free must drop).
void LiveFilterPin(uint64_t address);

// Sets the entries up for stacks of up to `max_frames` frames (the storage
// is mapped by the first LiveSetReserve; if that fails, samples are
// untracked). Once, before any other call; true.
bool LiveSetInit(int max_frames);

// The sampled path, before the sample is appended: reserves an entry and
// indexes `address` (which must not be live). kNoEntry when the set is full
// or not initialised: the sample is then untracked.
uint32_t LiveSetReserve(uint64_t address);
// Starts loading the index slot LiveSetReserve(address) will probe first
// into the cache: the sampled path calls it before walking the stack.
void LiveSetPrefetch(uint64_t address);
// ... and after: makes the entry visible to sweeps with the sample's data.
void LiveSetPublish(uint32_t entry, uint64_t alloc_ns, uint32_t tid,
                    uint16_t flags, uint64_t requested_size,
                    uint64_t weight_bytes, uint64_t address,
                    const uint64_t* frames, uint16_t frame_count);

// Removes `address` from the index and hides its entry from sweeps; returns
// the entry (still owned by the caller) or kNoEntry when not live. Then
// either LiveSetRelease (the block is gone) or LiveSetRestore (a realloc
// failed and the block lives on).
uint32_t LiveSetDetach(uint64_t address);
void LiveSetRelease(uint32_t entry);
void LiveSetRestore(uint32_t entry, uint64_t address);

// Counts a sample that could not be tracked (reported in LiveSweepEnd).
void CountUntrackedSample();

// Sweeps (FORMAT.md §5.1). From the sampled path: starts a sweep when the
// last one started kSweepIntervalNs ago, or advances the running one by one
// step. Whichever thread gets the sweep's try-lock does the work.
void MaybeSweepLiveSet(uint64_t now_ns);
// At exit: one complete sweep without pacing (a running one is abandoned).
void SweepLiveSetNow();
// In a fork child: forgets a sweep another (now gone) thread was running.
void ResetLiveSetSweepAfterFork();

// For tests: entries currently live.
uint32_t LiveSetSize();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_LIVE_SET_H_
