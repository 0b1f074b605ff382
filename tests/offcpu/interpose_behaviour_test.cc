// The off-CPU interposers change nothing a program can observe: run with
// libringprof.so preloaded (interpose_behaviour_test.sh) at sampling rates
// that record every wait, each interposed function gives the results,
// errno, EINTR and SA_RESTART behaviour, timeouts and cancellation points
// of glibc's. Where glibc's answer depends on its own checks, the test
// calls glibc's definition directly (looked up in libc.so.6) on the same
// state and compares.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace {

constexpr int64_t kDeadlineNs = 20'000'000'000;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000 + ts.tv_nsec;
}

timespec RealtimeIn(int64_t ns) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (ts.tv_nsec + ns) / 1'000'000'000;
  ts.tv_nsec = (ts.tv_nsec + ns) % 1'000'000'000;
  return ts;
}

// glibc's own definition of `name`, bypassing the interposer.
template <typename Fn>
Fn Libc(const char* name) {
  static void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void* fn = libc != nullptr ? dlsym(libc, name) : nullptr;
  if (fn == nullptr) abort();
  return reinterpret_cast<Fn>(fn);
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Polls until thread `tid` sleeps in the kernel (state S), bounded.
bool WaitUntilBlocked(pid_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  for (const int64_t end = NowNs() + kDeadlineNs; NowNs() < end;) {
    FILE* file = fopen(path.c_str(), "r");
    if (file == nullptr) return false;
    char line[512] = {};
    const size_t n = fread(line, 1, sizeof(line) - 1, file);
    fclose(file);
    const char* paren = strrchr(line, ')');
    if (n > 0 && paren != nullptr && paren[1] == ' ' && paren[2] == 'S') {
      return true;
    }
    sched_yield();
  }
  return false;
}

TEST(InterposedTest, TheInterposersAreTheOnesCalled) {
  for (const char* name : {"pthread_mutex_lock", "pthread_cond_wait", "read",
                           "poll", "sem_wait", "close", "fclose", "pipe"}) {
    Dl_info info;
    ASSERT_NE(dladdr(dlsym(RTLD_DEFAULT, name), &info), 0) << name;
    EXPECT_NE(strstr(info.dli_fname, "libringprof.so"), nullptr)
        << name << " comes from " << info.dli_fname;
  }
}

// --- locks ---

TEST(MutexTest, TrylockNeverBlocksAndContendedLockWaits) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ASSERT_EQ(pthread_mutex_lock(&mutex), 0);
  std::atomic<int> state{0};
  pthread_t thread;
  struct Arg {
    pthread_mutex_t* mutex;
    std::atomic<int>* state;
    pid_t tid;
  } arg = {&mutex, &state, 0};
  ASSERT_EQ(pthread_create(
                &thread, nullptr,
                [](void* raw) -> void* {
                  Arg* a = static_cast<Arg*>(raw);
                  a->tid = Tid();
                  a->state->store(1);
                  if (pthread_mutex_trylock(a->mutex) != EBUSY) abort();
                  const int r = pthread_mutex_lock(a->mutex);
                  a->state->store(r == 0 ? 2 : 3);
                  pthread_mutex_unlock(a->mutex);
                  return nullptr;
                },
                &arg),
            0);
  while (state.load() == 0) sched_yield();
  ASSERT_TRUE(WaitUntilBlocked(arg.tid));
  EXPECT_EQ(state.load(), 1);
  ASSERT_EQ(pthread_mutex_unlock(&mutex), 0);
  pthread_join(thread, nullptr);
  EXPECT_EQ(state.load(), 2);
}

