// Compute only: THREADS threads each run a fixed amount of arithmetic
// (MILLIONS million rounds) with no allocation and no system call, the
// worst case for a CPU profiler that samples with signals (every sample is
// a signal). Used by tools/bench.d/gvisor.
//
// Usage: spin_threads [threads=2] [millions=300]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>

namespace {

std::atomic<uint64_t> g_sink{0};
int64_t g_rounds = 0;

__attribute__((noinline)) uint64_t SpinRounds(int64_t rounds, uint64_t x) {
  for (int64_t i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

void* Worker(void* arg) {
  const uint64_t seed = reinterpret_cast<uintptr_t>(arg) * 2654435761u + 1;
  g_sink.fetch_add(SpinRounds(g_rounds, seed), std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  const int64_t millions = argc > 2 ? atoll(argv[2]) : 300;
  if (threads < 1 || threads > 256 || millions < 1) {
    fprintf(stderr, "usage: %s [threads=2] [millions=300]\n", argv[0]);
    return 2;
  }
  g_rounds = millions * 1000000;
  pthread_t ids[256];
  for (int i = 0; i < threads; ++i) {
    pthread_create(&ids[i], nullptr, Worker,
                   reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
  }
  for (int i = 0; i < threads; ++i) pthread_join(ids[i], nullptr);
  printf("threads %d\nrounds %lld\nsink %llu\n", threads,
         static_cast<long long>(g_rounds),
         static_cast<unsigned long long>(g_sink.load()));
  return 0;
}
