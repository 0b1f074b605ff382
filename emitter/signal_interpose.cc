// Interposed signal calls and frame registration (see CPU_TIMER.md), next
// to malloc_interpose.cc and exec_interpose.cc. They keep the CPU-timer
// sampler's signal invisible to the application and out of its way, through
// the sampler's interface in cpu_timer.h; with the sampler off every call
// passes straight through.
//
// Async-signal-safe where libc's originals are; no allocation (dlsym
// results are cached after the first call).
#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>

#include <atomic>

#include "emitter/cpu_timer.h"
#include "emitter/loaded_symbols.h"

// ---------------------------------------------------------------------------
// Interposed signal-disposition calls. While the sampler runs, the
// application must neither see nor replace our handler unnoticed: a query
// returns the disposition it had before us, and installing anything on our
// signal makes the sampler back off first (delete all timers, discard
// pending signals) so the application's handler never receives a sample
// signal. Every other signal passes straight through.

using ringprof::emitter::CpuTimerAppDisposition;
using ringprof::emitter::CpuTimerBackOff;
using ringprof::emitter::CpuTimerNextSigaction;
using ringprof::emitter::CpuTimerOwnsSignal;
using ringprof::emitter::CpuTimerSignal;

extern "C" int sigaction(int signo, const struct sigaction* action,
                         struct sigaction* old_action) noexcept {
  if (CpuTimerOwnsSignal(signo)) {
    if (action == nullptr) {
      if (old_action != nullptr) *old_action = CpuTimerAppDisposition();
      return 0;
    }
    CpuTimerBackOff(signo);
  }
  return CpuTimerNextSigaction(signo, action, old_action);
}

namespace {
template <typename Fn>
Fn NextFunction(std::atomic<Fn>* cache, const char* name) {
  Fn next = cache->load(std::memory_order_acquire);
  if (next == nullptr) {
    next = reinterpret_cast<Fn>(ringprof::emitter::NextSymbol(name));
    cache->store(next, std::memory_order_release);
  }
  return next;
}
}  // namespace

// signal() and its aliases do not go through the sigaction symbol in glibc.
#define RINGPROF_INTERPOSE_SIGNAL_FN(name)                                 \
  extern "C" sighandler_t name(int signo, sighandler_t handler) noexcept { \
    static std::atomic<sighandler_t (*)(int, sighandler_t)> next{};        \
    if (CpuTimerOwnsSignal(signo)) CpuTimerBackOff(signo);                 \
    auto fn = NextFunction(&next, #name);                                  \
    if (fn == nullptr) {                                                   \
      errno = ENOSYS;                                                      \
      return SIG_ERR;                                                      \
    }                                                                      \
    return fn(signo, handler);                                             \
  }

RINGPROF_INTERPOSE_SIGNAL_FN(signal)
RINGPROF_INTERPOSE_SIGNAL_FN(bsd_signal)
RINGPROF_INTERPOSE_SIGNAL_FN(sysv_signal)
RINGPROF_INTERPOSE_SIGNAL_FN(sigset)

#undef RINGPROF_INTERPOSE_SIGNAL_FN

// Waiting for signals. A thread that blocks every signal and waits for all
// of them (a sigwait thread, a signalfd over a full set) must not be handed
// a sample signal left pending by its timer: when the set holds every
// real-time signal, ours is taken out; it stays pending, unseen, and the
// timer counts overruns instead of queueing more. A set that names our
// signal but not all real-time signals means the application uses that
// signal itself (e.g. its own timer_create + sigwait): the sampler backs off
// and the call goes through unchanged.
namespace {
bool WithoutOurSignal(const sigset_t* set, sigset_t* stripped) {
  if (set == nullptr) return false;
  if (!ringprof::emitter::CpuTimerRunning()) return false;
  const int signo = CpuTimerSignal();
  if (sigismember(set, signo) != 1) return false;
  for (int rt = SIGRTMIN; rt <= SIGRTMAX; ++rt) {
    if (sigismember(set, rt) != 1) {
      CpuTimerBackOff(signo);
      return false;
    }
  }
  *stripped = *set;
  sigdelset(stripped, signo);
  return true;
}
}  // namespace

extern "C" int sigwait(const sigset_t* set, int* signo) {
  static std::atomic<int (*)(const sigset_t*, int*)> next{};
  auto fn = NextFunction(&next, "sigwait");
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  sigset_t stripped;
  return fn(WithoutOurSignal(set, &stripped) ? &stripped : set, signo);
}

extern "C" int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  static std::atomic<int (*)(const sigset_t*, siginfo_t*)> next{};
  auto fn = NextFunction(&next, "sigwaitinfo");
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  sigset_t stripped;
  return fn(WithoutOurSignal(set, &stripped) ? &stripped : set, info);
}

extern "C" int sigtimedwait(const sigset_t* set, siginfo_t* info,
                            const struct timespec* timeout) {
  static std::atomic<int (*)(const sigset_t*, siginfo_t*,
                             const struct timespec*)>
      next{};
  auto fn = NextFunction(&next, "sigtimedwait");
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  sigset_t stripped;
  return fn(WithoutOurSignal(set, &stripped) ? &stripped : set, info, timeout);
}

