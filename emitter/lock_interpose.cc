// Lock contention (the "mutex" profile, wait_sampler.h): pthread mutexes,
// read-write locks and spin locks, and so std::mutex, std::shared_mutex
// and std::timed_mutex, whose inline code calls these through the PLT.
//
// Each wrapper first tries the lock (the matching trylock: the same atomic
// the lock function starts with); only when it is taken (EBUSY) is the
// wait timed around the real lock function. Every other result of the
// trylock is the lock function's own for that state, and is returned
// as is: 0 (acquired; a recursive mutex's count raised), EOWNERDEAD
// (robust mutex, acquired), EAGAIN (recursion or reader count at its
// limit), EINVAL, ENOTRECOVERABLE. An error-checking mutex the thread owns
// gives EBUSY, and the lock function then returns EDEADLK as it would.
// Priority-inheritance, priority-protected and process-shared mutexes
// take the same paths inside glibc. None of these is a cancellation point.
// With the profile off each wrapper is a jump to the real function.
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

// The wrappers share one shape: off → forward; trylock; EBUSY → timed.
#define RINGPROF_LOCK_WRAPPER(name, trylock, params, args, may_try)   \
  RINGPROF_EXPORT int name params noexcept {                          \
    if (!LockProfileOn() || !(may_try)) return g_wait_next.name args; \
    const int tried = g_wait_next.trylock(lock);                      \
    if (__builtin_expect(tried != EBUSY, 1)) return tried;            \
    return TimedLock<&WaitNext::name> args;                           \
  }

RINGPROF_LOCK_WRAPPER(pthread_mutex_lock, pthread_mutex_trylock,
                      (pthread_mutex_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_mutex_timedlock, pthread_mutex_trylock,
                      (pthread_mutex_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_mutex_clocklock, pthread_mutex_trylock,
                      (pthread_mutex_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock,
                      (pthread_rwlock_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock,
                      (pthread_rwlock_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_clockrdlock, pthread_rwlock_tryrdlock,
                      (pthread_rwlock_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_wrlock, pthread_rwlock_trywrlock,
                      (pthread_rwlock_t * lock), (lock), true)
RINGPROF_LOCK_WRAPPER(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock,
                      (pthread_rwlock_t * lock, const struct timespec* when),
                      (lock, when), ValidDeadline(CLOCK_REALTIME, when))
RINGPROF_LOCK_WRAPPER(pthread_rwlock_clockwrlock, pthread_rwlock_trywrlock,
                      (pthread_rwlock_t * lock, clockid_t clock,
                       const struct timespec* when),
                      (lock, clock, when), ValidDeadline(clock, when))
RINGPROF_LOCK_WRAPPER(pthread_spin_lock, pthread_spin_trylock,
                      (pthread_spinlock_t * lock), (lock), true)

#undef RINGPROF_LOCK_WRAPPER
