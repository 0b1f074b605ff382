// Per-thread Poisson sampling of allocated bytes, tcmalloc/ddprof style.
//
// Contract: pure computation on caller-owned state. No allocation, no locks,
// no syscalls (the clock is a callback the caller supplies), so the state can
// live in initial-exec TLS and the code can run inside malloc. A state is
// used by one thread only.
//
// The maths. Think of every byte a thread allocates as one point on a line
// and lay a Poisson process of rate 1/T on that line (T = the configured
// mean, RINGPROF_SAMPLE_BYTES): the gaps between process points are
// independent Exp(mean T) draws. An allocation of s bytes covers s bytes of
// the line and contains K process points, K ~ Poisson(s/T). Recording it with
// weight K*T (zero when K = 0, i.e. not sampled) gives E[K*T] = s: the weight
// is an unbiased estimate of the bytes, for every s, and the sum of weights
// over samples estimates the bytes the thread allocated. Because gaps are
// memoryless, a thread may (re)start its process at any byte with a fresh
// draw without biasing anything.
//
// Allocations of s >= T bytes bypass the process and are always recorded
// with weight s (exact; heapprofd does the same): no variance where it
// matters most, and the process over the remaining bytes is still Poisson.
//
// Cost. The fast path is one TLS subtract and a predicted branch
// (CountdownExpired). The countdown is armed with the smallest of: the gap
// to the next process point, T (so that every allocation of T bytes or more
// reaches the slow path), and in timing mode the thread's check interval;
// the slow path (OnCountdownExpired) sorts out which one expired.
//
// Timing samples. The collector estimates where CPU time goes by picking,
// per 10 ms tick, the sample closest in time (Pyro Caml's tick picking). With
// a large T a busy thread may go many ticks without a sample, so in timing
// mode the slow path also runs every `check_bytes` bytes, reads the clock,
// and when the thread has had no sample for timing_period_ns it asks for a
// timing-only sample: weight 0, flagged kSampleTimingOnly, so it never enters
// the allocation profile and the Poisson process above is untouched (timing
// samples do not consume or reset the byte gap). check_bytes adapts per
// thread so that the clock is read a few times per period whatever the
// thread's allocation rate: doubled (up to T) when checks come faster than
// period/8, halved (down to kMinCheckBytes) when slower than period/2. A
// thread that allocates less than kMinCheckBytes per period gets fewer
// timing samples: that is what the CPU timer (cpu_timer.h) is for.
#ifndef RINGPROF_EMITTER_SAMPLER_H_
#define RINGPROF_EMITTER_SAMPLER_H_

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace emitter {

struct SamplerParams {
  int64_t mean_bytes = 512 * 1024;  // T
  // Timing mode when non-zero: a timing sample is requested when the last
  // sample of the thread is this old.
  uint64_t timing_period_ns = 0;
};

// Zero-initialised means "not started": the first allocation takes the slow
// path, which seeds the generator and draws the first gap.
struct SamplerState {
  int64_t countdown = 0;  // bytes until the slow path runs
  int64_t armed = 0;      // countdown's value when last set
  int64_t gap_left = 0;   // bytes to the next process point, as of arming
  uint64_t rng = 0;       // generator state; 0 = not seeded
  uint64_t last_sample_ns = 0;
  int64_t check_bytes = 0;  // timing mode: bytes between clock readings
  uint64_t last_check_ns = 0;
};

inline constexpr int64_t kMinCheckBytes = 1024;
inline constexpr int64_t kInitialCheckBytes = 64 * 1024;

struct SampleDecision {
  bool sample = false;       // record this allocation
  bool timing_only = false;  // ... as a weight-0 timing sample
  uint64_t weight_bytes = 0;
  uint64_t now_ns = 0;  // the clock reading, when sample is true
};

// The fast path: true (rarely) when OnCountdownExpired must run.
inline bool CountdownExpired(SamplerState& state, size_t size) {
  state.countdown -= static_cast<int64_t>(size);
  return __builtin_expect(state.countdown <= 0, 0);
}

// For a thread that must not sample now (the emitter is off): the fast path
// next expires after T bytes, without touching the Poisson process (its
// gaps are memoryless, so resuming later biases nothing).
inline void ParkCountdown(SamplerState& state, const SamplerParams& params) {
  state.countdown = state.armed = params.mean_bytes;
}

using ClockFn = uint64_t (*)();

// The slow path, for the allocation of `size` bytes whose CountdownExpired
// returned true. Re-arms the countdown and decides. `seed` mixes into the
// generator the first time (pass something thread-specific).
SampleDecision OnCountdownExpired(SamplerState& state,
                                  const SamplerParams& params, size_t size,
                                  ClockFn clock, uint64_t seed);

// Off-CPU waits (wait_sampler.h), Go's block-profile rule: a wait of
// wait_ns is kept with probability min(1, wait_ns / sample_ns), decided
// with the thread's generator `rng` (seeded by the caller, non-zero). A kept
// wait stands for max(wait_ns, sample_ns) ns and max(1, sample_ns /
// wait_ns) waits, so both totals stay unbiased (E[kept / p] = 1).
bool KeepWait(uint64_t wait_ns, uint64_t sample_ns, uint64_t& rng);

// A uniform draw in [0, bound) from the thread's generator `rng` (seeded by
// the caller; any value), for the CPU timer's sample points
// (sample_points.h).
// Lemire's multiply-shift: bias below bound / 2^64.
uint64_t UniformBelow(uint64_t& rng, uint64_t bound);

// Exposed for tests.
namespace sampler_internal {
// Natural logarithm of u in (0, 1], |error| < 1e-9, without libm.
double LogUnit(double u);
// splitmix64: advances `state`, returns 64 random bits.
uint64_t NextRandom(uint64_t& state);
// One Exp(mean) gap in bytes, >= 1.
int64_t DrawGap(uint64_t& rng, int64_t mean_bytes);
}  // namespace sampler_internal

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SAMPLER_H_
