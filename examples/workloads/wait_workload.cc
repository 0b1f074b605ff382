// Known off-CPU waits, each in its own function, for the mutex and block
// profiles' accuracy tests: LOCKERS threads contend one mutex in
// ContendMutex (each holds it HOLD_US microseconds, ROUNDS times), one
// thread reads a pipe in ReadPipe (a byte every PERIOD_MS milliseconds,
// EVENTS times), one waits on a condition variable in WaitCondition
// (signalled as often). Each measures its own waits around the call
// (CLOCK_MONOTONIC) and main prints their totals as one JSON line:
//   {"mutex_wait_ns": N, "pipe_read_ns": N, "cond_wait_ns": N, ...}
//
// Usage: wait_workload [lockers=4] [rounds=1500] [hold_us=200]
//                      [events=60] [period_ms=20]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace {

int g_rounds = 1500;
int g_hold_us = 200;
int g_events = 60;
int g_period_ms = 20;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void SpinFor(uint64_t ns) {
  const uint64_t end = NowNs() + ns;
  while (NowNs() < end) {
  }
}

void SleepMs(int ms) {
  timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint64_t> g_mutex_wait_ns{0};

__attribute__((noinline)) void ContendMutex() {
  uint64_t waited = 0;
  for (int i = 0; i < g_rounds; ++i) {
    const uint64_t start = NowNs();
    pthread_mutex_lock(&g_mutex);
    waited += NowNs() - start;
    SpinFor(uint64_t(g_hold_us) * 1000);
    pthread_mutex_unlock(&g_mutex);
  }
  g_mutex_wait_ns.fetch_add(waited);
}

void* Locker(void*) {
  ContendMutex();
  return nullptr;
}

int g_pipe[2];
uint64_t g_pipe_read_ns = 0;

__attribute__((noinline)) void ReadPipe() {
  char byte;
  for (int i = 0; i < g_events; ++i) {
    const uint64_t start = NowNs();
    if (read(g_pipe[0], &byte, 1) != 1) abort();
    g_pipe_read_ns += NowNs() - start;
  }
}

void* Reader(void*) {
  ReadPipe();
  return nullptr;
}

void* PipeFeeder(void*) {
  for (int i = 0; i < g_events; ++i) {
    SleepMs(g_period_ms);
    if (write(g_pipe[1], "x", 1) != 1) abort();
  }
  return nullptr;
}

pthread_mutex_t g_cond_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
int g_signals = 0;
uint64_t g_cond_wait_ns = 0;

__attribute__((noinline)) void WaitCondition() {
  pthread_mutex_lock(&g_cond_mutex);
  for (int seen = 0; seen < g_events; ++seen) {
    while (g_signals <= seen) {
      const uint64_t start = NowNs();
      pthread_cond_wait(&g_cond, &g_cond_mutex);
      g_cond_wait_ns += NowNs() - start;
    }
  }
  pthread_mutex_unlock(&g_cond_mutex);
}

void* Waiter(void*) {
  WaitCondition();
  return nullptr;
}

void* Signaller(void*) {
  for (int i = 0; i < g_events; ++i) {
    SleepMs(g_period_ms);
    pthread_mutex_lock(&g_cond_mutex);
    ++g_signals;
    pthread_cond_signal(&g_cond);
    pthread_mutex_unlock(&g_cond_mutex);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int lockers = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) g_rounds = atoi(argv[2]);
  if (argc > 3) g_hold_us = atoi(argv[3]);
  if (argc > 4) g_events = atoi(argv[4]);
  if (argc > 5) g_period_ms = atoi(argv[5]);
  if (lockers < 1 || lockers > 64 || g_rounds < 1 || g_hold_us < 0 ||
      g_events < 1 || g_period_ms < 1 || pipe(g_pipe) != 0) {
    fprintf(stderr,
            "usage: wait_workload [lockers] [rounds] [hold_us] [events] "
            "[period_ms]\n");
    return 2;
  }
  pthread_t threads[68];
  int count = 0;
  for (int i = 0; i < lockers; ++i) {
    pthread_create(&threads[count++], nullptr, Locker, nullptr);
  }
  pthread_create(&threads[count++], nullptr, Reader, nullptr);
  pthread_create(&threads[count++], nullptr, PipeFeeder, nullptr);
  pthread_create(&threads[count++], nullptr, Waiter, nullptr);
  pthread_create(&threads[count++], nullptr, Signaller, nullptr);
  for (int i = 0; i < count; ++i) pthread_join(threads[i], nullptr);
  printf(
      "{\"mutex_wait_ns\": %llu, \"pipe_read_ns\": %llu, "
      "\"cond_wait_ns\": %llu, \"lockers\": %d, \"rounds\": %d}\n",
      (unsigned long long)g_mutex_wait_ns.load(),
      (unsigned long long)g_pipe_read_ns, (unsigned long long)g_cond_wait_ns,
      lockers, g_rounds);
  return 0;
}
