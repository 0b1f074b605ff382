// Blocking calls (the "block" profile, wait_sampler.h): how long a thread
// waited in a call that can block, timed only where it can:
//  - always: condition waits, pthread_join, nanosleep, clock_nanosleep,
//    wait (they wait by design);
//  - sem_wait: only when the semaphore is not available at once
//    (sem_trywait first, after the cancellation check sem_wait starts with);
//  - poll, ppoll, select, pselect, epoll_wait, epoll_pwait: unless the
//    timeout is zero; waitpid, wait4: unless WNOHANG;
//  - read, readv, pread, write, writev, accept, accept4, connect, recv*,
//    send*: only on a descriptor that may block (fd_class.h: a blocking
//    pipe, socket or terminal; never a regular file), and for recv*/send*
//    unless MSG_DONTWAIT. A read of cached file data costs one table load.
// Every wrapper calls the real function with the same arguments and
// returns its result with its errno, so cancellation points stay
// cancellation points (a thread cancelled inside unwinds through the
// wrapper, which records nothing then) and EINTR/SA_RESTART are the
// kernel's as before. With the profile off each wrapper only forwards.
// close, dup2, dup3, dup, fclose, pclose, closedir, pipe, pipe2, socket,
// socketpair, accept and accept4 also forget the kinds of the descriptor
// numbers they close or hand out (fd_class.h).
#undef _FORTIFY_SOURCE  // fortified headers define read() & co. inline
#include <errno.h>

#include "emitter/fd_class.h"
#include "emitter/wait_next.h"
#include "emitter/wait_sampler.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ringprof::emitter::CachedFdClass;
using ringprof::emitter::FdClass;
using ringprof::emitter::FdMayBlock;
using ringprof::emitter::ForgetFd;
using ringprof::emitter::g_wait_next;
using ringprof::emitter::kFdNeverWaits;
using ringprof::emitter::SampleWait;
using ringprof::emitter::WaitClock;
using ringprof::emitter::WaitNext;
using ringprof::emitter::WaitProfileOn;
using ringprof::ringfile::WaitKind;

inline bool BlockProfileOn() { return WaitProfileOn(WaitKind::kBlock); }

// The timed path, apart so that a wrapper that only forwards needs no
// stack frame: calls the table entry `Next` and samples the wait.
template <auto Next, typename... Args>
__attribute__((noinline)) auto Timed(Args... args) {
  const uint64_t start = WaitClock();
  const auto result = (g_wait_next.*Next)(args...);
  SampleWait(WaitKind::kBlock, start);
  return result;
}

// Whether a call on `fd` is timed. The descriptor's cached kind comes
// first: a call on a regular file costs one table load, the profile on or
// off.
inline bool FdCallTimed(int fd) {
  const FdClass kind = CachedFdClass(fd);
  if (__builtin_expect(kind == kFdNeverWaits, 1)) return false;
  return BlockProfileOn() && FdMayBlock(fd, kind);
}

inline bool ZeroTimespec(const struct timespec* t) {
  return t != nullptr && t->tv_sec == 0 && t->tv_nsec == 0;
}

}  // namespace

// Timed whenever the profile is on.
#define RINGPROF_ALWAYS_TIMED(ret, name, params, args)   \
  RINGPROF_EXPORT ret name params {                      \
    if (!BlockProfileOn()) return g_wait_next.name args; \
    return Timed<&WaitNext::name> args;                  \
  }
// Timed when `may_wait` holds (the profile on).
#define RINGPROF_TIMED_IF(ret, name, params, args, may_wait) \
  RINGPROF_EXPORT ret name params {                          \
    if (!BlockProfileOn() || !(may_wait)) {                  \
      return g_wait_next.name args;                          \
    }                                                        \
    return Timed<&WaitNext::name> args;                      \
  }

RINGPROF_ALWAYS_TIMED(int, pthread_cond_wait,
                      (pthread_cond_t * cond, pthread_mutex_t* mutex),
                      (cond, mutex))
RINGPROF_ALWAYS_TIMED(int, pthread_cond_timedwait,
                      (pthread_cond_t * cond, pthread_mutex_t* mutex,
                       const struct timespec* when),
                      (cond, mutex, when))
RINGPROF_ALWAYS_TIMED(int, pthread_cond_clockwait,
                      (pthread_cond_t * cond, pthread_mutex_t* mutex,
                       clockid_t clock, const struct timespec* when),
                      (cond, mutex, clock, when))
RINGPROF_ALWAYS_TIMED(int, pthread_join, (pthread_t thread, void** result),
                      (thread, result))
RINGPROF_ALWAYS_TIMED(int, nanosleep,
                      (const struct timespec* request, struct timespec* left),
                      (request, left))
RINGPROF_ALWAYS_TIMED(int, clock_nanosleep,
                      (clockid_t clock, int flags,
                       const struct timespec* request, struct timespec* left),
                      (clock, flags, request, left))
