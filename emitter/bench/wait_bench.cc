// The off-CPU interposers' cost (tools/bench.d/offcpu), one mode per run,
// printing "<mode> <median ns per operation>" (median of 21 batches,
// read_added 101):
//   lock       uncontended pthread_mutex_lock/unlock pairs, one thread
//              (thread CPU time per pair)
//   contended  4 threads locking one mutex around a short critical section
//              (process CPU time per lock: contention makes futex waits)
//   read       pread of 64 bytes of a cached regular file (thread CPU time
//              per call; the descriptor never waits: one table load)
//   read_added the same preads in one process, batches through the
//              interposed pread and through the C library's own (looked up
//              in libc.so.6) alternating: median of the per-pair
//              differences, ns per call (what the wrapper adds, free of the
//              spread between processes; about 0 with nothing preloaded)
//   pipe       a byte written to a pipe and read back (thread CPU time per
//              pair; the descriptor may block, so the read is timed)
//
//   wait_bench MODE [batch]
#include <dlfcn.h>
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
using PreadFn = ssize_t (*)(int, void*, size_t, off_t);
PreadFn g_pread = pread;  // the interposed one, as the program calls it

double ReadBatch(long n) {
  char buf[64];
  const double start = ThreadCpuNs();
  for (long i = 0; i < n; ++i) {
    if (g_pread(g_file, buf, sizeof(buf), (i % 64) * 64) != 64) abort();
  }
  return (ThreadCpuNs() - start) / n;
}

// A batch through libc's own pread minus one through the interposed one.
PreadFn g_libc_pread = nullptr;
double ReadAddedBatch(long n) {
  g_pread = g_libc_pread;
  const double direct = ReadBatch(n);
  g_pread = pread;
  return ReadBatch(n) - direct;
}

int OpenCachedFile() {
  char path[] = "/tmp/ringprof-wait-bench-XXXXXX";
  const int fd = mkstemp(path);
  unlink(path);
  char block[4096] = {1};
  if (fd < 0 || write(fd, block, sizeof(block)) != sizeof(block)) return -1;
  return fd;
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
    if ((g_file = OpenCachedFile()) < 0) return 1;
    batch = ReadBatch;
    n = 200'000;
  } else if (strcmp(mode, "read_added") == 0) {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    g_libc_pread = libc != nullptr
                       ? reinterpret_cast<PreadFn>(dlsym(libc, "pread"))
                       : nullptr;
    if (g_libc_pread == nullptr || (g_file = OpenCachedFile()) < 0) return 1;
    batch = ReadAddedBatch;
    n = 20'000;
  } else if (strcmp(mode, "pipe") == 0) {
    if (pipe(g_pipe) != 0) return 1;
    batch = PipeBatch;
    n = 100'000;
  } else {
    fprintf(stderr,
            "usage: wait_bench lock|contended|read|read_added|pipe [batch]\n");
    return 2;
  }
  if (argc > 2) n = atol(argv[2]);
  batch(n / 10);  // warm up
  std::vector<double> results;
  const int batches = g_libc_pread != nullptr ? 101 : 21;
  for (int i = 0; i < batches; ++i) results.push_back(batch(n));
  std::nth_element(results.begin(), results.begin() + batches / 2,
                   results.end());
  printf("%s %.2f\n", mode, results[batches / 2]);
  return 0;
}
