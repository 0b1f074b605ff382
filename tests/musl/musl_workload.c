// The musl root's workload (tests/musl): known CPU shares and allocated
// bytes through every allocation entry point, a fork child, an exec'd
// child and a non-zero exit status. Built with musl-gcc by the test.
//
//   musl_workload TRUTH.json CPU_SECONDS   the workload; exits 5
//   musl_workload child                    a short exec'd child; exits 0
//
// For CPU_SECONDS of thread CPU it runs 20 ms chunks of SpinCompute (50%),
// AllocHeavy (30%) and MixedWork (20%), measuring each chunk's thread CPU
// time and the bytes it requests, and writes the truth in the JSON shape
// tests/accuracy/compare.py reads (with its pid: the children's profiles
// are not part of it). AllocHeavy goes round malloc, calloc,
// realloc (growing a block), reallocarray, posix_memalign, aligned_alloc,
// memalign and valloc. stdout carries nothing that depends on timing, so it
// must be the same with and without the emitter.
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t ThreadCpuNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t g_rng = 88172645463325252ull;
static uint64_t Next(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

static volatile uint64_t g_sink;

static uint64_t Mix(uint64_t x, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

__attribute__((noinline)) void SpinCompute(int units) {
  uint64_t x = Next() | 1;
  for (int u = 0; u < units; ++u) x = Mix(x, 512);
  g_sink += x;
}

// One block through entry point `which`; returns the bytes requested.
static int64_t AllocateOne(int which, size_t size) {
  void* p = NULL;
  int64_t bytes = (int64_t)size;
  switch (which) {
    case 0: p = malloc(size); break;
    case 1: p = calloc(size / 16, 16); bytes = (int64_t)(size / 16 * 16); break;
    case 2: {
      p = malloc(size / 2);
      if (p != NULL) memset(p, 1, size / 2);
      void* q = realloc(p, size);
      if (q != NULL) p = q;
      bytes = (int64_t)(size / 2 + size);
      break;
    }
    case 3: p = reallocarray(NULL, size / 8, 8); bytes = (int64_t)(size / 8 * 8); break;
    case 4: if (posix_memalign(&p, 64, size) != 0) p = NULL; break;
    case 5: p = aligned_alloc(256, (size + 255) / 256 * 256); bytes = (int64_t)((size + 255) / 256 * 256); break;
    case 6: p = memalign(128, size); break;
    default: p = valloc(size); break;
  }
  if (p == NULL) abort();
  ((volatile char*)p)[0] = (char)size;
  g_sink += malloc_usable_size(p) >= (size_t)1;
  free(p);
  return bytes;
}

__attribute__((noinline)) int64_t AllocHeavy(int units) {
  int64_t bytes = 0;
  for (int u = 0; u < units; ++u) {
    bytes += AllocateOne(u % 8, 64 + Next() % 4033);
  }
  return bytes;
}

__attribute__((noinline)) int64_t MixedWork(int units) {
  int64_t bytes = 0;
  uint64_t x = Next();
  for (int u = 0; u < units; ++u) {
    const size_t size = 16384 + Next() % 16385;
    uint64_t* block = malloc(size);
    if (block == NULL) abort();
    for (size_t i = 0; i < size / 8; i += 64) block[i] = x = Mix(x, 24);
    g_sink += block[0];
    free(block);
    bytes += (int64_t)size;
  }
  return bytes;
}

struct Tally {
  int64_t cpu_ns, alloc_bytes;
};

static void Work(double cpu_seconds, struct Tally tally[3]) {
  const int64_t start = ThreadCpuNs();
  const int64_t budget = (int64_t)(cpu_seconds * 1e9);
  int units[3] = {16, 256, 16};  // resized to ~20 ms chunks as measured
  while (ThreadCpuNs() - start < budget) {
    const int pick = (int)(Next() % 100);
    const int fn = pick < 50 ? 0 : pick < 80 ? 1 : 2;
    const int64_t before = ThreadCpuNs();
    int64_t bytes = 0;
    if (fn == 0) SpinCompute(units[0]);
    if (fn == 1) bytes = AllocHeavy(units[1]);
    if (fn == 2) bytes = MixedWork(units[2]);
    const int64_t spent = ThreadCpuNs() - before;
    tally[fn].cpu_ns += spent;
    tally[fn].alloc_bytes += bytes;
    if (spent > 0 && spent < 10000000 && units[fn] < (1 << 24)) units[fn] *= 2;
  }
}

static void WriteTruth(const char* path, int64_t process_cpu_ns,
                       const struct Tally tally[3]) {
  static const char* const kNames[3] = {"SpinCompute", "AllocHeavy",
                                        "MixedWork"};
  FILE* out = fopen(path, "w");
  if (out == NULL) {
    perror(path);
    exit(1);
  }
  fprintf(out, "{\"pid\": %d, \"process_cpu_ns\": %lld, \"functions\": {",
          (int)getpid(), (long long)process_cpu_ns);
  for (int i = 0; i < 3; ++i) {
    fprintf(out, "%s\"%s\": {\"cpu_ns\": %lld, \"alloc_bytes\": %lld}",
            i ? ", " : "", kNames[i], (long long)tally[i].cpu_ns,
            (long long)tally[i].alloc_bytes);
  }
  fprintf(out, "}}\n");
  fclose(out);
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "child") == 0) {
    void* p = malloc(100);
    free(p);
    puts("child ran");
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s TRUTH.json CPU_SECONDS | child\n", argv[0]);
    return 2;
  }
  fflush(stdout);
  // A fork child that allocates and exits 3 (through exit: atexit runs).
  const pid_t forked = fork();
  if (forked == 0) {
    int64_t sum = 0;
    for (int i = 0; i < 2000; ++i) sum += AllocateOne(i % 8, 4096);
    g_sink += (uint64_t)sum;
    exit(3);
  }
  int status = 0;
  waitpid(forked, &status, 0);
  printf("fork child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  // Short exec'd children, as a script would start them.
  for (int i = 0; i < 3; ++i) {
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      execl(argv[0], argv[0], "child", (char*)NULL);
      _exit(127);
    }
    waitpid(child, &status, 0);
    printf("exec child exited %d\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  struct Tally tally[3] = {{0, 0}, {0, 0}, {0, 0}};
  Work(atof(argv[2]), tally);
  WriteTruth(argv[1], ThreadCpuNs(), tally);
  puts("done");
  return 5;
}
