// The emitter's process-wide session: configuration, the ring file, and the
// lifecycle transitions the interposed entry points drive.
//
// Contract: StartSession runs once from the library constructor (outside
// malloc); RestartSessionInForkChild runs in the only thread of a fork
// child; EndSession runs at exit. None of them may be called concurrently
// with each other. The accessors are lock-free and signal-safe.
#ifndef RINGPROF_EMITTER_SESSION_H_
#define RINGPROF_EMITTER_SESSION_H_

#include <cstdint>

#include "emitter/config.h"
#include "emitter/sampler.h"

namespace ringprof {
namespace emitter {

// Reads the configuration and records the module table. The ring file is
// created by the first sample (in malloc or a signal handler: creation is
// system calls only), which first writes the module map into it; a process
// that never samples creates no file. On any failure the emitter switches
// itself off (one line on stderr).
void StartSession();

// Creates the ring file now if it is still pending: before the process
// gives up the privileges it needs to create it (setuid & co., chroot).
void CreatePendingRing();

// Appends ProcessEnd, marks the file ended and switches sampling off. The
// mapping stays (other threads may still be appending).
void EndSession(int exit_status);

// After fork, in the child: stops writing to the parent's ring file and
// resets the calling thread's TLS. The child's own file is created by its
// first record (AppendRecord, possibly inside malloc or a signal handler:
// creation is syscalls only), which unmaps the child's view of the parent's
// file and re-records the module map first; a child that only execs creates
// no file and unmaps nothing (exec does).
void RestartSessionInForkChild();

const Config& SessionConfig();
// The main executable's real path (/proc/self/exe, read on the first call:
// the ring file's creation), "" if unknown.
const char* ExecutablePath();
const SamplerParams& SessionSamplerParams();

// Stops timing samples (RINGPROF_MIN_SAMPLES_PER_SEC): once the CPU timer
// runs, the collector builds process_cpu from timer samples only, so timing
// samples would be pure overhead. Only from the library constructor, before
// other threads can read the sampler parameters.
void DisableTimingSamples();

// Samples the emitter could not record (re-entrancy, capture failure); they
// are reported in a LostSamples record by the next FlushLostSamples.
void CountLostSample(uint64_t weight_bytes);
void FlushLostSamples();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SESSION_H_