TEST(MutexTest, ErrorCheckingRecursiveAndRobustMutexes) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_t check;
  pthread_mutex_init(&check, &attr);
  EXPECT_EQ(pthread_mutex_lock(&check), 0);
  EXPECT_EQ(pthread_mutex_lock(&check), EDEADLK);
  EXPECT_EQ(pthread_mutex_unlock(&check), 0);
  EXPECT_EQ(pthread_mutex_unlock(&check), EPERM);

  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_t recursive;
  pthread_mutex_init(&recursive, &attr);
  EXPECT_EQ(pthread_mutex_lock(&recursive), 0);
  EXPECT_EQ(pthread_mutex_lock(&recursive), 0);
  EXPECT_EQ(pthread_mutex_unlock(&recursive), 0);
  EXPECT_EQ(pthread_mutex_unlock(&recursive), 0);
  EXPECT_EQ(pthread_mutex_unlock(&recursive), EPERM);

  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_NORMAL);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_t robust;
  pthread_mutex_init(&robust, &attr);
  pthread_t owner;
  pthread_create(
      &owner, nullptr,
      [](void* m) -> void* {
        pthread_mutex_lock(static_cast<pthread_mutex_t*>(m));
        return nullptr;  // exits holding it
      },
      &robust);
  pthread_join(owner, nullptr);
  EXPECT_EQ(pthread_mutex_lock(&robust), EOWNERDEAD);
  EXPECT_EQ(pthread_mutex_consistent(&robust), 0);
  EXPECT_EQ(pthread_mutex_unlock(&robust), 0);
  EXPECT_EQ(pthread_mutex_lock(&robust), 0);
  EXPECT_EQ(pthread_mutex_unlock(&robust), 0);

  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_STALLED);
  pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_t pi;
  ASSERT_EQ(pthread_mutex_init(&pi, &attr), 0);
  EXPECT_EQ(pthread_mutex_lock(&pi), 0);
  const timespec soon = RealtimeIn(20'000'000);
  pthread_t waiter;
  struct Timed {
    pthread_mutex_t* mutex;
    timespec when;
    int result;
  } timed = {&pi, soon, -1};
  pthread_create(
      &waiter, nullptr,
      [](void* raw) -> void* {
        Timed* t = static_cast<Timed*>(raw);
        t->result = pthread_mutex_timedlock(t->mutex, &t->when);
        return nullptr;
      },
      &timed);
  pthread_join(waiter, nullptr);
  EXPECT_EQ(timed.result, ETIMEDOUT);
  EXPECT_EQ(pthread_mutex_unlock(&pi), 0);
  pthread_mutexattr_destroy(&attr);
}

TEST(MutexTest, TimedVariantsTimeOutAndValidateLikeGlibc) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ASSERT_EQ(pthread_mutex_lock(&mutex), 0);
  pthread_t thread;
  struct Result {
    pthread_mutex_t* mutex;
    int timed, clocked;
    int64_t waited_ns;
  } result = {&mutex, -1, -1, 0};
  pthread_create(
      &thread, nullptr,
      [](void* raw) -> void* {
        Result* r = static_cast<Result*>(raw);
        const int64_t start = NowNs();
        const timespec when = RealtimeIn(30'000'000);
        r->timed = pthread_mutex_timedlock(r->mutex, &when);
        timespec mono;
        clock_gettime(CLOCK_MONOTONIC, &mono);
        mono.tv_nsec += 1'000'000;
        if (mono.tv_nsec >= 1'000'000'000) {
          mono.tv_nsec -= 1'000'000'000;
          ++mono.tv_sec;
        }
        r->clocked = pthread_mutex_clocklock(r->mutex, CLOCK_MONOTONIC, &mono);
        r->waited_ns = NowNs() - start;
        return nullptr;
      },
      &result);
  pthread_join(thread, nullptr);
  EXPECT_EQ(result.timed, ETIMEDOUT);
  EXPECT_EQ(result.clocked, ETIMEDOUT);
  EXPECT_GE(result.waited_ns, 30'000'000);
  pthread_mutex_unlock(&mutex);

  // On a free mutex: what glibc answers for a bad deadline or clock.
  using ClockLock = int (*)(pthread_mutex_t*, clockid_t, const timespec*);
  const auto real_clocklock = Libc<ClockLock>("pthread_mutex_clocklock");
  const timespec bad = {0, 2'000'000'000};
  for (clockid_t clock :
       {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID}) {
    pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
    EXPECT_EQ(pthread_mutex_clocklock(&a, clock, &bad),
              real_clocklock(&b, clock, &bad))
        << clock;
  }
}

