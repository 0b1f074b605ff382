// The free path's cost: CPU time per free() of small blocks, run with
// nothing preloaded, with libringprof.so and in-use tracking off
// (RINGPROF_TRACK_FREES=0), and with it on (the default); the difference is
// the live-set check. Before timing, LIVE blocks of 1 MiB are kept
// allocated: at the default sampling interval (512 KiB) each is sampled,
// so the live set holds LIVE entries and the filter has realistic
// collisions (the blocks are mmap'd by the allocator and never touched, so
// they cost no memory). The timed blocks (16..255 bytes, ~550 KiB per
// batch) are sampled about once per batch.
//
//   free_path_bench LIVE  ->  "free_ns <median ns per free>"
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  const long live_blocks = argc > 1 ? atol(argv[1]) : 0;
  std::vector<void*> live;
  live.reserve(live_blocks);
  for (long i = 0; i < live_blocks; ++i) live.push_back(malloc(1 << 20));

  constexpr int kBatch = 4096;
  constexpr int kBatches = 400;
  std::vector<void*> blocks(kBatch);
  std::vector<double> per_free;
  unsigned seed = 1;
  for (int b = 0; b < kBatches; ++b) {
    for (void*& p : blocks) p = malloc(16 + rand_r(&seed) % 240);
    // Freed in an order unlike the allocation's, as real programs do.
    for (int i = kBatch - 1; i > 0; --i) {
      std::swap(blocks[i], blocks[rand_r(&seed) % (i + 1)]);
    }
    const double start = ThreadCpuNs();
    for (void* p : blocks) free(p);
    per_free.push_back((ThreadCpuNs() - start) / kBatch);
  }
  std::nth_element(per_free.begin(), per_free.begin() + kBatches / 2,
                   per_free.end());
  printf("free_ns %.2f\n", per_free[kBatches / 2]);
  for (void* p : live) free(p);
  return 0;
}
