// The exec family, wrapped so that a pending CPU-timer signal cannot kill
// the new image (see CpuTimerBeforeExec in cpu_timer.h).
//
// glibc's exec functions call its internal __execve directly, so each public
// entry point is wrapped on its own; the variadic execl* build their argv on
// the stack and go through the wrapped execv* ones. Nothing here allocates
// once the constructor has resolved the next symbols, so a vfork child may
// call these safely. When the CPU timer is not running each wrapper is a
// plain forward.
#include <alloca.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include <atomic>

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

struct NextExec {
  ExecveFn execve;
  ExecvFn execv;
  ExecvFn execvp;
  ExecveFn execvpe;
  FexecveFn fexecve;
  ExecveatFn execveat;
};
NextExec g_next;

__attribute__((constructor)) void ResolveNextExec() {
  SymbolRequest requests[] = {
      {"execve", SymbolScope::kNext},  {"execv", SymbolScope::kNext},
      {"execvp", SymbolScope::kNext},  {"execvpe", SymbolScope::kNext},
      {"fexecve", SymbolScope::kNext}, {"execveat", SymbolScope::kNext},
  };
  LookUpSymbolsAtStart(requests, sizeof(requests) / sizeof(requests[0]));
  g_next.execve = reinterpret_cast<ExecveFn>(requests[0].address);
  g_next.execv = reinterpret_cast<ExecvFn>(requests[1].address);
  g_next.execvp = reinterpret_cast<ExecvFn>(requests[2].address);
  g_next.execvpe = reinterpret_cast<ExecveFn>(requests[3].address);
  g_next.fexecve = reinterpret_cast<FexecveFn>(requests[4].address);
  g_next.execveat = reinterpret_cast<ExecveatFn>(requests[5].address);
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
  if (e::g_next.execve == nullptr) return e::Missing();
  return e::WithTimerQuiesced(
      [&] { return e::g_next.execve(path, argv, envp); });
}

RINGPROF_EXPORT int execv(const char* path, char* const argv[]) {
  if (e::g_next.execv == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return e::g_next.execv(path, argv); });
}

RINGPROF_EXPORT int execvp(const char* file, char* const argv[]) {
  if (e::g_next.execvp == nullptr) return e::Missing();
  return e::WithTimerQuiesced([&] { return e::g_next.execvp(file, argv); });
}

RINGPROF_EXPORT int execvpe(const char* file, char* const argv[],
                            char* const envp[]) {
  if (e::g_next.execvpe == nullptr) return e::Missing();
  return e::WithTimerQuiesced(
      [&] { return e::g_next.execvpe(file, argv, envp); });
}

RINGPROF_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (e::g_next.fexecve == nullptr) return e::Missing();
  return e::WithTimerQuiesced(
      [&] { return e::g_next.fexecve(fd, argv, envp); });
}

RINGPROF_EXPORT int execveat(int dirfd, const char* path, char* const argv[],
                             char* const envp[], int flags) {
  if (e::g_next.execveat == nullptr) return e::Missing();
  return e::WithTimerQuiesced(
      [&] { return e::g_next.execveat(dirfd, path, argv, envp, flags); });
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
