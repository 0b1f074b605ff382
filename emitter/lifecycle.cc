// Process and thread lifecycle: the library constructor, exit, fork, and
// the pthread_create / pthread_setname_np wrappers.
//
//  - Start: a constructor starts the session (session.h), then the CPU
//    timer. Allocations before it are forwarded but not sampled.
//  - Exit: an on_exit handler (it receives the exit status) appends
//    ProcessEnd and marks the file ended. Registered first, it runs after
//    the program's own atexit handlers. musl has no on_exit: there a
//    __cxa_atexit handler does the same with the status unknown (-1).
//  - Threads: the pthread_create wrapper runs a trampoline in the new thread
//    that records its stack bounds (stack_capture.cc uses them), starts the
//    CPU timer and sets a pthread key whose destructor records ThreadExit
//    (it runs for return, pthread_exit and cancellation alike). The key and
//    the pthread functions it needs are set up by the first pthread_create:
//    a process that never starts a thread pays nothing for them, and before
//    glibc 2.34 they live in libpthread.so.0, which the library does not
//    load (loaded_symbols.h) and only a threaded program has.
//  - fork: a pthread_atfork child handler (glibc: __register_atfork, what
//    its static pthread_atfork stub calls; musl: pthread_atfork, looked up)
//    gives the child its own session
//    (its file is created by its first record) and re-arms the CPU timer.
//    Registered in the constructor, it runs before handlers the program
//    registers later. vfork and posix_spawn run no handlers and the emitter
//    does nothing in such a child: it shares the parent's memory and only
//    execs. exec: the new image loads libringprof.so again through the
//    inherited LD_PRELOAD and starts its own file (a new name, see
//    runtime.cc).
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>