RINGPROF_ALWAYS_TIMED(pid_t, wait, (int* status), (status))
// sem_timedwait and sem_clockwait validate the timeout before they try the
// semaphore: a sem_trywait first would change what they return.
RINGPROF_ALWAYS_TIMED(int, sem_timedwait,
                      (sem_t * sem, const struct timespec* when), (sem, when))
RINGPROF_ALWAYS_TIMED(int, sem_clockwait,
                      (sem_t * sem, clockid_t clock,
                       const struct timespec* when),
                      (sem, clock, when))

RINGPROF_EXPORT int sem_wait(sem_t* sem) {
  if (!BlockProfileOn()) return g_wait_next.sem_wait(sem);
  // sem_wait acts on a pending cancellation even when it need not wait.
  g_wait_next.pthread_testcancel();
  const int saved_errno = errno;
  if (g_wait_next.sem_trywait(sem) == 0) return 0;
  errno = saved_errno;
  return Timed<&WaitNext::sem_wait>(sem);
}

RINGPROF_TIMED_IF(int, poll, (struct pollfd * fds, nfds_t count, int timeout),
                  (fds, count, timeout), timeout != 0)
RINGPROF_TIMED_IF(int, __poll_chk,
                  (struct pollfd * fds, nfds_t count, int timeout,
                   size_t fds_size),
                  (fds, count, timeout, fds_size), timeout != 0)
RINGPROF_TIMED_IF(int, ppoll,
                  (struct pollfd * fds, nfds_t count,
                   const struct timespec* timeout, const sigset_t* mask),
                  (fds, count, timeout, mask), !ZeroTimespec(timeout))
RINGPROF_TIMED_IF(int, __ppoll_chk,
                  (struct pollfd * fds, nfds_t count,
                   const struct timespec* timeout, const sigset_t* mask,
                   size_t fds_size),
                  (fds, count, timeout, mask, fds_size), !ZeroTimespec(timeout))
RINGPROF_TIMED_IF(int, select,
                  (int count, fd_set* readable, fd_set* writable,
                   fd_set* exceptional, struct timeval* timeout),
                  (count, readable, writable, exceptional, timeout),
                  timeout == nullptr || timeout->tv_sec != 0 ||
                      timeout->tv_usec != 0)
RINGPROF_TIMED_IF(int, pselect,
                  (int count, fd_set* readable, fd_set* writable,
                   fd_set* exceptional, const struct timespec* timeout,
                   const sigset_t* mask),
                  (count, readable, writable, exceptional, timeout, mask),
                  !ZeroTimespec(timeout))
RINGPROF_TIMED_IF(int, epoll_wait,
                  (int epoll, struct epoll_event* events, int count,
                   int timeout),
                  (epoll, events, count, timeout), timeout != 0)
RINGPROF_TIMED_IF(int, epoll_pwait,
                  (int epoll, struct epoll_event* events, int count,
                   int timeout, const sigset_t* mask),
                  (epoll, events, count, timeout, mask), timeout != 0)
RINGPROF_TIMED_IF(pid_t, waitpid, (pid_t pid, int* status, int options),
                  (pid, status, options), (options & WNOHANG) == 0)
RINGPROF_TIMED_IF(pid_t, wait4,
                  (pid_t pid, int* status, int options, struct rusage* usage),
                  (pid, status, options, usage), (options & WNOHANG) == 0)

// Descriptor calls: timed when the descriptor may block (FdCallTimed) and
// `may_wait` holds.
#define RINGPROF_FD_TIMED_IF(ret, name, params, args, may_wait) \
  RINGPROF_EXPORT ret name params {                             \
    if (!FdCallTimed(fd) || !(may_wait)) {                      \
      return g_wait_next.name args;                             \
    }                                                           \
    return Timed<&WaitNext::name> args;                         \
  }
RINGPROF_FD_TIMED_IF(ssize_t, read, (int fd, void* buf, size_t size),
                     (fd, buf, size), true)
RINGPROF_FD_TIMED_IF(ssize_t, __read_chk,
                     (int fd, void* buf, size_t size, size_t buf_size),
                     (fd, buf, size, buf_size), true)
RINGPROF_FD_TIMED_IF(ssize_t, readv,
                     (int fd, const struct iovec* iov, int count),
                     (fd, iov, count), true)
RINGPROF_FD_TIMED_IF(ssize_t, pread,
                     (int fd, void* buf, size_t size, off_t offset),
                     (fd, buf, size, offset), true)
RINGPROF_FD_TIMED_IF(ssize_t, pread64,
                     (int fd, void* buf, size_t size, off_t offset),
                     (fd, buf, size, offset), true)
RINGPROF_FD_TIMED_IF(ssize_t, write, (int fd, const void* buf, size_t size),
                     (fd, buf, size), true)
RINGPROF_FD_TIMED_IF(ssize_t, writev,
                     (int fd, const struct iovec* iov, int count),
                     (fd, iov, count), true)
