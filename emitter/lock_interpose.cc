// Lock contention (the "mutex" profile, wait_sampler.h): pthread mutexes,
// read-write locks and spin locks, and so std::mutex, std::shared_mutex
// and std::timed_mutex, whose inline code calls these through the PLT.
//
// Only a contended acquisition is timed. On glibc the wrapper peeks at the
// lock word (a relaxed load; glibc's layout: a mutex's __lock, a rwlock's
// __readers, the spin lock's int, all at offset 0) and forwards at once when
// it looks free; when it looks taken, it times the real lock function. The
// peek changes nothing (the real function decides, on the same state) and
// costs one load; a lock taken between the peek and the real function's
// atomic is waited for untimed, one released in between is timed for the
// few nanoseconds it took (weighted by that: unbiased delay). On other C
// libraries (musl: another layout) the wrapper tries the matching trylock
// first, which glibc's lock function would answer the same for that state
// (0, EOWNERDEAD, EAGAIN, EINVAL, ENOTRECOVERABLE returned as is; EBUSY:
// taken, so the real lock function is timed, and gives EDEADLK for an
// error-checking mutex the thread owns as it would); the timed forms are
// tried first only with a deadline the C library accepts (glibc checks the
// clock and deadline before trying, EINVAL even for a free lock).
// Robust, error-checking, recursive, priority-inheritance and
// process-shared mutexes take their own paths inside the C library. None of
// these is a cancellation point. With the profile off each wrapper is a jump
// to the real function.
#include <errno.h>
#include <pthread.h>

#include "emitter/wait_next.h"
#include "emitter/wait_sampler.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ringprof::emitter::g_wait_next;
using ringprof::emitter::SampleWait;
using ringprof::emitter::WaitClock;
using ringprof::emitter::WaitNext;
using ringprof::emitter::WaitProfileOn;
using ringprof::ringfile::WaitKind;

inline bool LockProfileOn() { return WaitProfileOn(WaitKind::kLock); }

// glibc's lock words (see above): whether the lock looks free for this
// acquisition.
inline uint32_t LockWord(const volatile void* lock) {
  return __atomic_load_n(static_cast<const volatile uint32_t*>(lock),
                         __ATOMIC_RELAXED);
}
// A mutex's __lock (a PI or robust mutex: the owner's tid; a
// priority-protected one also holds its ceiling, so it always looks taken).
inline bool MutexLooksFree(const volatile void* lock) {
  return LockWord(lock) == 0;
}
// A rwlock's __readers: bit 1 write-locked, readers from bit 3.
inline bool ReadLooksFree(const volatile void* lock) {
  return (LockWord(lock) & 2u) == 0;
}
inline bool WriteLooksFree(const volatile void* lock) {
  return (LockWord(lock) & ~1u) == 0;  // only the write-phase bit
}

// glibc checks the clock and the deadline of the timed functions before it
// tries the lock (EINVAL even for a free lock): with anything it would
// refuse, the wrapper does not try first.
inline bool ValidDeadline(clockid_t clock, const struct timespec* when) {
  return (clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC) &&
         when != nullptr && when->tv_nsec >= 0 && when->tv_nsec < 1000000000;
}

// The contended path, apart so that the uncontended one needs no stack
// frame: times the lock function (the table entry `Next`) and samples the
// wait.
template <auto Next, typename... Args>
__attribute__((noinline)) int TimedLock(Args... args) {
  const uint64_t start = WaitClock();
  const int result = (g_wait_next.*Next)(args...);
  SampleWait(WaitKind::kLock, start);
  return result;
}

}  // namespace

// The wrappers share one shape: off → forward; on glibc, looks free →
// forward, else timed; elsewhere trylock, EBUSY → timed.
#define RINGPROF_LOCK_WRAPPER(name, trylock, looks_free, params, args, \
                              may_try)                                 \
  RINGPROF_EXPORT int name params noexcept {                           \
    if (!LockProfileOn()) return g_wait_next.name args;                \
    if (__builtin_expect(ringprof::emitter::g_glibc_lock_words, 1)) {  \
      if (looks_free(lock)) return g_wait_next.name args;              \
      return TimedLock<&WaitNext::name> args;                          \
    }                                                                  \
    if (!(may_try)) return g_wait_next.name args;                      \
    const int tried = g_wait_next.trylock(lock);                       \
    if (__builtin_expect(tried != EBUSY, 1)) return tried;             \
    return TimedLock<&WaitNext::name> args;                            \
  }

RINGPROF_LOCK_WRAPPER(pthread_mutex_lock, pthread_mutex_trylock, MutexLooksFree,
                      (pthread_mutex_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_mutex_timedlock, pthread_mutex_trylock,
                      MutexLooksFree,
                      (pthread_mutex_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_mutex_clocklock, pthread_mutex_trylock,
                      MutexLooksFree,
                      (pthread_mutex_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock,
                      ReadLooksFree, (pthread_rwlock_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock,
                      ReadLooksFree,
                      (pthread_rwlock_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_clockrdlock, pthread_rwlock_tryrdlock,
                      ReadLooksFree,
                      (pthread_rwlock_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_wrlock, pthread_rwlock_trywrlock,
                      WriteLooksFree, (pthread_rwlock_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock,
                      WriteLooksFree,
                      (pthread_rwlock_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_clockwrlock, pthread_rwlock_trywrlock,
                      WriteLooksFree,
                      (pthread_rwlock_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_spin_lock, pthread_spin_trylock, MutexLooksFree,
                      (pthread_spinlock_t * lock), (lock), true)

#undef RINGPROF_LOCK_WRAPPER
