// Ground truth for ringprof's accuracy suite (tests/accuracy, and
// tools/bench.d/accuracy): threads that spend known shares of their CPU in
// three known functions, measuring those shares themselves.
//
//   accuracy_workload [--threads=N] [--cpu_seconds=S] [--truth=PATH]
//                     [--chunks=C | --phases_ms=A,B]
//
//  - SpinCompute: pure arithmetic, never allocates (invisible to allocation
//    sampling);
//  - AllocHeavy:  malloc/new of 32 B..2 KiB blocks, written and freed;
//  - MixedWork:   16..32 KiB blocks with a compute loop over each.
//
// Each thread runs until it has used S seconds of CPU, in chunks of 15 to
// 45 ms, picking SpinCompute / AllocHeavy / MixedWork with probabilities
// 50% / 30% / 20% from a fixed-seed generator. Chunks several sampling
// periods long keep the comparison's sampling noise small (a periodic
// sampler errs by at most about one period per chunk boundary), so what the
// suite measures is bias. Around every call it reads
// its CPU clock (CLOCK_THREAD_CPUTIME_ID), and the functions count the bytes
// they request, so the truth is measured, not assumed. With --chunks=C each
// thread instead runs exactly C chunks of fixed work (a deterministic
// amount, for overhead benchmarks: tools/bench.d/cpu_timer). With
// --phases_ms=A,B each thread instead alternates strictly periodic phases on
// its CPU clock: SpinCompute until A ms past the cycle's start, then
// MixedWork until the cycle's end (A + B ms), cycle after cycle from the
// thread's start, so the phases stay in step with a sampler that fires
// every fixed amount of thread CPU time (tests/accuracy/README.md,
// "Periodic work"). At the end the truth is written as JSON (to PATH, else
// stdout):
//
//   {"threads": N, "wall_ns": ..., "process_cpu_ns": ...,
//    "functions": {"SpinCompute": {"cpu_ns": ..., "alloc_bytes": ...,
//                                   "allocations": ..., "calls": ...}, ...}}
//
// process_cpu_ns is CLOCK_PROCESS_CPUTIME_ID at exit: everything the
// process used, so shares are function cpu_ns over it and "other" is the
// rest (start-up, the loop itself, the main thread).
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t ClockNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Keeps the compiler from removing a value or an allocation it cannot see
// being used.
template <typename T>
inline void KeepAlive(T* p) {
  asm volatile("" : : "r"(p) : "memory");
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed | 1) {}
  uint64_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }

 private:
  uint64_t state_;
};

std::atomic<uint64_t> g_sink{0};

enum Function { kSpinCompute, kAllocHeavy, kMixedWork, kFunctionCount };
constexpr const char* kFunctionNames[kFunctionCount] = {
    "SpinCompute", "AllocHeavy", "MixedWork"};
// Probability of each function per chunk, in percent.
constexpr int kPercent[kFunctionCount] = {50, 30, 20};

struct Tally {
  int64_t cpu_ns = 0;
  int64_t alloc_bytes = 0;
  int64_t allocations = 0;
  int64_t calls = 0;
  int64_t units = 0;  // work units done, to size later chunks
};

// Arithmetic the functions share; always inlined so its time belongs to the
// function that runs it.
__attribute__((always_inline)) inline uint64_t Mix(uint64_t x, int rounds) {
  double d = static_cast<double>(x & 0xffff);
  for (int i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    d = d * 1.0000001 + static_cast<double>(x & 0xff);
  }
  return x ^ static_cast<uint64_t>(d);
}

// Pure computation: no allocation, no system call.
__attribute__((noinline)) uint64_t SpinCompute(int64_t units, uint64_t seed) {
  uint64_t x = seed | 1;
  for (int64_t u = 0; u < units; ++u) x = Mix(x, 256);
  return x;
}

// Allocation-heavy: many small-to-medium blocks, each written and freed.
__attribute__((noinline)) void AllocHeavy(int64_t units, Rng& rng,
                                          Tally& tally) {
  for (int64_t u = 0; u < units; ++u) {
    const size_t size = 32 + rng.Next() % 2017;
    char* block;
    if (u % 2 == 0) {
      block = static_cast<char*>(malloc(size));
    } else {
      block = new char[size];
    }
    memset(block, static_cast<int>(u), size);
    block[0] = static_cast<char>(Mix(rng.Next(), 64));
    KeepAlive(block);
    if (u % 2 == 0) {
      free(block);
    } else {
      delete[] block;
    }
    tally.alloc_bytes += static_cast<int64_t>(size);
    ++tally.allocations;
  }
}

