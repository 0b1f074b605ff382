#include "ringfile/guarded_memory.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace ringprof {
namespace ringfile {
namespace {

struct Guard {
  sigjmp_buf env;
  uintptr_t begin;
  uintptr_t end;
};

// initial-exec: the handler must not call into the TLS resolver.
__thread Guard* t_guard __attribute__((tls_model("initial-exec"))) = nullptr;

struct sigaction g_previous;
std::atomic<uint64_t> g_faults{0};

void OnSigbus(int sig, siginfo_t* info, void* context) {
  Guard* guard = t_guard;
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  if (guard != nullptr && address >= guard->begin && address < guard->end) {
    t_guard = nullptr;
    g_faults.fetch_add(1, std::memory_order_relaxed);
    // sigsetjmp(env, 0): no sigprocmask call on every guarded read.
    siglongjmp(guard->env, 1);
  }
  // Not ours: behave as if we had never been installed.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: returning re-executes the faulting load, which now
  // takes the default (fatal) disposition.
  signal(SIGBUS, SIG_DFL);
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &g_previous);
  });
}

// Kept out of line so that nothing of the caller's frame lives across the
// sigsetjmp; `volatile` where a value must survive a siglongjmp.
__attribute__((noinline)) bool RunGuarded(Guard* guard, void (*fn)(void*),
                                          void* arg) {
  if (sigsetjmp(guard->env, 0) != 0) {
    // t_guard was reset by the handler. SA_NODEFER keeps SIGBUS unblocked,
    // but a sanitizer's handler wrapper may block it around ours: unblock it
    // here (the rare path) rather than save the mask on every call.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    return false;
  }
  t_guard = guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fn(arg);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = nullptr;
  return true;
}

struct CopyArgs {
  void* dst;
  const void* src;
  size_t size;
};

// Not memcpy: a fault inside a sanitizer's memcpy interceptor is not
// delivered to our handler (ThreadSanitizer), and the loads must be ones the
// compiler cannot merge into a libc call. Relaxed atomic loads: the source
// may be written concurrently by another process.
void DoCopy(void* p) {
  const CopyArgs* a = static_cast<const CopyArgs*>(p);
  const uint8_t* src = static_cast<const uint8_t*>(a->src);
  uint8_t* dst = static_cast<uint8_t*>(a->dst);
  size_t n = a->size;
  while (n > 0 && reinterpret_cast<uintptr_t>(src) % 8 != 0) {
    *dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
    --n;
  }
  for (; n >= 8; n -= 8, src += 8, dst += 8) {
    const uint64_t word = __atomic_load_n(
        reinterpret_cast<const uint64_t*>(src), __ATOMIC_RELAXED);
    memcpy(dst, &word, 8);  // to our own memory: a plain store
  }
  while (n-- > 0) *dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
}

template <typename T>
struct LoadArgs {
  const T* word;
  T value;
};

template <typename T>
void DoLoad(void* p) {
  LoadArgs<T>* a = static_cast<LoadArgs<T>*>(p);
  a->value = __atomic_load_n(a->word, __ATOMIC_ACQUIRE);
}

template <typename T>
bool Load(const T* word, T* out) {
  LoadArgs<T> args{word, 0};
  if (!GuardedCall(word, sizeof(T), DoLoad<T>, &args)) return false;
  *out = args.value;
  return true;
}

}  // namespace

bool GuardedCall(const void* begin, size_t size, void (*fn)(void*), void* arg) {
  InstallOnce();
  Guard guard;
  guard.begin = reinterpret_cast<uintptr_t>(begin);
  guard.end = guard.begin + size;
  Guard* const previous = t_guard;  // restored: guards do not nest
  const bool ok = RunGuarded(&guard, fn, arg);
  t_guard = previous;
  return ok;
}

bool GuardedCopy(void* dst, const void* src, size_t size) {
  CopyArgs args{dst, src, size};
  return GuardedCall(src, size, DoCopy, &args);
}

bool GuardedLoadAcquire(const uint64_t* word, uint64_t* out) {
  return Load(word, out);
}
bool GuardedLoadAcquire(const uint32_t* word, uint32_t* out) {
  return Load(word, out);
}

uint64_t GuardedFaults() { return g_faults.load(std::memory_order_relaxed); }

}  // namespace ringfile
}  // namespace ringprof
