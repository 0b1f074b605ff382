// Reports its own resident memory, excluding ring-file mappings, after an
// allocation-heavy phase on 8 threads: the emitter's benchmark compares it
// with and without libringprof.so preloaded.
// Prints `rss_kib <n>` and `ring_rss_kib <m>` (resident pages of the ring
// file mappings: *.ring, or any file mapping in RINGPROF_DIR).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cstdint>

namespace {

void* Churn(void*) {
  void* live[256] = {};
  uint64_t rng = reinterpret_cast<uintptr_t>(live) | 1;
  for (int i = 0; i < 400000; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const int slot = static_cast<int>(rng % 256);
    free(live[slot]);
    live[slot] = malloc(1 + (rng >> 16) % 4096);
    asm volatile("" : : "r"(live[slot]) : "memory");
  }
  for (void* p : live) free(p);
  return nullptr;
}

}  // namespace

int main() {
  pthread_t threads[8];
  for (pthread_t& t : threads) pthread_create(&t, nullptr, Churn, nullptr);
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  const char* ring_dir = getenv("RINGPROF_DIR");
  FILE* smaps = fopen("/proc/self/smaps", "r");
  if (smaps == nullptr) return 1;
  char line[4096];
  bool in_ring = false;
  unsigned long total = 0, ring = 0;
  while (fgets(line, sizeof(line), smaps) != nullptr) {
    unsigned long kib, start, end;
    if (sscanf(line, "Rss: %lu kB", &kib) == 1) {
      (in_ring ? ring : total) += kib;
    } else if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
      // A mapping's header line: "start-end perms offset dev inode path".
      // A ring file is created unnamed (O_TMPFILE) and mapped before it is
      // linked, so its mapping is named "<dir>/#<inode> (deleted)": any
      // file mapping in RINGPROF_DIR is a ring.
      const size_t n = strlen(line);
      in_ring = (n > 6 && strcmp(line + n - 6, ".ring\n") == 0) ||
                (ring_dir != nullptr && *ring_dir != '\0' &&
                 strstr(line, ring_dir) != nullptr);
    }
  }
  fclose(smaps);
  printf("rss_kib %lu\nring_rss_kib %lu\n", total, ring);
  return 0;
}
