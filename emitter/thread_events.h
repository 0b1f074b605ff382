// Thread names and thread exits in the ring file.
//
// Names: a thread's name is recorded (ThreadName) with its first sample and
// again with its first sample after any thread of the process was renamed
// (pthread_setname_np bumps a process-wide generation; the emitter cannot
// cheaply tell which thread was renamed, so every thread re-reads its own
// name with one prctl(PR_GET_NAME) on its next sample).
//
// All functions are allocation-free and async-signal-safe; they append
// nothing while the emitter is disabled.
#ifndef RINGPROF_EMITTER_THREAD_EVENTS_H_
#define RINGPROF_EMITTER_THREAD_EVENTS_H_

namespace ringprof {
namespace emitter {

// From the sampled path of the calling thread.
void RecordThreadNameIfChanged();

// After a successful pthread_setname_np / prctl(PR_SET_NAME).
void NoteThreadRenamed();

// The calling thread is exiting.
void RecordThreadExit();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_THREAD_EVENTS_H_
