// Threads that spend their wall-clock time in ways the wall profile sees:
// CPU (the CPU timer) and interposed waits (the mutex and block profiles).
// Each named thread runs for SECONDS and measures its own wall-clock time
// (CLOCK_MONOTONIC, from its first to its last instruction); main prints
// one JSON line:
//   {"threads": [{"tid": N, "name": "spin-sleep", "wall_ns": N}, ...]}
//
//   spin-sleep   spins 1 ms (CPU), sleeps 19 ms (nanosleep)
//   lock-a/b     take one mutex in turn and hold it sleeping 4 ms, then
//                sleep 1 ms: half their time in the lock's wait
//   pipe-reader  blocking reads of a pipe that pipe-writer writes a byte
//                to every 5 ms (nanosleep)
//   poller       poll() with a 20 ms timeout on a pipe never written
//   epoller      epoll_wait() with a 10 ms timeout on an empty epoll set
//   cond         pthread_cond_timedwait() with a 15 ms timeout
//
// Little CPU (the spinner's 5%), so that on a loaded machine the time a
// thread spends runnable but not running while it computes (which no
// profile sees) stays a small share of its wall-clock time.
//
// Usage: wall_workload [seconds=3]
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace {

uint64_t g_seconds_ns = 3'000'000'000;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

__attribute__((noinline)) void SpinFor(uint64_t ns) {
  const uint64_t end = NowNs() + ns;
  while (NowNs() < end) {
  }
}

__attribute__((noinline)) void SleepMs(int ms) {
  timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

struct Thread {
  const char* name;
  void (*body)(uint64_t end_ns);
  pthread_t handle;
  long tid;
  uint64_t wall_ns;
};

__attribute__((noinline)) void SpinSleep(uint64_t end) {
  while (NowNs() < end) {
    SpinFor(1'000'000);
    SleepMs(19);
  }
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void Locker(uint64_t end) {
  while (NowNs() < end) {
    pthread_mutex_lock(&g_mutex);
    SleepMs(4);
    pthread_mutex_unlock(&g_mutex);
    SleepMs(1);
  }
}

int g_pipe[2];

__attribute__((noinline)) void PipeReader(uint64_t /*end*/) {
  char c;
  while (read(g_pipe[0], &c, 1) == 1) {
  }
}

__attribute__((noinline)) void PipeWriter(uint64_t end) {
  while (NowNs() < end) {
    SleepMs(5);
    if (write(g_pipe[1], "x", 1) != 1) abort();
  }
  close(g_pipe[1]);  // the reader's end of file
}

__attribute__((noinline)) void Poller(uint64_t end) {
  int quiet[2];
  if (pipe(quiet) != 0) abort();
  pollfd fd = {quiet[0], POLLIN, 0};
  while (NowNs() < end) poll(&fd, 1, 20);
}

__attribute__((noinline)) void Epoller(uint64_t end) {
  const int epoll = epoll_create1(0);
  if (epoll < 0) abort();
  epoll_event event;
  while (NowNs() < end) epoll_wait(epoll, &event, 1, 10);
}

__attribute__((noinline)) void CondWaiter(uint64_t end) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&mutex);
  while (NowNs() < end) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 15'000'000;
    if (deadline.tv_nsec >= 1'000'000'000) {
      deadline.tv_nsec -= 1'000'000'000;
      ++deadline.tv_sec;
    }
    pthread_cond_timedwait(&cond, &mutex, &deadline);
  }
  pthread_mutex_unlock(&mutex);
}

void* Run(void* arg) {
  Thread* t = static_cast<Thread*>(arg);
  const uint64_t start = NowNs();
  t->tid = syscall(SYS_gettid);
  pthread_setname_np(pthread_self(), t->name);
  t->body(start + g_seconds_ns);
  t->wall_ns = NowNs() - start;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_seconds_ns = uint64_t(atof(argv[1]) * 1e9);
  if (pipe(g_pipe) != 0) return 1;
  Thread threads[] = {
      {"spin-sleep", SpinSleep},   {"lock-a", Locker},
      {"lock-b", Locker},          {"pipe-reader", PipeReader},
      {"pipe-writer", PipeWriter}, {"poller", Poller},
      {"epoller", Epoller},        {"cond", CondWaiter},
  };
  for (Thread& t : threads) {
    if (pthread_create(&t.handle, nullptr, Run, &t) != 0) return 1;
  }
  for (Thread& t : threads) pthread_join(t.handle, nullptr);
  printf("{\"threads\": [");
  const char* sep = "";
  for (const Thread& t : threads) {
    printf("%s{\"tid\": %ld, \"name\": \"%s\", \"wall_ns\": %llu}", sep, t.tid,
           t.name, static_cast<unsigned long long>(t.wall_ns));
    sep = ", ";
  }
  printf("]}\n");
  return 0;
}
