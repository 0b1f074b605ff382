// The ring file's byte layout: the contract between the emitter (writer,
// inside the workload) and the collector (reader, another process).
// FORMAT.md is the prose specification; this header is its C++ mirror.
//
// Guarantees of this header: plain constants and standard-layout structs
// only; no allocation, no syscalls, no dependencies beyond <atomic> and
// <cstdint>, so the emitter can include it from inside malloc.
//
// Layout (all integers little-endian, every offset from the file's start):
//
//   [0, 4096)                    FileHeader
//   [control_offset, ...)        RingControl[ring_count], 128 bytes each
//   [slots_offset, file_size)    ring_count rings of slots_per_ring slots
//                                of slot_size bytes; ring r's slot s is at
//                                slots_offset + (r*slots_per_ring+s)*slot_size
//
// Every slot starts with a SlotHeader whose `sequence` word is the per-slot
// seqlock of the commit protocol (see FORMAT.md, "Commit protocol").
#ifndef RINGPROF_RINGFILE_FORMAT_H_
#define RINGPROF_RINGFILE_FORMAT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace ringfile {

// Shared-memory atomics must be lock-free (address-free): a lock would live
// in one process only, and could be left held by a signal or a kill.
static_assert(std::atomic<uint64_t>::is_always_lock_free, "need lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "need lock-free");

inline constexpr char kMagic[8] = {'R', 'I', 'N', 'G', 'P', 'R', 'O', 'F'};
// Bumped on any change an older reader cannot skip safely. Readers reject
// files whose version they do not know (FORMAT.md, "Versioning"). Version 2:
// samples carry a tag-set id and a span id.
inline constexpr uint32_t kFormatVersion = 2;
// Written last, with release ordering, once every other header field is set.
inline constexpr uint32_t kReadyMagic = 0x59444552;  // "REDY"
inline constexpr uint32_t kHeaderSize = 4096;
inline constexpr uint32_t kControlBlockSize = 128;
inline constexpr uint32_t kSlotAlignment = 64;
inline constexpr uint32_t kMaxRings = 64;
inline constexpr uint32_t kMinSlotSize = 256;
inline constexpr uint32_t kMaxSlotSize = 64 * 1024;
inline constexpr uint32_t kMinSlotsPerRing = 2;
inline constexpr uint32_t kMaxSlotsPerRing = 1u << 20;
// Readers reject larger files: a bound on what a corrupt header can make them
// map, independent of the per-field limits above.
inline constexpr uint64_t kMaxFileSize = uint64_t{4} << 30;
// next_index never legitimately reaches this (2^62 records); a larger value
// would overflow the slot sequence words, so readers treat it as corruption.
inline constexpr uint64_t kMaxRecordIndex = uint64_t{1} << 62;
inline constexpr uint32_t kSlotHeaderSize = 16;
inline constexpr uint32_t kServiceNameSize = 64;
inline constexpr uint32_t kExecutableSize = 256;

// Header flags.
inline constexpr uint32_t kFlagProcessEnded = 1u << 0;  // set after kProcessEnd

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // kHeaderSize
  uint64_t file_size;
  uint32_t ring_count;      // 1..kMaxRings
  uint32_t slots_per_ring;  // a power of two in [min, max]
  uint32_t slot_size;       // multiple of kSlotAlignment, in [min, max]
  uint32_t control_offset;  // kHeaderSize
  uint64_t slots_offset;    // page-aligned, after the control blocks
  uint32_t pid;
  std::atomic<uint32_t> flags;
  uint64_t process_start_ticks;  // /proc/self/stat field 22 (clock ticks)
  // One reading of each clock taken together at creation: a sample's
  // CLOCK_MONOTONIC time t maps to wall time created_realtime_ns +
  // (t - created_monotonic_ns).
  uint64_t created_monotonic_ns;
  uint64_t created_realtime_ns;
  char service_name[kServiceNameSize];  // NUL-padded UTF-8
  char executable[kExecutableSize];     // NUL-padded, truncated if longer
  uint8_t reserved[kHeaderSize - 408];
  // Zero until the header is complete; then kReadyMagic.
  std::atomic<uint32_t> ready;
  uint32_t reserved_tail;
};
static_assert(sizeof(FileHeader) == kHeaderSize, "header is one page");

// Per-ring counters, each on its own cache line.
struct RingControl {
  // Next record index to hand out; monotonic, never wraps in practice.
  alignas(64) std::atomic<uint64_t> next_index;
  // Records the writer refused without taking an index (FORMAT.md, "Loss").
  alignas(64) std::atomic<uint64_t> dropped;
};
static_assert(sizeof(RingControl) == kControlBlockSize, "two cache lines");