// Mixed: one larger block per unit, with computation over it.
__attribute__((noinline)) uint64_t MixedWork(int64_t units, Rng& rng,
                                             Tally& tally) {
  uint64_t x = rng.Next();
  for (int64_t u = 0; u < units; ++u) {
    const size_t size = 16384 + rng.Next() % 16385;
    uint64_t* block = static_cast<uint64_t*>(malloc(size));
    const size_t words = size / sizeof(uint64_t);
    for (size_t i = 0; i < words; i += 64) {
      x = Mix(x, 24);
      block[i] = x;
    }
    KeepAlive(block);
    free(block);
    tally.alloc_bytes += static_cast<int64_t>(size);
    ++tally.allocations;
  }
  return x;
}

// Phase mode: runs SpinCompute / MixedWork in slices of about 40 us until
// the thread's CPU clock reaches deadline_ns; returns the clock. The clock
// reads are inside the function's frame, so its samples and its measured
// time agree on them.
__attribute__((noinline)) int64_t SpinComputeUntil(int64_t deadline_ns,
                                                   uint64_t seed) {
  int64_t now_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  while (now_ns < deadline_ns) {
    seed = SpinCompute(100, seed);
    now_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  }
  g_sink.fetch_add(seed, std::memory_order_relaxed);
  return now_ns;
}

__attribute__((noinline)) int64_t MixedWorkUntil(int64_t deadline_ns, Rng& rng,
                                                 Tally& tally) {
  int64_t now_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  while (now_ns < deadline_ns) {
    g_sink.fetch_add(MixedWork(20, rng, tally), std::memory_order_relaxed);
    now_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  }
  return now_ns;
}

struct Options {
  int threads = 2;
  double cpu_seconds = 2.0;
  int chunks = 0;  // > 0: fixed work instead of a CPU budget
  // > 0: periodic phases (SpinCompute, then MixedWork) instead of chunks.
  double phase_ns[2] = {0, 0};
  std::string truth_path;
};

std::mutex g_mutex;
Tally g_totals[kFunctionCount];

void AddToTotals(const Tally (&tally)[kFunctionCount]) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int f = 0; f < kFunctionCount; ++f) {
    g_totals[f].cpu_ns += tally[f].cpu_ns;
    g_totals[f].alloc_bytes += tally[f].alloc_bytes;
    g_totals[f].allocations += tally[f].allocations;
    g_totals[f].calls += tally[f].calls;
  }
}

// Phase mode: cycle k runs SpinCompute up to start + k (A + B) + A and
// MixedWork up to start + (k + 1) (A + B), on the thread's CPU clock.
void PhaseWorker(int index, const Options& options) {
  Rng rng(0x9E3779B97F4A7C15ull * (index + 1));
  Tally tally[kFunctionCount];
  const double cycle_ns = options.phase_ns[0] + options.phase_ns[1];
  const int64_t budget_ns = static_cast<int64_t>(options.cpu_seconds * 1e9);
  const int64_t start_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  int64_t now_ns = start_ns;
  for (int64_t cycle = 0; now_ns - start_ns < budget_ns; ++cycle) {
    const double cycle_start = static_cast<double>(start_ns) + cycle * cycle_ns;
    const int64_t spin_end =
        static_cast<int64_t>(cycle_start + options.phase_ns[0]);
    const int64_t mixed_end = static_cast<int64_t>(cycle_start + cycle_ns);
    const int64_t before = ClockNs(CLOCK_THREAD_CPUTIME_ID);
    const int64_t middle = SpinComputeUntil(spin_end, rng.Next());
    now_ns = MixedWorkUntil(mixed_end, rng, tally[kMixedWork]);
    tally[kSpinCompute].cpu_ns += middle - before;
    tally[kMixedWork].cpu_ns += now_ns - middle;
    ++tally[kSpinCompute].calls;
    ++tally[kMixedWork].calls;
  }
  AddToTotals(tally);
}