extern "C" int signalfd(int fd, const sigset_t* mask, int flags) noexcept {
  static std::atomic<int (*)(int, const sigset_t*, int)> next{};
  auto fn = NextFunction(&next, "signalfd");
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  sigset_t stripped;
  return fn(fd, WithoutOurSignal(mask, &stripped) ? &stripped : mask, flags);
}

// Frame registration (JITs, objects without .eh_frame_hdr): noted, then
// passed on to libgcc. The flag is never cleared: a deregistration may race
// with a sample, and one registration is enough to make libgcc lock.
#define RINGPROF_INTERPOSE_REGISTER_FN(name, params, args) \
  extern "C" void name params {                            \
    static std::atomic<void(*) params> next{};             \
    ringprof::emitter::CpuTimerNoteFramesRegistered();     \
    auto fn = NextFunction(&next, #name);                  \
    if (fn != nullptr) fn args;                            \
  }

RINGPROF_INTERPOSE_REGISTER_FN(__register_frame, (void* begin), (begin))
RINGPROF_INTERPOSE_REGISTER_FN(__register_frame_table, (void* begin), (begin))
RINGPROF_INTERPOSE_REGISTER_FN(__register_frame_info,
                               (const void* begin, void* object),
                               (begin, object))
RINGPROF_INTERPOSE_REGISTER_FN(__register_frame_info_table,
                               (void* begin, void* object), (begin, object))
RINGPROF_INTERPOSE_REGISTER_FN(__register_frame_info_bases,
                               (const void* begin, void* object, void* tbase,
                                void* dbase),
                               (begin, object, tbase, dbase))
RINGPROF_INTERPOSE_REGISTER_FN(__register_frame_info_table_bases,
                               (void* begin, void* object, void* tbase,
                                void* dbase),
                               (begin, object, tbase, dbase))

#undef RINGPROF_INTERPOSE_REGISTER_FN

// Signal masks. A thread that blocks every signal (worker threads of xz,
// thread pools that leave signals to one thread) would never take a sample.
// While the sampler runs, our signal is kept out of the masks the
// application sets, and put back into the masks it reads (the old set),
// per thread (t_app_blocks_signal): the application sees the mask it asked
// for. Instances of the signal that are not samples still reach it as if
// blocked (GiveBackBlockedInstance). Anything else passes through.
namespace {
// Returns the set to hand to the kernel: `set` itself, or `stripped`. Only
// a set that blocks every real-time signal ("block everything") is
// stripped; one that names our signal but not all of them means the
// application uses it (e.g. blocks it to sigwait for its own timer): the
// sampler backs off and the call goes through unchanged.
const sigset_t* MaskToPass(int how, const sigset_t* set, sigset_t* stripped) {
  using ringprof::emitter::CpuTimerSetAppBlocksSignal;
  const int signo = CpuTimerSignal();
  if (set == nullptr || !CpuTimerOwnsSignal(signo)) return set;
  const bool names = sigismember(set, signo) == 1;
  if (names && how != SIG_UNBLOCK &&
      !ringprof::emitter::CpuTimerHoldsEveryRealtimeSignal(set)) {
    CpuTimerBackOff(signo);
    return set;
  }
  switch (how) {
    case SIG_SETMASK:
      CpuTimerSetAppBlocksSignal(names ? 1 : 0);
      break;
    case SIG_BLOCK:
      if (names) CpuTimerSetAppBlocksSignal(1);
      break;
    case SIG_UNBLOCK:
      if (names) CpuTimerSetAppBlocksSignal(0);
      return set;
    default:
      return set;  // EINVAL from libc
  }
  if (!names) return set;
  *stripped = *set;
  sigdelset(stripped, signo);
  return stripped;
}

void ShowAppView(int had_view, sigset_t* old) {
  if (old != nullptr && had_view != 0 && CpuTimerOwnsSignal(CpuTimerSignal())) {
    sigaddset(old, CpuTimerSignal());
  }
}
}  // namespace

extern "C" int pthread_sigmask(int how, const sigset_t* set,
                               sigset_t* old) noexcept {
  static std::atomic<int (*)(int, const sigset_t*, sigset_t*)> next{};
  auto fn = NextFunction(&next, "pthread_sigmask");
  if (fn == nullptr) return ENOSYS;
  const int had_view = ringprof::emitter::CpuTimerAppBlocksSignal();
  sigset_t stripped;
  const int result = fn(how, MaskToPass(how, set, &stripped), old);
  if (result == 0) ShowAppView(had_view, old);
  return result;
}

extern "C" int sigprocmask(int how, const sigset_t* set,
                           sigset_t* old) noexcept {
  static std::atomic<int (*)(int, const sigset_t*, sigset_t*)> next{};
  auto fn = NextFunction(&next, "sigprocmask");
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int had_view = ringprof::emitter::CpuTimerAppBlocksSignal();
  sigset_t stripped;
  const int result = fn(how, MaskToPass(how, set, &stripped), old);
  if (result == 0) ShowAppView(had_view, old);
  return result;
}