// The one layout writers produce and readers accept, from the three sizes.
inline constexpr uint64_t kLayoutAlignment = 4096;
inline constexpr uint64_t SlotsOffsetFor(uint32_t ring_count) {
  return (uint64_t{kHeaderSize} + uint64_t{ring_count} * kControlBlockSize +
          kLayoutAlignment - 1) /
         kLayoutAlignment * kLayoutAlignment;
}
inline constexpr uint64_t FileSizeFor(uint32_t ring_count,
                                      uint32_t slots_per_ring,
                                      uint32_t slot_size) {
  return SlotsOffsetFor(ring_count) +
         uint64_t{ring_count} * slots_per_ring * slot_size;
}

// sequence: 0 = never written; 2*i+1 = record index i being written;
// 2*i+2 = record index i committed. Slot for index i is i % slots_per_ring.
// type and payload_size form one 8-byte word, and the payload is a run of
// 8-byte words (the last one zero-padded): writers store and readers load
// them with relaxed 8-byte atomics, so a racing copy is well-defined and is
// caught by the sequence re-check.
struct SlotHeader {
  std::atomic<uint64_t> sequence;
  uint32_t type;          // RecordType
  uint32_t payload_size;  // bytes after this header, <= slot_size - 16
};
static_assert(sizeof(SlotHeader) == 16, "slot header is 16 bytes");

inline constexpr uint64_t kWritingSequence(uint64_t index) {
  return 2 * index + 1;
}
inline constexpr uint64_t kCommittedSequence(uint64_t index) {
  return 2 * index + 2;
}

enum class RecordType : uint32_t {
  kAllocSample = 1,       // AllocSample + frames
  kFreeSampled = 2,       // FreeSampled
  kCpuSample = 3,         // CpuSample + frames
  kModuleMap = 4,         // ModuleMap + path bytes
  kModuleUnmap = 5,       // ModuleUnmap
  kThreadName = 6,        // ThreadName + name bytes
  kLabel = 7,             // Label + key bytes + value bytes
  kLostSamples = 8,       // LostSamples
  kProcessEnd = 9,        // ProcessEnd
  kThreadExit = 10,       // ThreadExit
  kLiveSweepEnd = 11,     // LiveSweepEnd
  kLiveSample = 12,       // LiveSample + frames
  kTagSet = 13,           // TagSet + TagSizes[count] + key/value bytes
  kEnvironmentFact = 14,  // EnvironmentFact + detail bytes
  kWaitSample = 15,       // WaitSample + frames
};
// Readers skip (and count) record types above this they do not know.
inline constexpr uint32_t kMaxKnownRecordType = 15;
inline constexpr bool IsKnownRecordType(uint32_t type) {
  return type >= 1 && type <= kMaxKnownRecordType;
}

// Sample flags.
inline constexpr uint16_t kSampleTruncated = 1u << 0;  // deeper than captured
// A weight-0 AllocSample taken only so that busy threads have a sample near
// every tick; use it for tick picking, never in allocation profiles.
inline constexpr uint16_t kSampleTimingOnly = 1u << 1;
// A CpuSample taken at an allocation sample of the same thread instead of at
// a timer signal (written by earlier emitters only; readers still accept
// it); its stack is the allocation's and its weight the thread CPU time
// since the previous CpuSample, like any other.
inline constexpr uint16_t kSampleAtAllocation = 1u << 2;
// A CpuSample without frames for a thread the emitter could not sample
// (e.g. it started with the sampling signal blocked): its whole CPU time,
// recorded when it exits, so that profiles can show it instead of losing it.
inline constexpr uint16_t kSampleThreadNotSampled = 1u << 4;
// AllocSample: the emitter's live set was full, so this allocation's free
// will not be reported and it is never re-sent: not part of the in-use heap.
inline constexpr uint16_t kSampleUntracked = 1u << 3;

// Payloads: fixed part, then a variable tail. frames[0] is the leaf (the
// innermost return address); all frames are absolute instruction addresses.
struct AllocSample {
  uint64_t monotonic_ns;
  uint32_t tid;
  uint16_t frame_count;
  uint16_t flags;
  uint64_t requested_size;  // bytes the program asked for
  uint64_t weight_bytes;    // unbiased estimate of bytes this sample stands for
  uint64_t address;         // returned pointer, to match a later FreeSampled
  uint32_t tag_set;         // the thread's TagSet id then; 0 = no tags
  uint32_t reserved;
  uint64_t span_id;  // the thread's trace span then; 0 = none
  // uint64_t frames[frame_count];
};
static_assert(sizeof(AllocSample) == 56, "");

struct FreeSampled {
  uint64_t monotonic_ns;
  uint32_t tid;
  uint32_t reserved;
  uint64_t address;
};
static_assert(sizeof(FreeSampled) == 24, "");

