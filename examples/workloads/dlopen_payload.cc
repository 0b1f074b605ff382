// A library the dlopen workload loads at run time; it allocates (or spins
// on the CPU) from a function of its own so that a test can find that
// function in the stacks.
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

extern "C" {

__attribute__((noinline)) uint64_t PayloadBuildBuffers(int blocks) {
  uint64_t bytes = 0;
  for (int i = 0; i < blocks; ++i) {
    const size_t size = (1 << 20) + 32 * i;  // recorded at default settings
    void* volatile block = malloc(size);
    free(block);
    bytes += size;
  }
  return bytes;
}

__attribute__((visibility("default"))) uint64_t PayloadAllocate(int blocks) {
  const uint64_t bytes = PayloadBuildBuffers(blocks);
  asm volatile("" ::: "memory");  // keep this frame (no tail call)
  return bytes;
}

// Spins until the thread has used `cpu_ns` of CPU time, allocating nothing;
// returns a value computed on the way (so the loop is kept).
__attribute__((noinline)) uint64_t PayloadSpinLoop(uint64_t cpu_ns) {
  timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  uint64_t value = 1;
  for (;;) {
    for (int i = 0; i < 100000; ++i) value = value * 6364136223846793005u + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    const uint64_t used =
        static_cast<uint64_t>(now.tv_sec - start.tv_sec) * 1000000000u +
        now.tv_nsec - start.tv_nsec;
    if (used >= cpu_ns) return value;
  }
}

__attribute__((visibility("default"))) uint64_t PayloadSpin(uint64_t cpu_ns) {
  const uint64_t value = PayloadSpinLoop(cpu_ns);
  asm volatile("" ::: "memory");  // keep this frame (no tail call)
  return value;
}

}  // extern "C"
