// The CPU timer's sample points (cpu_timer.cc): where inside each period of
// a thread's CPU clock that period is sampled.
//
// Contract: pure computation on caller-owned state (no allocation, no lock,
// no system call), so the state lives in initial-exec TLS and the draw runs
// in a signal handler. A state is used by one thread only, seeded first.
//
// The maths (CPU_TIMER.md, "Sample points"). Period n is sampled once, at
// an offset U_n P into it, each U_n uniform on [0, 1): a sample weighing P
// then lands in a function that spends t_n of the period with probability
// t_n / P, so its expected weight is t_n, for any work, periodic or not.
//
// The U_n are spread across periods in blocks of B = kSamplePointBlock
// (60) periods: period i of a block (i = 0 .. B-1) is sampled in slot
// s_i = (c + m i) mod B of the period, at a uniform point of
// [s_i / B, (s_i + 1) / B), with c uniform in [0, B) and m drawn from the
// multipliers prime to B (except 1 and B-1, which only drift), both new
// for every block. c makes every U_n uniform (unbiased); m prime to B
// makes the block's slots a permutation (a Latin hypercube); and for work
// that repeats every k periods with k dividing 60 (10, 20, 30, 40, 50,
// 60 ms... at 100 Hz), the periods of each phase of the work take slots
// c' + k m j mod B, j = 0 .. B/k-1: all multiples of k, evenly spread over
// the period, so the work is seen at evenly spread points of its cycle
// instead of at the same few (aliasing). For other work the slots of a
// block are a random lattice: as good as independent points on average,
// somewhat worse at the few cycle lengths a block's m is in step with.
#ifndef RINGPROF_EMITTER_SAMPLE_POINTS_H_
#define RINGPROF_EMITTER_SAMPLE_POINTS_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

constexpr int kSamplePointBlock = 60;

struct SamplePoints {
  // The thread's generator (UniformBelow, sampler.h): seeded by the owner.
  uint64_t rng;
  // Periods of the current block still to come (0: start a new block).
  int32_t left;
  // The block's c and m (above).
  int32_t shift;
  int32_t multiplier;
};

// Starts a thread's points afresh from `seed` (hashed: seeds that differ
// in a few bits, such as neighbouring thread ids, give unrelated points).
void SeedSamplePoints(SamplePoints& points, uint64_t seed);

// The next period's sample point, as an offset in [0, period_ns) into it
// (period_ns > 0).
int64_t NextSamplePoint(SamplePoints& points, int64_t period_ns);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SAMPLE_POINTS_H_