struct CpuSample {
  uint64_t monotonic_ns;
  uint32_t tid;
  uint16_t frame_count;
  uint16_t flags;
  uint64_t cpu_period_ns;  // thread CPU time this sample stands for
  uint32_t tag_set;        // as in AllocSample
  uint32_t reserved;
  uint64_t span_id;
  // uint64_t frames[frame_count];
};
static_assert(sizeof(CpuSample) == 40, "");

inline constexpr uint32_t kMaxBuildIdSize = 32;
struct ModuleMap {
  uint64_t monotonic_ns;
  uint64_t start;        // first mapped address of the executable segment
  uint64_t size;         // bytes mapped
  uint64_t file_offset;  // file offset that `start` maps
  uint64_t load_bias;    // ELF load bias (dlpi_addr)
  uint8_t build_id_size;
  uint8_t reserved[5];
  uint16_t path_size;
  uint8_t build_id[kMaxBuildIdSize];
  // char path[path_size];  (not NUL-terminated)
};
static_assert(sizeof(ModuleMap) == 80, "");

struct ModuleUnmap {
  uint64_t monotonic_ns;
  uint64_t start;
  uint64_t size;
};
static_assert(sizeof(ModuleUnmap) == 24, "");

inline constexpr uint32_t kMaxThreadNameSize = 64;
struct ThreadName {
  uint64_t monotonic_ns;
  uint32_t tid;
  uint16_t name_size;
  uint16_t reserved;
  // char name[name_size];
};
static_assert(sizeof(ThreadName) == 16, "");

// Something about the process's environment that changes what its
// profiles can show (an older glibc, musl, a missing unwinder, a sample
// source switched off), which the emitter records instead of printing it
// (FORMAT.md §5.4). Written after the file's first ModuleMap records and
// again with their re-emissions; one record per fact.
enum class EnvironmentFactKind : uint16_t {
  kLibc = 1,                   // detail: "glibc 2.36", "musl"
  kNoDlFindObject = 2,         // detail: the glibc version ("2.31")
  kNoLibgcc = 3,               // libgcc_s.so.1 not found
  kMallocShadowed = 4,         // detail: the object whose malloc comes first
  kExitStatusUnknown = 5,      // no on_exit: ProcessEnd.exit_status is -1
  kCpuTimerOff = 6,            // detail: why
  kCpuTimerMissesThreads = 7,  // detail: what failed
};
inline constexpr uint16_t kMaxEnvironmentFactKind = 7;
inline constexpr uint32_t kMaxEnvironmentFactDetailSize = 128;
struct EnvironmentFact {
  uint64_t monotonic_ns;
  uint16_t kind;         // EnvironmentFactKind; readers keep unknown kinds
  uint16_t detail_size;  // <= kMaxEnvironmentFactDetailSize
  uint32_t reserved;
  // char detail[detail_size]; UTF-8, may be empty
};
static_assert(sizeof(EnvironmentFact) == 16, "");

// An EnvironmentFactKind's name ("no_dl_find_object") and what it means for
// the profiles, in one sentence; "unknown" and "" for a kind this header
// does not know. (The emitter prints them with RINGPROF_LOG=stderr.)
struct EnvironmentFactDescription {
  const char* name;
  const char* meaning;
};
inline constexpr EnvironmentFactDescription kEnvironmentFacts[] = {
    {"unknown", ""},
    {"libc", "the C library the process runs on"},
    {"no_dl_find_object",
     "glibc before 2.35 has no _dl_find_object: CPU-sample stacks stop at the "
     "first frame in a library loaded after start"},
    {"no_libgcc",
     "libgcc_s.so.1 not found: stacks through code the built-in unwinder "
     "cannot follow are cut short"},
    {"malloc_shadowed",
     "malloc comes from an object loaded before libringprof.so: allocations "
     "are not sampled (list libringprof.so first in LD_PRELOAD)"},
    {"exit_status_unknown",
     "the C library has no on_exit: the exit status is not recorded"},
    {"cpu_timer_off", "CPU-timer sampling is off"},
    {"cpu_timer_misses_threads", "CPU-timer sampling misses some threads"},
};
static_assert(sizeof(kEnvironmentFacts) / sizeof(kEnvironmentFacts[0]) ==
                  kMaxEnvironmentFactKind + 1,
              "one description per kind");
inline const EnvironmentFactDescription& DescribeEnvironmentFact(
    uint16_t kind) {
  return kEnvironmentFacts[kind <= kMaxEnvironmentFactKind ? kind : 0];
}

struct Label {
  uint64_t monotonic_ns;
  uint16_t key_size;
  uint16_t value_size;
  uint32_t reserved;
  // char key[key_size]; char value[value_size];
};
static_assert(sizeof(Label) == 16, "");

