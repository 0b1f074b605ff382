// The off-CPU interposers' cost (tools/bench.d/offcpu), one mode per run,
// printing "<mode> <median ns per operation>" (median of 21 batches):
//   lock       uncontended pthread_mutex_lock/unlock pairs, one thread
//              (thread CPU time per pair)
//   contended  4 threads locking one mutex around a short critical section
//              (process CPU time per lock: contention makes futex waits)
//   read       pread of 64 bytes of a cached regular file (thread CPU time
//              per call; the descriptor never waits: one table load)
//   pipe       a byte written to a pipe and read back (thread CPU time per
//              pair; the descriptor may block, so the read is timed)
//
//   wait_bench MODE [batch]
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace {

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
volatile long g_counter = 0;

double LockBatch(long n) {
  const double start = ThreadCpuNs();
  for (long i = 0; i < n; ++i) {
    pthread_mutex_lock(&g_mutex);
    g_counter = g_counter + 1;
    pthread_mutex_unlock(&g_mutex);
  }
  return (ThreadCpuNs() - start) / n;
}

long g_per_thread = 0;
void* Contender(void*) {
  for (long i = 0; i < g_per_thread; ++i) {
    pthread_mutex_lock(&g_mutex);
    for (int k = 0; k < 20; ++k) g_counter = g_counter + 1;
    pthread_mutex_unlock(&g_mutex);
  }
  return nullptr;
}

double ContendedBatch(long n) {
  constexpr int kThreads = 4;
  g_per_thread = n / kThreads;
  const double start = ProcessCpuNs();
  pthread_t threads[kThreads];
  for (pthread_t& t : threads) pthread_create(&t, nullptr, Contender, nullptr);
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  return (ProcessCpuNs() - start) / (g_per_thread * kThreads);
}

int g_file = -1;
double ReadBatch(long n) {
  char buf[64];
  const double start = ThreadCpuNs();
  for (long i = 0; i < n; ++i) {
    if (pread(g_file, buf, sizeof(buf), (i % 64) * 64) != 64) abort();
  }
  return (ThreadCpuNs() - start) / n;
}

int g_pipe[2];
double PipeBatch(long n) {
  char byte = 'x';
  const double start = ThreadCpuNs();
  for (long i = 0; i < n; ++i) {
    if (write(g_pipe[1], &byte, 1) != 1 || read(g_pipe[0], &byte, 1) != 1) {
      abort();
    }
  }
  return (ThreadCpuNs() - start) / n;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "lock";
  double (*batch)(long) = nullptr;
  long n = 0;
  if (strcmp(mode, "lock") == 0) {
    batch = LockBatch;
    n = 2'000'000;
  } else if (strcmp(mode, "contended") == 0) {
    batch = ContendedBatch;
    n = 200'000;
  } else if (strcmp(mode, "read") == 0) {
    char path[] = "/tmp/ringprof-wait-bench-XXXXXX";
    g_file = mkstemp(path);
    unlink(path);
    char block[4096] = {1};
    if (g_file < 0 || write(g_file, block, sizeof(block)) != sizeof(block)) {
      return 1;
    }
    batch = ReadBatch;
    n = 200'000;
  } else if (strcmp(mode, "pipe") == 0) {
    if (pipe(g_pipe) != 0) return 1;
    batch = PipeBatch;
    n = 100'000;
  } else {
    fprintf(stderr, "usage: wait_bench lock|contended|read|pipe [batch]\n");
    return 2;
  }
  if (argc > 2) n = atol(argv[2]);
  batch(n / 10);  // warm up
  std::vector<double> results;
  for (int i = 0; i < 21; ++i) results.push_back(batch(n));
  std::nth_element(results.begin(), results.begin() + 10, results.end());
  printf("%s %.2f\n", mode, results[10]);
  return 0;
}
