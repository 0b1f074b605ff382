// A library the dlopen workload loads at run time; it allocates from a
// function of its own so that a test can find that function in the stacks.
#include <stdint.h>
#include <stdlib.h>

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

}  // extern "C"