// Samples the emitter could not record (re-entrancy, failed unwind, ...)
// since its previous LostSamples record: counts and the allocation bytes
// they stood for, so profiles can show them as a "[lost]" frame.
struct LostSamples {
  uint64_t monotonic_ns;
  uint64_t samples;
  uint64_t weight_bytes;
};
static_assert(sizeof(LostSamples) == 24, "");

struct ProcessEnd {
  uint64_t monotonic_ns;
  int32_t exit_status;  // -1 when unknown
  uint32_t reserved;
};
static_assert(sizeof(ProcessEnd) == 16, "");

struct ThreadExit {
  uint64_t monotonic_ns;
  uint32_t tid;
  uint32_t reserved;
};
static_assert(sizeof(ThreadExit) == 16, "");

// In-use heap (FORMAT.md §5.1, "The live set"). The emitter keeps every
// tracked allocation sample until its free and re-sends the whole set in
// sweeps: one LiveSample per entry, then one LiveSweepEnd, spread over the
// rings; readers order them by timestamp.
struct LiveSample {
  uint64_t monotonic_ns;  // when the sweep copied the entry (still live then)
  uint64_t alloc_ns;      // monotonic_ns of the entry's AllocSample
  uint64_t sweep_id;      // the sweep this copy belongs to (>= 1)
  uint32_t tid;           // allocating thread
  uint16_t frame_count;
  uint16_t flags;  // the AllocSample's flags
  uint64_t requested_size;
  uint64_t weight_bytes;
  uint64_t address;
  // uint64_t frames[frame_count];  (the AllocSample's stack)
};
static_assert(sizeof(LiveSample) == 56, "");

struct LiveSweepEnd {
  uint64_t monotonic_ns;  // when the sweep ended
  uint64_t begin_ns;      // when it began (before the first entry was read)
  uint64_t sweep_id;
  // LiveSample records of this sweep the writer appended: a reader that
  // received exactly this many knows it saw the whole live set.
  uint64_t entries;
  // Allocation samples the live set could not hold since the process
  // started (flagged kSampleUntracked).
  uint64_t untracked;
};
static_assert(sizeof(LiveSweepEnd) == 40, "");

// Off-CPU time (FORMAT.md §5.3): one sampled wait of the thread, in a lock
// (kWaitLock: contention) or a blocking call (kWaitBlock). A wait of
// wait_ns was kept with probability min(1, wait_ns / sample_ns), so it
// stands for max(wait_ns, sample_ns) ns of waiting and for
// max(1, sample_ns / wait_ns) waits: both sums are unbiased estimates.
enum class WaitKind : uint16_t {
  kLock = 1,   // a contended mutex, rwlock or spin lock (profile "mutex")
  kBlock = 2,  // a call that blocked: condition, read, poll ... ("block")
};
struct WaitSample {
  uint64_t monotonic_ns;  // when the wait ended
  uint32_t tid;
  uint16_t frame_count;
  uint16_t flags;    // kSampleTruncated
  uint64_t wait_ns;  // how long the call waited (>= 1)
  // The sampling rate the wait was kept with (>= 1).
  uint64_t sample_ns;
  uint32_t tag_set;  // as in AllocSample
  uint16_t kind;     // WaitKind
  uint16_t reserved;
  uint64_t span_id;
  // uint64_t frames[frame_count];  (frames[0]: the interposed function)
};
static_assert(sizeof(WaitSample) == 48, "");

// The definition of tag set `id` of this process (FORMAT.md, "Tag sets"):
// `count` key/value pairs, outermost first, keys unique. Appended before the
// first sample of each ring that names the id, and again at most every few
// seconds while samples keep naming it, so a reader that lost one still
// learns it. Ids are never reused with other content within one file.
inline constexpr uint32_t kMaxTagsPerSet = 8;
inline constexpr uint32_t kMaxTagKeySize = 64;
inline constexpr uint32_t kMaxTagValueSize = 128;
struct TagSet {
  uint64_t monotonic_ns;
  uint32_t id;     // >= 1
  uint16_t count;  // <= kMaxTagsPerSet
  uint16_t reserved;
  // TagSizes sizes[count]; then, per pair in order, key bytes, value bytes.
};
static_assert(sizeof(TagSet) == 16, "");
struct TagSizes {
  uint16_t key_size;    // 1..kMaxTagKeySize
  uint16_t value_size;  // 0..kMaxTagValueSize
};
static_assert(sizeof(TagSizes) == 4, "");
// The largest TagSet payload.
inline constexpr uint32_t kMaxTagSetPayload =
    sizeof(TagSet) +
    kMaxTagsPerSet * (sizeof(TagSizes) + kMaxTagKeySize + kMaxTagValueSize);

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_FORMAT_H_