TEST(RwlockTest, ReadersWritersAndTimeouts) {
  pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
  EXPECT_EQ(pthread_rwlock_rdlock(&lock), 0);
  EXPECT_EQ(pthread_rwlock_rdlock(&lock), 0);
  EXPECT_EQ(pthread_rwlock_trywrlock(&lock), EBUSY);
  const timespec soon = RealtimeIn(20'000'000);
  EXPECT_EQ(pthread_rwlock_timedwrlock(&lock, &soon), ETIMEDOUT);
  EXPECT_EQ(pthread_rwlock_unlock(&lock), 0);
  EXPECT_EQ(pthread_rwlock_unlock(&lock), 0);
  EXPECT_EQ(pthread_rwlock_wrlock(&lock), 0);
  EXPECT_EQ(pthread_rwlock_rdlock(&lock), EDEADLK);
  EXPECT_EQ(pthread_rwlock_wrlock(&lock), EDEADLK);
  pthread_t thread;
  int result = -1;
  struct Arg {
    pthread_rwlock_t* lock;
    int* result;
  } arg = {&lock, &result};
  pthread_create(
      &thread, nullptr,
      [](void* raw) -> void* {
        Arg* a = static_cast<Arg*>(raw);
        const timespec when = RealtimeIn(20'000'000);
        *a->result = pthread_rwlock_timedrdlock(a->lock, &when);
        return nullptr;
      },
      &arg);
  pthread_join(thread, nullptr);
  EXPECT_EQ(result, ETIMEDOUT);
  EXPECT_EQ(pthread_rwlock_unlock(&lock), 0);

  using TimedRd = int (*)(pthread_rwlock_t*, const timespec*);
  const auto real = Libc<TimedRd>("pthread_rwlock_timedrdlock");
  const timespec bad = {0, -1};
  pthread_rwlock_t a = PTHREAD_RWLOCK_INITIALIZER;
  pthread_rwlock_t b = PTHREAD_RWLOCK_INITIALIZER;
  EXPECT_EQ(pthread_rwlock_timedrdlock(&a, &bad), real(&b, &bad));
  EXPECT_EQ(pthread_rwlock_timedwrlock(&a, &bad), EINVAL);
}

TEST(SpinTest, LockTrylockUnlock) {
  pthread_spinlock_t spin;
  ASSERT_EQ(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
  EXPECT_EQ(pthread_spin_lock(&spin), 0);
  EXPECT_EQ(pthread_spin_trylock(&spin), EBUSY);
  EXPECT_EQ(pthread_spin_unlock(&spin), 0);
  EXPECT_EQ(pthread_spin_trylock(&spin), 0);
  EXPECT_EQ(pthread_spin_unlock(&spin), 0);
}

// --- conditions, semaphores, joins, sleeps ---

TEST(CondTest, TimedWaitsTimeOutAndSignalsWake) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&mutex);
  const timespec soon = RealtimeIn(20'000'000);
  EXPECT_EQ(pthread_cond_timedwait(&cond, &mutex, &soon), ETIMEDOUT);
  timespec mono;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  EXPECT_EQ(pthread_cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &mono),
            ETIMEDOUT);
  const timespec bad = {0, 2'000'000'000};
  EXPECT_EQ(pthread_cond_timedwait(&cond, &mutex, &bad), EINVAL);
  // The mutex is held again after every return.
  EXPECT_EQ(pthread_mutex_trylock(&mutex), EBUSY);
  pthread_mutex_unlock(&mutex);
}

TEST(SemTest, WaitTryTimedAndErrno) {
  sem_t sem;
  ASSERT_EQ(sem_init(&sem, 0, 1), 0);
  errno = 1234;
  EXPECT_EQ(sem_wait(&sem), 0);
  EXPECT_EQ(errno, 1234);  // untouched on success
  EXPECT_EQ(sem_trywait(&sem), -1);
  EXPECT_EQ(errno, EAGAIN);
  const timespec soon = RealtimeIn(20'000'000);
  EXPECT_EQ(sem_timedwait(&sem, &soon), -1);
  EXPECT_EQ(errno, ETIMEDOUT);
  sem_post(&sem);
  const timespec bad = {0, 2'000'000'000};
  EXPECT_EQ(sem_timedwait(&sem, &bad), -1);  // glibc checks first
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sem_wait(&sem), 0);
  sem_destroy(&sem);
}

TEST(JoinTest, ReturnValueAndErrors) {
  pthread_t thread;
  pthread_create(
      &thread, nullptr,
      [](void*) -> void* { return reinterpret_cast<void*>(42); }, nullptr);
  void* value = nullptr;
  EXPECT_EQ(pthread_join(thread, &value), 0);
  EXPECT_EQ(value, reinterpret_cast<void*>(42));
  EXPECT_EQ(pthread_join(pthread_self(), nullptr), EDEADLK);
}