RINGPROF_FD_TIMED_IF(int, connect,
                     (int fd, const struct sockaddr* address, socklen_t size),
                     (fd, address, size), true)
RINGPROF_FD_TIMED_IF(ssize_t, recv, (int fd, void* buf, size_t size, int flags),
                     (fd, buf, size, flags), (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, __recv_chk,
                     (int fd, void* buf, size_t size, size_t buf_size,
                      int flags),
                     (fd, buf, size, buf_size, flags),
                     (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, recvfrom,
                     (int fd, void* buf, size_t size, int flags,
                      struct sockaddr* address, socklen_t* address_size),
                     (fd, buf, size, flags, address, address_size),
                     (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, recvmsg,
                     (int fd, struct msghdr* message, int flags),
                     (fd, message, flags), (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, send,
                     (int fd, const void* buf, size_t size, int flags),
                     (fd, buf, size, flags), (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, sendto,
                     (int fd, const void* buf, size_t size, int flags,
                      const struct sockaddr* address, socklen_t address_size),
                     (fd, buf, size, flags, address, address_size),
                     (flags & MSG_DONTWAIT) == 0)
RINGPROF_FD_TIMED_IF(ssize_t, sendmsg,
                     (int fd, const struct msghdr* message, int flags),
                     (fd, message, flags), (flags & MSG_DONTWAIT) == 0)

#undef RINGPROF_ALWAYS_TIMED
#undef RINGPROF_TIMED_IF
#undef RINGPROF_FD_TIMED_IF

// Descriptor numbers that now name something else (fd_class.h): their
// kinds are forgotten after the call (a number reused in between is only
// looked up once more), and those of new descriptors on return (a number
// whose close was not seen is learned again).
namespace {

int Created(int fd) {
  ForgetFd(fd);  // (-1: nothing)
  return fd;
}

int CreatedPair(int result, const int* fds) {
  if (result == 0) {
    ForgetFd(fds[0]);
    ForgetFd(fds[1]);
  }
  return result;
}

// The descriptor `stream` holds (-1: none), errno kept.
int StreamFd(FILE* stream) {
  const int saved_errno = errno;
  const int fd = stream != nullptr ? g_wait_next.fileno(stream) : -1;
  errno = saved_errno;
  return fd;
}

}  // namespace

RINGPROF_EXPORT int accept(int fd, struct sockaddr* address, socklen_t* size) {
  if (!FdCallTimed(fd)) return Created(g_wait_next.accept(fd, address, size));
  return Created(Timed<&WaitNext::accept>(fd, address, size));
}

RINGPROF_EXPORT int accept4(int fd, struct sockaddr* address, socklen_t* size,
                            int flags) {
  if (!FdCallTimed(fd)) {
    return Created(g_wait_next.accept4(fd, address, size, flags));
  }
  return Created(Timed<&WaitNext::accept4>(fd, address, size, flags));
}

RINGPROF_EXPORT int close(int fd) {
  const int result = g_wait_next.close(fd);
  ForgetFd(fd);
  return result;
}

RINGPROF_EXPORT int dup2(int from, int to) {
  const int result = g_wait_next.dup2(from, to);
  ForgetFd(to);
  return result;
}

RINGPROF_EXPORT int dup3(int from, int to, int flags) {
  const int result = g_wait_next.dup3(from, to, flags);
  ForgetFd(to);
  return result;
}

RINGPROF_EXPORT int dup(int fd) { return Created(g_wait_next.dup(fd)); }

RINGPROF_EXPORT int fclose(FILE* stream) {
  const int fd = StreamFd(stream);
  const int result = g_wait_next.fclose(stream);
  ForgetFd(fd);
  return result;
}

RINGPROF_EXPORT int pclose(FILE* stream) {
  const int fd = StreamFd(stream);
  const int result = g_wait_next.pclose(stream);
  ForgetFd(fd);
  return result;
}

RINGPROF_EXPORT int closedir(DIR* dir) {
  // closedir is declared nonnull, but glibc's fails with EINVAL for null:
  // hide the pointer from the compiler so that the test stays.
  DIR* tested = dir;
  asm("" : "+r"(tested));
  const int saved_errno = errno;
  const int fd = tested != nullptr ? g_wait_next.dirfd(tested) : -1;
  errno = saved_errno;
  const int result = g_wait_next.closedir(dir);
  ForgetFd(fd);
  return result;
}

RINGPROF_EXPORT int pipe(int fds[2]) {
  return CreatedPair(g_wait_next.pipe(fds), fds);
}

RINGPROF_EXPORT int pipe2(int fds[2], int flags) {
  return CreatedPair(g_wait_next.pipe2(fds, flags), fds);
}

RINGPROF_EXPORT int socket(int domain, int type, int protocol) {
  return Created(g_wait_next.socket(domain, type, protocol));
}

RINGPROF_EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) {
  return CreatedPair(g_wait_next.socketpair(domain, type, protocol, fds), fds);
}
