// tools/bench.d/tags: the cost of ringprof_tag_push / ringprof_tag_pop /
// ringprof_span_set as a program calls them (through the header's
// dlsym-resolved pointers), against the same calls to empty functions.
// Prints one line per variant: median ns per push, per pop, per span set,
// over ROUNDS rounds of interleaved batches.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ringprof/ringprof.h"

namespace {

constexpr int kDepth = 4;
constexpr int kBatch = 2000;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void NoopPush(const char*, const char*) {
  asm volatile("");
}
__attribute__((noinline)) void NoopPop() { asm volatile(""); }
__attribute__((noinline)) uint64_t NoopSpan(uint64_t v) {
  asm volatile("");
  return v;
}

struct Api {
  void (*push)(const char*, const char*);
  void (*pop)();
  uint64_t (*span)(uint64_t);
};

const char* const kKeys[kDepth] = {"endpoint", "tenant", "region", "step"};
const char* const kValues[kDepth] = {"/api/v1/checkout", "42", "eu-west-1",
                                     "render"};

struct Result {
  double push_ns, pop_ns, span_ns;
};

// One batch: kBatch times (kDepth pushes, then kDepth pops), timed apart,
// then 2*kDepth*kBatch span sets.
Result Batch(const Api& api) {
  int64_t push = 0, pop = 0;
  for (int i = 0; i < kBatch; ++i) {
    const int64_t t0 = NowNs();
    for (int d = 0; d < kDepth; ++d) api.push(kKeys[d], kValues[d]);
    const int64_t t1 = NowNs();
    for (int d = 0; d < kDepth; ++d) api.pop();
    pop += NowNs() - t1;
    push += t1 - t0;
  }
  const int64_t s0 = NowNs();
  for (int i = 0; i < 2 * kDepth * kBatch; ++i) api.span(i + 1);
  const int64_t span = NowNs() - s0;
  api.span(0);
  const double ops = double{kDepth} * kBatch;
  return {push / ops, pop / ops, span / (2 * ops)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21;
  if (!ringprof_available()) {
    fprintf(stderr, "tags_bench: run with LD_PRELOAD=libringprof.so\n");
    return 2;
  }
  const struct ringprof_api_* real = ringprof_api_();
  const Api variants[2] = {{NoopPush, NoopPop, NoopSpan},
                           {real->push, real->pop, real->span_set}};
  std::vector<double> push[2], pop[2], span[2];
  for (int r = 0; r < rounds; ++r) {
    for (int v = 0; v < 2; ++v) {
      const Result result = Batch(variants[v]);
      push[v].push_back(result.push_ns);
      pop[v].push_back(result.pop_ns);
      span[v].push_back(result.span_ns);
    }
  }
  const char* names[2] = {"empty function", "libringprof.so"};
  printf(
      "%d rounds of %d x (%d nested pushes, %d pops), interleaved; "
      "median ns per call (clock reads included, see the empty "
      "function)\n",
      rounds, kBatch, kDepth, kDepth);
  for (int v = 0; v < 2; ++v) {
    printf("  %-15s push %6.1f  pop %6.1f  span_set %6.1f\n", names[v],
           Median(push[v]), Median(pop[v]), Median(span[v]));
  }
  printf(
      "  net (ringprof - empty): push %.1f ns, pop %.1f ns, span_set "
      "%.1f ns (target < 50 ns)\n",
      Median(push[1]) - Median(push[0]), Median(pop[1]) - Median(pop[0]),
      Median(span[1]) - Median(span[0]));
  return 0;
}