#include "emitter/config.h"
#include "emitter/cpu_timer.h"
#include "emitter/environment_facts.h"
#include "emitter/libc_features.h"
#include "emitter/libc_imports.h"
#include "emitter/loaded_symbols.h"
#include "emitter/next_allocator.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "emitter/thread_events.h"
#include "emitter/thread_state.h"
#include "emitter/wait_next.h"
#include "emitter/wait_sampler.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace ringprof {
namespace emitter {
namespace {

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*,
                                void* (*)(void*), void*);
using PthreadSetnameFn = int (*)(pthread_t, const char*);

std::atomic<PthreadCreateFn> g_real_pthread_create{nullptr};
std::atomic<PthreadSetnameFn> g_real_pthread_setname{nullptr};

template <typename Fn>
Fn ResolveNext(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    ReentryGuard guard;  // nothing in the lookup is sampled
    fn = reinterpret_cast<Fn>(NextSymbol(name));
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

// What the thread hooks use of libpthread (libc's since glibc 2.34).
struct ThreadApi {
  int (*key_create)(pthread_key_t*, void (*)(void*));
  int (*setspecific)(pthread_key_t, const void*);
  int (*getattr_np)(pthread_t, pthread_attr_t*);
  int (*attr_getstack)(const pthread_attr_t*, void**, size_t*);
};
ThreadApi g_thread_api;
pthread_key_t g_thread_exit_key;

enum HooksState : int { kHooksUnset, kHooksSettingUp, kHooksReady, kHooksOff };
std::atomic<int> g_thread_hooks{kHooksUnset};

void OnThreadExit(void*);

void SetUpThreadHooks() {
  ReentryGuard guard;
  SymbolRequest requests[] = {
      {"pthread_key_create", SymbolScope::kFirst},
      {"pthread_setspecific", SymbolScope::kFirst},
      {"pthread_getattr_np", SymbolScope::kFirst},
      {"pthread_attr_getstack", SymbolScope::kFirst},
  };
  LookUpSymbols(requests, 4);
  ThreadApi& api = g_thread_api;
  api.key_create =
      reinterpret_cast<decltype(api.key_create)>(requests[0].address);
  api.setspecific =
      reinterpret_cast<decltype(api.setspecific)>(requests[1].address);
  api.getattr_np =
      reinterpret_cast<decltype(api.getattr_np)>(requests[2].address);
  api.attr_getstack =
      reinterpret_cast<decltype(api.attr_getstack)>(requests[3].address);
  const bool ready = api.key_create != nullptr && api.setspecific != nullptr &&
                     api.getattr_np != nullptr &&
                     api.attr_getstack != nullptr &&
                     api.key_create(&g_thread_exit_key, OnThreadExit) == 0;
  g_thread_hooks.store(ready ? kHooksReady : kHooksOff,
                       std::memory_order_release);
}

// Sets the hooks up on the first call (threads racing for it wait).
bool ThreadHooksReady() {
  int state = g_thread_hooks.load(std::memory_order_acquire);
  if (state == kHooksUnset &&
      g_thread_hooks.compare_exchange_strong(state, kHooksSettingUp,
                                             std::memory_order_acq_rel)) {
    SetUpThreadHooks();
    state = g_thread_hooks.load(std::memory_order_acquire);
  }
  while (state == kHooksSettingUp) {
    sched_yield();
    state = g_thread_hooks.load(std::memory_order_acquire);
  }
  return state == kHooksReady;
}

void OnThreadExit(void*) {
  RecordThreadExit();
  CpuTimerOnThreadExit();
}

void RecordThreadStack() {
  ReentryGuard guard;  // pthread_getattr_np may allocate
  pthread_attr_t attr;
  if (g_thread_api.getattr_np(pthread_self(), &attr) != 0) return;
  void* low = nullptr;
  size_t size = 0;
  if (g_thread_api.attr_getstack(&attr, &low, &size) == 0) {
    tls_thread_state.stack_low = reinterpret_cast<uintptr_t>(low);
    tls_thread_state.stack_high = reinterpret_cast<uintptr_t>(low) + size;
  }
  pthread_attr_destroy(&attr);
}

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
  int app_blocks_cpu_signal;  // the creator's, inherited like its mask
};

void* ThreadTrampoline(void* raw) {
  const ThreadStart start = *static_cast<ThreadStart*>(raw);
  g_next.free(raw);
  if (Enabled()) {
    RecordThreadStack();
    g_thread_api.setspecific(g_thread_exit_key, &g_thread_exit_key);
    CpuTimerOnThreadStart(start.app_blocks_cpu_signal);
  }
  return start.routine(start.arg);
}

void OnForkChild() {
  RestartSessionInForkChild();
  if (Enabled()) CpuTimerAfterForkChild();
}

void OnProcessExit(int status, void*) {
  // A process that never sampled has no timer worth stopping: its timers
  // and handler go with it, and an expiry from now on finds sampling off
  // (EndSession). Four system calls fewer for every short-lived process.
  if (RingFileOpen()) CpuTimerShutdown();
  EndSession(status);
}

void OnProcessExitStatusUnknown(void*) { OnProcessExit(-1, nullptr); }

extern "C" void* __dso_handle;
extern "C" int __cxa_atexit(void (*)(void*), void*, void*);

void RegisterExitAndForkHandlers() {
  if (__register_atfork != nullptr) {
    __register_atfork(nullptr, nullptr, OnForkChild, &__dso_handle);
  } else {
    using AtforkFn = int (*)(void (*)(), void (*)(), void (*)());
    const auto atfork =
        reinterpret_cast<AtforkFn>(NextSymbol("pthread_atfork"));
    if (atfork != nullptr) atfork(nullptr, nullptr, OnForkChild);
  }
  if (on_exit != nullptr) {
    on_exit(OnProcessExit, nullptr);
  } else {
    __cxa_atexit(OnProcessExitStatusUnknown, nullptr, &__dso_handle);
    NoteEnvironmentFact(ringfile::EnvironmentFactKind::kExitStatusUnknown,
                        nullptr);
  }
}

// With another allocator preloaded before libringprof.so, the program's
// malloc is that allocator's and never reaches the emitter: an environment
// fact.
void NoteIfMallocShadowed() {
  char path[256];
  if (!MallocShadowedBy(path, sizeof(path))) return;
  NoteEnvironmentFact(ringfile::EnvironmentFactKind::kMallocShadowed, path);
}

// The C library and each of its missing features that costs something
// (_dl_find_object only matters to CPU-timer samples): environment facts,
// never lines on stderr. Noted when the ring file is made (NoteStartupFacts).
void NoteLibcFacts() {
  const bool cpu_timer_running = GetCpuTimerStats().running;
  using ringfile::EnvironmentFactKind;
  const char* glibc = GlibcVersion();
  char libc[64] = "musl";
  if (glibc != nullptr) {
    const size_t n = strnlen(glibc, sizeof(libc) - 7);
    memcpy(libc, "glibc ", 6);
    memcpy(libc + 6, glibc, n);
    libc[6 + n] = '\0';
  }
  NoteEnvironmentFact(EnvironmentFactKind::kLibc, libc);
  if (!HaveDlFindObject() && cpu_timer_running && glibc != nullptr) {
    NoteEnvironmentFact(EnvironmentFactKind::kNoDlFindObject, glibc);
  }
  if (LibgccMissing()) {
    NoteEnvironmentFact(EnvironmentFactKind::kNoLibgcc, nullptr);
  }
}

__attribute__((constructor)) void StartEmitter() {
  NextReady();        // resolves the allocator table outside any malloc
  PrepareWaitNext();  // before anything that could call a wait function
  StartSession();
  if (!Enabled()) return;
  StartWaitProfiles(SessionConfig().mutex_sample_ns,
                    SessionConfig().block_sample_ns, OnGlibc());
  if (!TakeOverShadowedAllocator()) NoteIfMallocShadowed();
  RegisterExitAndForkHandlers();
  CpuTimerInit();
  if (GetCpuTimerStats().running) DisableTimingSamples();
  NoteStartupFacts(NoteLibcFacts);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

using ringprof::emitter::g_real_pthread_create;
using ringprof::emitter::g_real_pthread_setname;

RINGPROF_EXPORT int pthread_create(pthread_t* thread,
                                   const pthread_attr_t* attr,
                                   void* (*routine)(void*), void* arg) {
  namespace e = ringprof::emitter;
  const e::PthreadCreateFn real =
      e::ResolveNext(g_real_pthread_create, "pthread_create");
  if (real == nullptr) return EAGAIN;
  if (!e::Enabled() || !e::ThreadHooksReady()) {
    return real(thread, attr, routine, arg);
  }
  auto* start =
      static_cast<e::ThreadStart*>(e::g_next.malloc(sizeof(e::ThreadStart)));
  if (start == nullptr) return real(thread, attr, routine, arg);
  start->routine = routine;
  start->arg = arg;
  start->app_blocks_cpu_signal = e::CpuTimerAppBlocksSignal();
  const int result = real(thread, attr, e::ThreadTrampoline, start);
  if (result != 0) e::g_next.free(start);
  return result;
}

RINGPROF_EXPORT int pthread_setname_np(pthread_t thread, const char* name) {
  namespace e = ringprof::emitter;
  const e::PthreadSetnameFn real =
      e::ResolveNext(g_real_pthread_setname, "pthread_setname_np");
  if (real == nullptr) return ENOSYS;
  const int result = real(thread, name);
  if (result == 0) e::NoteThreadRenamed();
  return result;
}
