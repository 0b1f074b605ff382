// The next definitions (RTLD_NEXT, looked up in the loaded objects' symbol
// tables: loaded_symbols.h) of every function the off-CPU interposers wrap
// (lock_interpose.cc, block_interpose.cc), of the non-blocking variants
// they try first (pthread_mutex_trylock, sem_trywait, ...) and of fileno
// and dirfd (which descriptor fclose, pclose and closedir close).
//
// Contract:
//  - One table, g_wait_next. Until resolved, each entry is a stub that
//    resolves its own entry and then calls the real function, so the
//    interposers need no "resolved yet" test, and a process pays only for
//    the functions it calls (a short-lived command calls few or none). The
//    library constructor calls PrepareWaitNext before anything else runs:
//    it records the objects loaded at start (loaded_symbols.h,
//    RecordStartObjects), from which a stub resolves without the loader's
//    lock, so a stub may first run anywhere, a signal handler that
//    interrupted the loader included. Where they cannot be recorded (more
//    than kMaxStartObjects objects), it resolves the whole table at once
//    (ResolveWaitNext) instead, as does a stub that runs before it (another
//    library's constructor). Concurrent first calls all resolve and store
//    the same address.
//  - Either way an entry is what a lookup among the objects loaded at start
//    finds (RTLD_NEXT of libringprof.so), whenever it is resolved.
//  - A function no loaded object defines (pthread_cond_clockwait before
//    glibc 2.30) is replaced by one that fails as an unsupported call:
//    ENOSYS as the return value of pthread_* functions, -1 with errno ENOSYS
//    otherwise. A program that calls such a function could not have linked
//    against the library it runs with, so this does not happen in practice.
//  - No strong import: every function is looked up at run time, so the
//    library links and loads where some of them do not exist (musl has no
//    __read_chk, old glibc no *clock* variants).
//  - After resolution every entry is a plain indirect call:
//    async-signal-safe where the function is.
#ifndef RINGPROF_EMITTER_WAIT_NEXT_H_
#define RINGPROF_EMITTER_WAIT_NEXT_H_

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// X(name, return type, parameters, arguments, failure when missing)
#define RINGPROF_PTHREAD_FAIL ENOSYS
#define RINGPROF_ERRNO_FAIL (errno = ENOSYS, -1)
#define RINGPROF_WAIT_FUNCTIONS(X)                                             \
  X(pthread_mutex_lock, int, (pthread_mutex_t * m), (m),                       \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_mutex_trylock, int, (pthread_mutex_t * m), (m),                    \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_mutex_timedlock, int,                                              \
    (pthread_mutex_t * m, const struct timespec* t), (m, t),                   \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_mutex_clocklock, int,                                              \
    (pthread_mutex_t * m, clockid_t c, const struct timespec* t), (m, c, t),   \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_rdlock, int, (pthread_rwlock_t * l), (l),                   \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_tryrdlock, int, (pthread_rwlock_t * l), (l),                \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_timedrdlock, int,                                           \
    (pthread_rwlock_t * l, const struct timespec* t), (l, t),                  \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_clockrdlock, int,                                           \
    (pthread_rwlock_t * l, clockid_t c, const struct timespec* t), (l, c, t),  \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_wrlock, int, (pthread_rwlock_t * l), (l),                   \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_trywrlock, int, (pthread_rwlock_t * l), (l),                \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_timedwrlock, int,                                           \
    (pthread_rwlock_t * l, const struct timespec* t), (l, t),                  \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_rwlock_clockwrlock, int,                                           \
    (pthread_rwlock_t * l, clockid_t c, const struct timespec* t), (l, c, t),  \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_spin_lock, int, (pthread_spinlock_t * l), (l),                     \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_spin_trylock, int, (pthread_spinlock_t * l), (l),                  \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_cond_wait, int, (pthread_cond_t * c, pthread_mutex_t * m), (c, m), \
    RINGPROF_PTHREAD_FAIL)                                                     \
  X(pthread_cond_timedwait, int,                                               \
    (pthread_cond_t * c, pthread_mutex_t * m, const struct timespec* t),       \
    (c, m, t), RINGPROF_PTHREAD_FAIL)                                          \
  X(pthread_cond_clockwait, int,                                               \
    (pthread_cond_t * c, pthread_mutex_t * m, clockid_t k,                     \
     const struct timespec* t),                                                \
    (c, m, k, t), RINGPROF_PTHREAD_FAIL)                                       \
  X(pthread_join, int, (pthread_t t, void** r), (t, r), RINGPROF_PTHREAD_FAIL) \
  X(pthread_testcancel, void, (), (), (void)0)                                 \
  X(sem_wait, int, (sem_t * s), (s), RINGPROF_ERRNO_FAIL)                      \
  X(sem_trywait, int, (sem_t * s), (s), RINGPROF_ERRNO_FAIL)                   \
  X(sem_timedwait, int, (sem_t * s, const struct timespec* t), (s, t),         \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(sem_clockwait, int, (sem_t * s, clockid_t c, const struct timespec* t),    \
    (s, c, t), RINGPROF_ERRNO_FAIL)                                            \
  X(nanosleep, int, (const struct timespec* r, struct timespec* m), (r, m),    \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(clock_nanosleep, int,                                                      \
    (clockid_t c, int f, const struct timespec* r, struct timespec* m),        \
    (c, f, r, m), RINGPROF_PTHREAD_FAIL)                                       \
  X(poll, int, (struct pollfd * f, nfds_t n, int t), (f, n, t),                \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(__poll_chk, int, (struct pollfd * f, nfds_t n, int t, size_t l),           \
    (f, n, t, l), RINGPROF_ERRNO_FAIL)                                         \
  X(ppoll, int,                                                                \
    (struct pollfd * f, nfds_t n, const struct timespec* t,                    \
     const sigset_t* s),                                                       \
    (f, n, t, s), RINGPROF_ERRNO_FAIL)                                         \
  X(__ppoll_chk, int,                                                          \
    (struct pollfd * f, nfds_t n, const struct timespec* t, const sigset_t* s, \
     size_t l),                                                                \
    (f, n, t, s, l), RINGPROF_ERRNO_FAIL)                                      \
  X(select, int, (int n, fd_set* r, fd_set* w, fd_set* e, struct timeval* t),  \
    (n, r, w, e, t), RINGPROF_ERRNO_FAIL)                                      \
  X(pselect, int,                                                              \
    (int n, fd_set* r, fd_set* w, fd_set* e, const struct timespec* t,         \
     const sigset_t* s),                                                       \
    (n, r, w, e, t, s), RINGPROF_ERRNO_FAIL)                                   \
  X(epoll_wait, int, (int e, struct epoll_event* v, int n, int t),             \
    (e, v, n, t), RINGPROF_ERRNO_FAIL)                                         \
  X(epoll_pwait, int,                                                          \
    (int e, struct epoll_event* v, int n, int t, const sigset_t* s),           \
    (e, v, n, t, s), RINGPROF_ERRNO_FAIL)                                      \
  X(wait, pid_t, (int* s), (s), RINGPROF_ERRNO_FAIL)                           \
  X(waitpid, pid_t, (pid_t p, int* s, int o), (p, s, o), RINGPROF_ERRNO_FAIL)  \
  X(wait4, pid_t, (pid_t p, int* s, int o, struct rusage* u), (p, s, o, u),    \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(read, ssize_t, (int d, void* b, size_t n), (d, b, n), RINGPROF_ERRNO_FAIL) \
  X(__read_chk, ssize_t, (int d, void* b, size_t n, size_t l), (d, b, n, l),   \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(readv, ssize_t, (int d, const struct iovec* v, int n), (d, v, n),          \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(pread, ssize_t, (int d, void* b, size_t n, off_t o), (d, b, n, o),         \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(pread64, ssize_t, (int d, void* b, size_t n, off_t o), (d, b, n, o),       \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(recv, ssize_t, (int d, void* b, size_t n, int f), (d, b, n, f),            \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(__recv_chk, ssize_t, (int d, void* b, size_t n, size_t l, int f),          \
    (d, b, n, l, f), RINGPROF_ERRNO_FAIL)                                      \
  X(recvfrom, ssize_t,                                                         \
    (int d, void* b, size_t n, int f, struct sockaddr* a, socklen_t* al),      \
    (d, b, n, f, a, al), RINGPROF_ERRNO_FAIL)                                  \
  X(recvmsg, ssize_t, (int d, struct msghdr* m, int f), (d, m, f),             \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(write, ssize_t, (int d, const void* b, size_t n), (d, b, n),               \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(writev, ssize_t, (int d, const struct iovec* v, int n), (d, v, n),         \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(send, ssize_t, (int d, const void* b, size_t n, int f), (d, b, n, f),      \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(sendto, ssize_t,                                                           \
    (int d, const void* b, size_t n, int f, const struct sockaddr* a,          \
     socklen_t al),                                                            \
    (d, b, n, f, a, al), RINGPROF_ERRNO_FAIL)                                  \
  X(sendmsg, ssize_t, (int d, const struct msghdr* m, int f), (d, m, f),       \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(accept, int, (int d, struct sockaddr* a, socklen_t* l), (d, a, l),         \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(accept4, int, (int d, struct sockaddr* a, socklen_t* l, int f),            \
    (d, a, l, f), RINGPROF_ERRNO_FAIL)                                         \
  X(connect, int, (int d, const struct sockaddr* a, socklen_t l), (d, a, l),   \
    RINGPROF_ERRNO_FAIL)                                                       \
  X(close, int, (int d), (d), RINGPROF_ERRNO_FAIL)                             \
  X(dup2, int, (int o, int n), (o, n), RINGPROF_ERRNO_FAIL)                    \
  X(dup3, int, (int o, int n, int f), (o, n, f), RINGPROF_ERRNO_FAIL)          \
  X(dup, int, (int o), (o), RINGPROF_ERRNO_FAIL)                               \
  X(fclose, int, (FILE * f), (f), RINGPROF_ERRNO_FAIL)                         \
  X(pclose, int, (FILE * f), (f), RINGPROF_ERRNO_FAIL)                         \
  X(fileno, int, (FILE * f), (f), RINGPROF_ERRNO_FAIL)                         \
  X(closedir, int, (DIR * d), (d), RINGPROF_ERRNO_FAIL)                        \
  X(dirfd, int, (DIR * d), (d), RINGPROF_ERRNO_FAIL)                           \
  X(pipe, int, (int* f), (f), RINGPROF_ERRNO_FAIL)                             \
  X(pipe2, int, (int* f, int g), (f, g), RINGPROF_ERRNO_FAIL)                  \
  X(socket, int, (int d, int t, int p), (d, t, p), RINGPROF_ERRNO_FAIL)        \
  X(socketpair, int, (int d, int t, int p, int* f), (d, t, p, f),              \
    RINGPROF_ERRNO_FAIL)

namespace ringprof {
namespace emitter {

struct WaitNext {
#define RINGPROF_WAIT_NEXT_FIELD(name, ret, params, args, fail) \
  ret(*name) params;
  RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_FIELD)
#undef RINGPROF_WAIT_NEXT_FIELD
};

// Hidden: the interposers address it directly, not through the GOT.
extern WaitNext g_wait_next __attribute__((visibility("hidden")));

// At start: records the loaded objects for the stubs, or resolves every
// entry when it cannot (see the contract above).
void PrepareWaitNext();

// Resolves every entry now, under the loader's lock (idempotent).
void ResolveWaitNext();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_WAIT_NEXT_H_
