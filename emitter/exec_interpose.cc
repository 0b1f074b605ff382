// The exec family, wrapped so that a pending CPU-timer signal cannot kill
// the new image (see CpuTimerBeforeExec in cpu_timer.h).
//
// glibc's exec functions call its internal __execve directly, so each public
// entry point is wrapped on its own; the variadic execl* build their argv on
// the stack and go through the wrapped execv* ones. Nothing here allocates
// or takes a lock (each next definition is looked up on first call among
// the objects recorded at start), so a vfork child may call these safely.
// When the CPU timer is not running each wrapper is a plain forward.
#include <alloca.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "emitter/cpu_timer.h"
#include "emitter/loaded_symbols.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace ringprof {
namespace emitter {
namespace {

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using ExecveatFn = int (*)(int, const char*, char* const[], char* const[], int);

// The next definitions, each looked up on its first call (a process that
// never execs pays nothing), among the objects recorded at start: without
// the loader's lock and without allocating, so in a vfork child too (which
// stores what its parent would). Null until looked up; kMissing after a
// lookup that found nothing. Where the objects could not be recorded (more
// than kMaxStartObjects), all are looked up by the constructor instead: a
// lookup then takes the loader's lock, which a vfork child must not.
enum NextExecIndex : int {
  kExecve,
  kExecv,
  kExecvp,
  kExecvpe,
  kFexecve,
  kExecveat,
  kNextExecCount
};
constexpr const char* kNextExecNames[kNextExecCount] = {
    "execve", "execv", "execvp", "execvpe", "fexecve", "execveat"};
std::atomic<void*> g_next_exec[kNextExecCount];
void* const kMissing = reinterpret_cast<void*>(~uintptr_t{0});

void* ResolveNextExec(int index) {
  void* const address = NextSymbol(kNextExecNames[index]);
  void* const next = address != nullptr ? address : kMissing;
  g_next_exec[index].store(next, std::memory_order_release);
  return next;
}

template <typename Fn>
Fn NextExec(int index) {
  void* next = g_next_exec[index].load(std::memory_order_acquire);
  if (next == nullptr) next = ResolveNextExec(index);
  return next != kMissing ? reinterpret_cast<Fn>(next) : nullptr;
}

__attribute__((constructor)) void ResolveNextExecIfNotRecorded() {
  if (RecordStartObjects()) return;
  for (int i = 0; i < kNextExecCount; ++i) {
    ResolveNextExec(i);
  }
}

// Runs `exec` with the calling thread's CPU timer out of the way; exec only
// returns on failure, and then the timer is re-armed with errno kept.
template <typename Exec>
int WithTimerQuiesced(Exec exec) {
  const bool disarmed = CpuTimerBeforeExec();
  const int result = exec();
  if (disarmed) {
    const int saved_errno = errno;
    CpuTimerAfterFailedExec();
    errno = saved_errno;
  }
  return result;
}

int Missing() {
  errno = ENOSYS;
  return -1;
}

// Collects execl's NULL-terminated variadic arguments into `argv`, which
// has room for `count` + 1 pointers.
void CollectArgs(const char* first, va_list args, char** argv, int count) {
  argv[0] = const_cast<char*>(first);
  for (int i = 1; i <= count; ++i) argv[i] = va_arg(args, char*);
}

int CountArgs(const char* first, va_list args) {
  if (first == nullptr) return 0;
  int count = 1;
  while (va_arg(args, char*) != nullptr) ++count;
  return count;
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

namespace e = ringprof::emitter;

RINGPROF_EXPORT int execve(const char* path, char* const argv[],
                           char* const envp[]) {
  const auto next = e::NextExec<e::ExecveFn>(e::kExecve);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return next(path, argv, envp); });
}

RINGPROF_EXPORT int execv(const char* path, char* const argv[]) {
  const auto next = e::NextExec<e::ExecvFn>(e::kExecv);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return next(path, argv); });
}

RINGPROF_EXPORT int execvp(const char* file, char* const argv[]) {
  const auto next = e::NextExec<e::ExecvFn>(e::kExecvp);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return next(file, argv); });
}

RINGPROF_EXPORT int execvpe(const char* file, char* const argv[],
                            char* const envp[]) {
  const auto next = e::NextExec<e::ExecveFn>(e::kExecvpe);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return next(file, argv, envp); });
}

RINGPROF_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  const auto next = e::NextExec<e::FexecveFn>(e::kFexecve);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return next(fd, argv, envp); });
}

RINGPROF_EXPORT int execveat(int dirfd, const char* path, char* const argv[],
                             char* const envp[], int flags) {
  const auto next = e::NextExec<e::ExecveatFn>(e::kExecveat);
  if (next == nullptr) return e::Missing();
  return e::WithTimerQuiesced(
      [&] { return next(dirfd, path, argv, envp, flags); });
}

// The variadic forms: argv on the stack (alloca: no allocation, and a vfork
// child may run this), then the wrapped vector forms above.
#define RINGPROF_COLLECT_ARGV(first, argv)                               \
  va_list count_args;                                                    \
  va_start(count_args, first);                                           \
  const int argc = e::CountArgs(first, count_args);                      \
  va_end(count_args);                                                    \
  char** argv = static_cast<char**>(alloca((argc + 1) * sizeof(char*))); \
  va_list collect_args;                                                  \
  va_start(collect_args, first);                                         \
  e::CollectArgs(first, collect_args, argv, argc);

RINGPROF_EXPORT int execl(const char* path, const char* arg, ...) {
  RINGPROF_COLLECT_ARGV(arg, argv);
  va_end(collect_args);
  return execv(path, argv);
}

RINGPROF_EXPORT int execlp(const char* file, const char* arg, ...) {
  RINGPROF_COLLECT_ARGV(arg, argv);
  va_end(collect_args);
  return execvp(file, argv);
}

RINGPROF_EXPORT int execle(const char* path, const char* arg, ...) {
  RINGPROF_COLLECT_ARGV(arg, argv);
  char* const* envp = va_arg(collect_args, char* const*);
  va_end(collect_args);
  return execve(path, argv, envp);
}

#undef RINGPROF_COLLECT_ARGV