void Worker(int index, const Options& options) {
  if (options.phase_ns[0] > 0) {
    PhaseWorker(index, options);
    return;
  }
  Rng rng(0x9E3779B97F4A7C15ull * (index + 1));
  Tally tally[kFunctionCount];
  // First guesses of work units per chunk; refined from measured CPU.
  int64_t units_per_chunk[kFunctionCount] = {1000, 2000, 100};
  constexpr int64_t kChunkNs = 30000000;
  const int64_t budget_ns = static_cast<int64_t>(options.cpu_seconds * 1e9);
  const int64_t start_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  int64_t now_ns = start_ns;
  // Fixed-work mode: about 30 ms of CPU per chunk on this machine's cores.
  constexpr int64_t kFixedUnits[kFunctionCount] = {75000, 210000, 13600};
  if (options.chunks > 0) {
    for (int f = 0; f < kFunctionCount; ++f)
      units_per_chunk[f] = kFixedUnits[f];
  }
  int chunks_done = 0;
  while (options.chunks > 0 ? chunks_done++ < options.chunks
                            : now_ns - start_ns < budget_ns) {
    const int pick = static_cast<int>(rng.Next() % 100);
    const Function fn = pick < kPercent[0]                 ? kSpinCompute
                        : pick < kPercent[0] + kPercent[1] ? kAllocHeavy
                                                           : kMixedWork;
    // 0.5x..1.5x of a chunk, so chunk ends do not line up with clock ticks.
    const int64_t units =
        1 + units_per_chunk[fn] / 2 +
        static_cast<int64_t>(rng.Next() % (units_per_chunk[fn] + 1));
    const int64_t before = ClockNs(CLOCK_THREAD_CPUTIME_ID);
    switch (fn) {
      case kSpinCompute:
        g_sink.fetch_add(SpinCompute(units, rng.Next()),
                         std::memory_order_relaxed);
        break;
      case kAllocHeavy:
        AllocHeavy(units, rng, tally[fn]);
        break;
      case kMixedWork:
        g_sink.fetch_add(MixedWork(units, rng, tally[fn]),
                         std::memory_order_relaxed);
        break;
      default:
        break;
    }
    now_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
    Tally& t = tally[fn];
    t.cpu_ns += now_ns - before;
    t.units += units;
    ++t.calls;
    // Units per chunk from the cumulative rate once 10 ms are measured
    // (gVisor's thread CPU clock advances in 10 ms steps); until then, grow.
    if (options.chunks > 0) {
      // Fixed work: no adaptation.
    } else if (t.cpu_ns >= 10000000) {
      units_per_chunk[fn] =
          1 + static_cast<int64_t>(static_cast<double>(t.units) * kChunkNs /
                                   static_cast<double>(t.cpu_ns));
    } else {
      units_per_chunk[fn] *= 4;
    }
  }
  AddToTotals(tally);
}

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strncmp(arg, "--threads=", 10) == 0) {
      options->threads = atoi(arg + 10);
    } else if (strncmp(arg, "--cpu_seconds=", 14) == 0) {
      options->cpu_seconds = atof(arg + 14);
    } else if (strncmp(arg, "--chunks=", 9) == 0) {
      options->chunks = atoi(arg + 9);
    } else if (strncmp(arg, "--phases_ms=", 12) == 0) {
      double a = 0, b = 0;
      if (sscanf(arg + 12, "%lf,%lf", &a, &b) != 2 || !(a > 0) || !(b > 0)) {
        fprintf(stderr, "--phases_ms=A,B: two positive numbers of ms\n");
        return false;
      }
      options->phase_ns[0] = a * 1e6;
      options->phase_ns[1] = b * 1e6;
    } else if (strncmp(arg, "--truth=", 8) == 0) {
      options->truth_path = arg + 8;
    } else {
      fprintf(stderr, "unknown argument: %s\n", arg);
      return false;
    }
  }
  if (options->threads < 1 || options->threads > 256 ||
      !(options->cpu_seconds > 0)) {
    fprintf(stderr, "--threads in [1, 256], --cpu_seconds > 0\n");
    return false;
  }
  if (options->chunks > 0 && options->phase_ns[0] > 0) {
    fprintf(stderr, "--chunks and --phases_ms exclude each other\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    fprintf(stderr,
            "usage: %s [--threads=N] [--cpu_seconds=S] [--truth=PATH] "
            "[--chunks=C | --phases_ms=A,B]\n",
            argv[0]);
    return 2;
  }
  const int64_t wall_start = ClockNs(CLOCK_MONOTONIC);
  std::vector<std::thread> threads;
  for (int i = 0; i < options.threads; ++i) {
    threads.emplace_back(Worker, i, std::cref(options));
  }
  for (auto& t : threads) t.join();
  const int64_t wall_ns = ClockNs(CLOCK_MONOTONIC) - wall_start;
  const int64_t process_cpu_ns = ClockNs(CLOCK_PROCESS_CPUTIME_ID);

  FILE* out = stdout;
  if (!options.truth_path.empty()) {
    out = fopen(options.truth_path.c_str(), "w");
    if (out == nullptr) {
      perror(options.truth_path.c_str());
      return 1;
    }
  }
  fprintf(out,
          "{\"threads\": %d, \"wall_ns\": %lld, \"process_cpu_ns\": %lld,\n"
          " \"functions\": {",
          options.threads, static_cast<long long>(wall_ns),
          static_cast<long long>(process_cpu_ns));
  for (int f = 0; f < kFunctionCount; ++f) {
    fprintf(out,
            "%s\n  \"%s\": {\"cpu_ns\": %lld, \"alloc_bytes\": %lld, "
            "\"allocations\": %lld, \"calls\": %lld}",
            f == 0 ? "" : ",", kFunctionNames[f],
            static_cast<long long>(g_totals[f].cpu_ns),
            static_cast<long long>(g_totals[f].alloc_bytes),
            static_cast<long long>(g_totals[f].allocations),
            static_cast<long long>(g_totals[f].calls));
  }
  fprintf(out, "}}\n");
  if (out != stdout) fclose(out);
  return 0;
}