TEST(SleepTest, SleepsAndBadArguments) {
  const int64_t start = NowNs();
  const timespec short_sleep = {0, 5'000'000};
  EXPECT_EQ(nanosleep(&short_sleep, nullptr), 0);
  EXPECT_GE(NowNs() - start, 5'000'000);
  const timespec bad = {0, -5};
  EXPECT_EQ(nanosleep(&bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, nullptr), EINVAL);
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &short_sleep, nullptr), 0);
}

// --- descriptors ---

TEST(FdTest, FilePipeAndSocketResultsAndErrno) {
  char path[] = "/tmp/ringprof-offcpu-XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  EXPECT_EQ(write(file, "hello", 5), 5);
  char buf[8] = {};
  EXPECT_EQ(pread(file, buf, 5, 0), 5);
  EXPECT_STREQ(buf, "hello");
  EXPECT_EQ(lseek(file, 0, SEEK_SET), 0);
  iovec iov = {buf, 3};
  EXPECT_EQ(readv(file, &iov, 1), 3);
  EXPECT_EQ(read(file, buf, sizeof(buf)), 2);
  EXPECT_EQ(read(file, buf, sizeof(buf)), 0);
  EXPECT_EQ(close(file), 0);
  errno = 0;
  EXPECT_EQ(read(file, buf, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(close(file), -1);
  EXPECT_EQ(errno, EBADF);

  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK), 0);
  EXPECT_EQ(read(fds[0], buf, 1), -1);
  EXPECT_EQ(errno, EAGAIN);
  // The same number becomes a blocking pipe: still correct.
  close(fds[0]);
  close(fds[1]);
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], "ab", 2), 2);
  EXPECT_EQ(read(fds[0], buf, 2), 2);
  ASSERT_EQ(dup2(fds[0], 100), 100);
  EXPECT_EQ(write(fds[1], "c", 1), 1);
  EXPECT_EQ(read(100, buf, 1), 1);
  EXPECT_EQ(buf[0], 'c');
  close(100);
  close(fds[0]);
  close(fds[1]);

  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_EQ(recv(pair[0], buf, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(send(pair[1], "xy", 2, 0), 2);
  EXPECT_EQ(recv(pair[0], buf, 2, 0), 2);
  msghdr message = {};
  iovec part = {buf, 1};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  EXPECT_EQ(sendmsg(pair[1], &message, 0), 1);
  EXPECT_EQ(recvmsg(pair[0], &message, 0), 1);
  EXPECT_EQ(sendto(pair[1], "z", 1, 0, nullptr, 0), 1);
  EXPECT_EQ(recvfrom(pair[0], buf, 1, 0, nullptr, nullptr), 1);
  EXPECT_EQ(buf[0], 'z');
  close(pair[0]);
  close(pair[1]);

  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  socklen_t size = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
  EXPECT_EQ(accept(listener, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);  // not listening
  ASSERT_EQ(listen(listener, 4), 0);
  EXPECT_EQ(accept4(listener, nullptr, nullptr, 0), -1);
  EXPECT_EQ(errno, EAGAIN);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(
      connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  pollfd ready = {listener, POLLIN, 0};
  EXPECT_EQ(poll(&ready, 1, 10000), 1);
  const int accepted = accept(listener, nullptr, nullptr);
  EXPECT_GE(accepted, 0);
  close(accepted);
  close(client);
  close(listener);
  const int refused = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(
      connect(refused, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(refused);
}

TEST(PollTest, TimeoutsOfEveryPollingCall) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pollfd waiting = {fds[0], POLLIN, 0};
  EXPECT_EQ(poll(&waiting, 1, 0), 0);
  EXPECT_EQ(poll(&waiting, 1, 10), 0);
  const timespec ten_ms = {0, 10'000'000};
  EXPECT_EQ(ppoll(&waiting, 1, &ten_ms, nullptr), 0);
  fd_set set;
  FD_ZERO(&set);
  FD_SET(fds[0], &set);
  timeval tv = {0, 10000};
  EXPECT_EQ(select(fds[0] + 1, &set, nullptr, nullptr, &tv), 0);
  FD_SET(fds[0], &set);
  EXPECT_EQ(pselect(fds[0] + 1, &set, nullptr, nullptr, &ten_ms, nullptr), 0);
  const int epoll = epoll_create1(0);
  epoll_event event = {};
  event.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(epoll, EPOLL_CTL_ADD, fds[0], &event), 0);
  EXPECT_EQ(epoll_wait(epoll, &event, 1, 10), 0);
  EXPECT_EQ(epoll_pwait(epoll, &event, 1, 0, nullptr), 0);
  write(fds[1], "x", 1);
  EXPECT_EQ(epoll_wait(epoll, &event, 1, -1), 1);
  EXPECT_EQ(poll(&waiting, 1, -1), 1);
  EXPECT_EQ(epoll_wait(-1, &event, 1, 10), -1);
  EXPECT_EQ(errno, EBADF);
  close(epoll);
  close(fds[0]);
  close(fds[1]);
}

TEST(WaitTest, ChildrenAndWnohang) {
  const pid_t child = fork();
  if (child == 0) {
    // The child uses the interposed functions too.
    int fds[2];
    if (pipe(fds) != 0 || write(fds[1], "k", 1) != 1) _exit(3);
    char byte;
    _exit(read(fds[0], &byte, 1) == 1 && byte == 'k' ? 7 : 4);
  }
  int status = 0;
  pid_t got = 0;
  for (const int64_t end = NowNs() + kDeadlineNs; got == 0 && NowNs() < end;) {
    got = waitpid(child, &status, WNOHANG);
    if (got == 0) {
      got = waitpid(child, &status, 0);
    }
  }
  EXPECT_EQ(got, child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(waitpid(child, &status, 0), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_EQ(wait4(-1, &status, WNOHANG, nullptr), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_EQ(wait(&status), -1);
  EXPECT_EQ(errno, ECHILD);
}

// --- signals: EINTR with and without SA_RESTART ---

std::atomic<int> g_handled{0};
int g_handler_pipe[2];

void Handler(int) {
  // Interposed calls from a signal handler.
  const int saved = errno;
  char byte = 'h';
  if (write(g_handler_pipe[1], &byte, 1) == 1) {
    read(g_handler_pipe[0], &byte, 1);
  }
  errno = saved;
  g_handled.fetch_add(1);
}

struct BlockedRead {
  int fd;
  pid_t tid = 0;
  ssize_t result = 0;
  int error = 0;
  uint64_t span = 0;  // the reading thread's span id, when not 0
};

void* ReadOne(void* raw) {
  BlockedRead* r = static_cast<BlockedRead*>(raw);
  if (r->span != 0) {
    using SpanSet = uint64_t (*)(uint64_t);
    if (auto span_set = reinterpret_cast<SpanSet>(
            dlsym(RTLD_DEFAULT, "ringprof_span_set"))) {
      span_set(r->span);
    }
  }
  __atomic_store_n(&r->tid, Tid(), __ATOMIC_SEQ_CST);
  char byte;
  r->result = read(r->fd, &byte, 1);
  r->error = errno;
  return nullptr;
}

// A read of one byte on `fd` that blocks in a thread whose span is `span`
// until this thread writes the byte to `writer`.
void BlockedReadInSpan(int fd, int writer, uint64_t span) {
  BlockedRead blocked{fd};
  blocked.span = span;
  pthread_t thread;
  pthread_create(&thread, nullptr, ReadOne, &blocked);
  while (__atomic_load_n(&blocked.tid, __ATOMIC_SEQ_CST) == 0) sched_yield();
  ASSERT_TRUE(WaitUntilBlocked(blocked.tid));
  EXPECT_EQ(write(writer, "s", 1), 1);
  pthread_join(thread, nullptr);
  EXPECT_EQ(blocked.result, 1);
}

// A regular file's number, learned as one that never waits (a read of it
// is not timed), closed by fclose (whose close no interposer sees) and
// reused for a pipe by fcntl(F_DUPFD) (not interposed): the pipe's read
// is timed. interpose_behaviour_test.sh finds its sample by the span.
TEST(DescriptorKindTest, ANumberFcloseFreedIsTimedAgain) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  FILE* file = tmpfile();
  ASSERT_NE(file, nullptr);
  const int number = fileno(file);
  char byte;
  EXPECT_EQ(pread(number, &byte, 1, 0), 0);
  ASSERT_EQ(fclose(file), 0);
  ASSERT_EQ(fcntl(fds[0], F_DUPFD, number), number);
  BlockedReadInSpan(number, fds[1], 0x5eed0f0000000001);
  close(number);
  close(fds[0]);
  close(fds[1]);
}

// The same number closed by a raw system call (seen by no interposer) and
// handed out again by pipe: timed.
TEST(DescriptorKindTest, ANumberReusedByPipeIsTimedAgain) {
  char path[] = "/tmp/ringprof-fdkind-XXXXXX";
  const int number = mkstemp(path);
  ASSERT_GE(number, 0);
  unlink(path);
  char byte;
  EXPECT_EQ(pread(number, &byte, 1, 0), 0);
  ASSERT_EQ(syscall(SYS_close, number), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(fds[0], number);
  BlockedReadInSpan(fds[0], fds[1], 0x5eed0f0000000002);
  close(fds[0]);
  close(fds[1]);
}

void InstallHandler(int flags) {
  struct sigaction action = {};
  action.sa_handler = Handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, nullptr), 0);
}

TEST(SignalTest, BlockedReadFailsWithEintrWithoutSaRestart) {
  ASSERT_EQ(pipe(g_handler_pipe), 0);
  InstallHandler(0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  BlockedRead blocked{fds[0]};
  pthread_t thread;
  pthread_create(&thread, nullptr, ReadOne, &blocked);
  while (__atomic_load_n(&blocked.tid, __ATOMIC_SEQ_CST) == 0) sched_yield();
  ASSERT_TRUE(WaitUntilBlocked(blocked.tid));
  pthread_kill(thread, SIGUSR1);
  pthread_join(thread, nullptr);
  EXPECT_EQ(blocked.result, -1);
  EXPECT_EQ(blocked.error, EINTR);
  close(fds[0]);
  close(fds[1]);
}

TEST(SignalTest, BlockedReadRestartsWithSaRestart) {
  ASSERT_EQ(pipe(g_handler_pipe), 0);
  InstallHandler(SA_RESTART);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  BlockedRead blocked{fds[0]};
  pthread_t thread;
  pthread_create(&thread, nullptr, ReadOne, &blocked);
  while (__atomic_load_n(&blocked.tid, __ATOMIC_SEQ_CST) == 0) sched_yield();
  const int before = g_handled.load();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WaitUntilBlocked(blocked.tid));
    pthread_kill(thread, SIGUSR1);
    for (const int64_t end = NowNs() + kDeadlineNs;
         g_handled.load() < before + i + 1 && NowNs() < end;) {
      sched_yield();
    }
  }
  ASSERT_TRUE(WaitUntilBlocked(blocked.tid));
  EXPECT_EQ(write(fds[1], "r", 1), 1);
  pthread_join(thread, nullptr);
  EXPECT_EQ(blocked.result, 1);
  EXPECT_GE(g_handled.load(), before + 3);
  close(fds[0]);
  close(fds[1]);
}

TEST(SignalTest, PollAndSleepFailWithEintrEvenWithSaRestart) {
  ASSERT_EQ(pipe(g_handler_pipe), 0);
  InstallHandler(SA_RESTART);
  struct Arg {
    pid_t tid = 0;
    int poll_result = 0, poll_error = 0, sleep_result = 0, sleep_error = 0;
    int fd;
  } arg;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  arg.fd = fds[0];
  pthread_t thread;
  pthread_create(
      &thread, nullptr,
      [](void* raw) -> void* {
        Arg* a = static_cast<Arg*>(raw);
        __atomic_store_n(&a->tid, Tid(), __ATOMIC_SEQ_CST);
        pollfd p = {a->fd, POLLIN, 0};
        a->poll_result = poll(&p, 1, -1);
        a->poll_error = errno;
        timespec long_sleep = {100, 0};
        a->sleep_result = nanosleep(&long_sleep, &long_sleep);
        a->sleep_error = errno;
        return nullptr;
      },
      &arg);
  while (__atomic_load_n(&arg.tid, __ATOMIC_SEQ_CST) == 0) sched_yield();
  ASSERT_TRUE(WaitUntilBlocked(arg.tid));  // in poll
  pthread_kill(thread, SIGUSR1);
  for (const int64_t end = NowNs() + kDeadlineNs;
       __atomic_load_n(&arg.poll_result, __ATOMIC_SEQ_CST) == 0 &&
       NowNs() < end;) {
    sched_yield();
  }
  ASSERT_TRUE(WaitUntilBlocked(arg.tid));  // in nanosleep
  pthread_kill(thread, SIGUSR1);
  pthread_join(thread, nullptr);
  EXPECT_EQ(arg.poll_result, -1);
  EXPECT_EQ(arg.poll_error, EINTR);
  EXPECT_EQ(arg.sleep_result, -1);
  EXPECT_EQ(arg.sleep_error, EINTR);
  close(fds[0]);
  close(fds[1]);
}

// --- cancellation points stay cancellation points ---

std::atomic<int> g_cleanups{0};

struct CancelCase {
  const char* name;
  void* (*body)(void*);
};

int g_cancel_pipe[2];
pthread_mutex_t g_cancel_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cancel_cond = PTHREAD_COND_INITIALIZER;
sem_t g_cancel_sem;
std::atomic<pid_t> g_cancel_tid{0};

void* CancelInRead(void*) {
  g_cancel_tid.store(Tid());
  char byte;
  read(g_cancel_pipe[0], &byte, 1);
  return nullptr;
}

void UnlockCleanup(void*) {
  g_cleanups.fetch_add(1);
  pthread_mutex_unlock(&g_cancel_mutex);
}

void* CancelInCondWait(void*) {
  pthread_mutex_lock(&g_cancel_mutex);
  pthread_cleanup_push(UnlockCleanup, nullptr);
  g_cancel_tid.store(Tid());
  for (;;) pthread_cond_wait(&g_cancel_cond, &g_cancel_mutex);
  pthread_cleanup_pop(1);
  return nullptr;
}

void* CancelInSemWait(void*) {
  g_cancel_tid.store(Tid());
  sem_wait(&g_cancel_sem);
  return nullptr;
}

void* CancelInPoll(void*) {
  g_cancel_tid.store(Tid());
  pollfd p = {g_cancel_pipe[0], POLLIN, 0};
  poll(&p, 1, -1);
  return nullptr;
}

void* CancelInSleep(void*) {
  g_cancel_tid.store(Tid());
  timespec long_sleep = {100, 0};
  nanosleep(&long_sleep, nullptr);
  return nullptr;
}

TEST(CancelTest, BlockedCallsAreCancelled) {
  ASSERT_EQ(pipe(g_cancel_pipe), 0);
  ASSERT_EQ(sem_init(&g_cancel_sem, 0, 0), 0);
  const CancelCase cases[] = {{"read", CancelInRead},
                              {"pthread_cond_wait", CancelInCondWait},
                              {"sem_wait", CancelInSemWait},
                              {"poll", CancelInPoll},
                              {"nanosleep", CancelInSleep}};
  for (const CancelCase& c : cases) {
    g_cancel_tid.store(0);
    pthread_t thread;
    ASSERT_EQ(pthread_create(&thread, nullptr, c.body, nullptr), 0);
    while (g_cancel_tid.load() == 0) sched_yield();
    ASSERT_TRUE(WaitUntilBlocked(g_cancel_tid.load())) << c.name;
    ASSERT_EQ(pthread_cancel(thread), 0);
    void* result = nullptr;
    ASSERT_EQ(pthread_join(thread, &result), 0);
    EXPECT_EQ(result, PTHREAD_CANCELED) << c.name;
  }
  EXPECT_EQ(g_cleanups.load(), 1);  // the condition wait's, mutex held
  EXPECT_EQ(pthread_mutex_trylock(&g_cancel_mutex), 0);
  pthread_mutex_unlock(&g_cancel_mutex);
}

TEST(CancelTest, SemWaitActsOnAPendingCancelEvenWhenAvailable) {
  sem_t sem;
  ASSERT_EQ(sem_init(&sem, 0, 1), 0);
  pthread_t thread;
  pthread_create(
      &thread, nullptr,
      [](void* raw) -> void* {
        int old;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
        pthread_cancel(pthread_self());
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
        sem_wait(static_cast<sem_t*>(raw));
        return nullptr;  // not reached
      },
      &sem);
  void* result = nullptr;
  pthread_join(thread, &result);
  EXPECT_EQ(result, PTHREAD_CANCELED);
  int value = -1;
  sem_getvalue(&sem, &value);
  EXPECT_EQ(value, 1);  // not taken
}

}  // namespace
