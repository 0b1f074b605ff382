// The emitter's internal services shared by its sample sources (allocation
// sampler, CPU-timer sampler). Implemented in emitter/runtime.cc, and
// CaptureStack in emitter/stack_capture.cc.
//
// Every function here is async-signal-safe, allocation-free and lock-free,
// and does nothing (returns false / 0) while the emitter is disabled.
#ifndef RINGPROF_EMITTER_RUNTIME_H_
#define RINGPROF_EMITTER_RUNTIME_H_

#include <cstdint>

#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

// True once the session started and the emitter has not switched itself
// off (in a fork child, also before its file exists: the first record
// creates it).
bool Enabled();

// True once this process's ring file exists (Enabled() is also true before,
// while the file is pending). Records appended before are dropped when
// another thread is creating the file.
bool RingFileOpen();

// Appends one record to this process's ring file (see RingWriter::TryAppend).
bool AppendRecord(ringfile::RecordType type, const void* head,
                  uint32_t head_size, const void* tail, uint32_t tail_size);

// The same into ring `shard mod ring count` instead of the calling thread's
// (live-set sweeps spread their records over every ring).
bool AppendRecordInRing(uint32_t shard, ringfile::RecordType type,
                        const void* head, uint32_t head_size, const void* tail,
                        uint32_t tail_size);

// Starts loading the slot the calling thread's next AppendRecord will take
// into the cache (RingWriter::PrefetchNextSlot): the sampled paths call it
// before walking the stack.
void PrefetchRecordSlot();

// The calling thread's kernel tid, cached in initial-exec TLS.
uint32_t CurrentTid();

// CLOCK_MONOTONIC in nanoseconds, without a system call where reading the
// clock would be one (gVisor): see sample_clock.h.
uint64_t MonotonicNowNs();

// Captures the calling thread's return addresses, innermost first, skipping
// `skip` innermost frames of the emitter itself (CaptureStack's own frame is
// never included: skip = 0 makes its caller frames[0]). Works through code
// built without frame pointers (DWARF CFI; see stack_capture.cc for the two
// walkers and what glibc < 2.35 costs). Never reads outside the thread's
// stack; also usable from a signal handler, where it unwinds through the
// signal frame into the interrupted code.
// Returns the number of frames written; *truncated is set when the stack
// was deeper than max_frames.
int CaptureStack(uint64_t* frames, int max_frames, int skip, bool* truncated);

// Rings of the file; a thread's records all go to ring tid % this.
inline constexpr uint32_t kRingFileRings = 4;

// For a sample the calling thread is about to append at `now_ns`: its
// application tag-set id (0 = none; the set's TagSet record is appended
// first when the thread's ring may lack it) and trace span id (0 = none).
// See tags.h.
struct SampleTags {
  uint32_t tag_set;
  uint64_t span_id;
};
SampleTags TagsForSample(uint64_t now_ns);

// Configured maximum stack depth (RINGPROF_MAX_FRAMES).
int MaxFrames();

// For a sample about to be appended (a CPU sample, in its signal handler):
// records in the module map the objects its stack runs in that it does not
// know yet, where that takes no lock (with _dl_find_object; without it they
// are left to an allocation sample's rescan, module_map.h).
void NoteSampleModules(const uint64_t* frames, int frame_count);

// After a sample was appended (a CPU sample, in its signal handler): the
// module map's re-recording when it is due (MaybeReemitModules: the early
// and periodic copies, or the copy a file creation that found the table
// busy left to do), with the environment facts; only where that takes no
// lock (with _dl_find_object), as NoteSampleModules.
void MaybeReemitSampleModules(uint64_t now_ns);

// Whether reading CLOCK_MONOTONIC left user space when measured at start
// (a system call: gVisor, and hosts whose vDSO cannot read the clock), i.e.
// whether system calls and signals are the expensive round trips a sandbox
// makes them.
bool ClockReadIsSystemCall();

// Records a fact about the process's environment (FORMAT.md §5.4) instead
// of printing it: `detail` may be null, is truncated to 128 bytes; the same
// kind and detail noted again is ignored. Written at once when the ring file
// exists, otherwise when it is created (environment_facts.h).
void NoteEnvironmentFact(ringfile::EnvironmentFactKind kind,
                         const char* detail);

// Slots of all rings of this process's file (0 before it exists).
uint32_t RingSlots();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_RUNTIME_H_
