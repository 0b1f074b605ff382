// The CPU-timer sample source: a per-thread CLOCK_THREAD_CPUTIME_ID timer
// (timer_create + SIGEV_THREAD_ID) whose signal handler captures the stack
// and appends a CpuSample worth the thread CPU time since its previous
// sample. Works in gVisor, where perf_event_open does not. Implemented in
// emitter/cpu_timer.cc; user-visible behaviour in emitter/CPU_TIMER.md.
//
// Contract:
//  - The emitter's lifecycle code calls the functions below at the matching
//    moments; each is a no-op when the sampler is not running
//    (RINGPROF_CPU_HZ=0, the emitter disabled, the signal taken by the
//    application, or after CpuTimerShutdown).
//  - Thread-safe: any thread, concurrently. None allocates. OnThreadStart,
//    OnThreadExit, AfterForkChild and Shutdown are async-signal-safe;
//    Init is not (getenv, dladdr, dl_iterate_phdr).
//  - The signal handler never allocates, never locks, preserves errno.
//  - signal_interpose.cc defines (and libringprof.map exports) interposers
//    of sigaction, signal, bsd_signal, sysv_signal, sigset, sigwait,
//    sigwaitinfo, sigtimedwait, signalfd, pthread_sigmask, sigprocmask and
//    __register_frame*: they hide the sampler's handler and make it back off
//    when the application takes its signal; they pass every other call
//    through unchanged.
#ifndef RINGPROF_EMITTER_CPU_TIMER_H_
#define RINGPROF_EMITTER_CPU_TIMER_H_

#include <signal.h>

#include <cstdint>

namespace ringprof {
namespace emitter {

// Once, after the ring file exists (not inside malloc). Reads its own
// environment variables; reports a bad value on stderr once.
void CpuTimerInit();
// In every new thread before it runs user code (from the pthread_create
// wrapper), with the creating thread's CpuTimerAppBlocksSignal() (the mask
// a thread starts with is its creator's).
void CpuTimerOnThreadStart(int app_blocks_signal);
// Whether the application set the calling thread's mask to block the
// sampler's signal (which the sampler keeps unblocked for real).
int CpuTimerAppBlocksSignal();
// When a thread exits (deletes its timer).
void CpuTimerOnThreadExit();
// In the child after fork (timers are not inherited; re-arm for the
// surviving thread once the child's ring file exists).
void CpuTimerAfterForkChild();
// At process exit or when the emitter switches itself off: no timer or
// handler is left behind.
void CpuTimerShutdown();

// Around exec (emitter/exec_interpose.cc). exec resets our handler to
// SIG_DFL but keeps the calling thread's pending signals, and a real-time
// signal's default action terminates: a sample signal pending at that moment
// would kill the new image. BeforeExec deletes the calling thread's timer and
// drains its pending sample signal; it returns whether it did, and then
// AfterFailedExec re-arms the timer if exec returned. Async-signal-safe (a
// vfork child may call them; they do nothing outside the timers' process).
bool CpuTimerBeforeExec();
void CpuTimerAfterFailedExec();

// Counters for tests and diagnostics (relaxed reads; any thread).
struct CpuTimerStats {
  bool running = false;    // handler installed, timers being armed
  int signal = 0;          // the configured signal number
  uint64_t period_ns = 0;  // timer period (1e9 / RINGPROF_CPU_HZ)
  uint64_t samples_recorded = 0;
  uint64_t samples_dropped = 0;  // AppendRecord refused them
  uint64_t samples_pc_only = 0;  // stack reduced to the interrupted pc
  uint64_t threads_armed = 0;
  uint64_t threads_skipped = 0;  // no mask, no slot, or timer_create failed
  // Instances of the signal that were not samples, put back for a thread
  // that (in the application's view) blocks it.
  uint64_t instances_given_back = 0;
};
CpuTimerStats GetCpuTimerStats();

// For the interposers in signal_interpose.cc. Async-signal-safe,
// allocation-free.
//
// Whether the sampler runs, on signal `signo`.
bool CpuTimerOwnsSignal(int signo);
bool CpuTimerRunning();
int CpuTimerSignal();
// The application takes the sampler's signal: sampling stops for good.
void CpuTimerBackOff(int signo);
// The disposition the application had before the sampler's handler.
const struct sigaction& CpuTimerAppDisposition();
// libc's sigaction, past the interposer.
int CpuTimerNextSigaction(int signo, const struct sigaction* action,
                          struct sigaction* old_action);
// Code was registered with __register_frame*: libgcc's unwinder may lock.
void CpuTimerNoteFramesRegistered();
// The calling thread's application view of the sampler's signal in its mask
// (read with CpuTimerAppBlocksSignal).
void CpuTimerSetAppBlocksSignal(int blocks);
bool CpuTimerHoldsEveryRealtimeSignal(const sigset_t* set);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_CPU_TIMER_H_
