#include "emitter/sampler.h"

#include <cstring>

namespace ringprof {
namespace emitter {
namespace sampler_internal {

double LogUnit(double u) {
  // u = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln u = e ln 2 + ln m, and
  // ln m = 2 atanh(z) = 2 (z + z^3/3 + ...), z = (m-1)/(m+1), |z| < 0.172:
  // five terms leave an error below 1e-9.
  uint64_t bits;
  memcpy(&bits, &u, sizeof(bits));
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52);
  double m;
  memcpy(&m, &bits, sizeof(m));
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++exponent;
  }
  const double z = (m - 1.0) / (m + 1.0);
  const double z2 = z * z;
  const double series =
      z *
      (1.0 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9)))));
  return exponent * 0.6931471805599453 + 2.0 * series;
}

uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t DrawGap(uint64_t& rng, int64_t mean_bytes) {
  // u uniform in (0, 1]: 53 random bits, never zero.
  const double u = static_cast<double>((NextRandom(rng) >> 11) + 1) *
                   (1.0 / 9007199254740992.0);
  // Exp(mean) = -mean ln u. Rounding to whole bytes shifts the mean by at
  // most half a byte; the gap is at least one byte.
  const int64_t gap =
      static_cast<int64_t>(-LogUnit(u) * static_cast<double>(mean_bytes) + 0.5);
  return gap < 1 ? 1 : gap;
}

}  // namespace sampler_internal

namespace {

void AdaptCheckInterval(SamplerState& state, const SamplerParams& params,
                        uint64_t now) {
  const uint64_t elapsed = now - state.last_check_ns;
  state.last_check_ns = now;
  if (state.check_bytes == 0) {
    state.check_bytes = kInitialCheckBytes;
  } else if (elapsed < params.timing_period_ns / 8) {
    if (state.check_bytes < params.mean_bytes) state.check_bytes *= 2;
  } else if (elapsed > params.timing_period_ns / 2) {
    if (state.check_bytes > kMinCheckBytes) state.check_bytes /= 2;
  }
}

}  // namespace

SampleDecision OnCountdownExpired(SamplerState& state,
                                  const SamplerParams& params, size_t size,
                                  ClockFn clock, uint64_t seed) {
  using sampler_internal::DrawGap;
  SampleDecision decision;
  const int64_t mean = params.mean_bytes;
  // Bytes allocated since the countdown was armed, this allocation included.
  int64_t consumed = state.armed - state.countdown;
  if (state.rng == 0) {
    // First slow path of this thread: start the process here (memoryless).
    state.rng = seed | 1;
    state.gap_left = DrawGap(state.rng, mean);
  }

  const int64_t signed_size = static_cast<int64_t>(size);
  if (signed_size >= mean) {
    // Large: exact weight, and its bytes stay out of the Poisson process.
    consumed -= signed_size;
    decision.sample = true;
    decision.weight_bytes = size;
  }
  // Everything but this allocation fitted in the armed countdown (at most
  // T), and this one is under T here: more can only be the bytes of a
  // failed allocation that were not given back (an operator new that threw
  // past the interposer). Drawing through them would take one gap per T
  // bytes: billions after a failed new of SIZE_MAX / 4.
  if (consumed > 2 * mean) consumed = 2 * mean;
  state.gap_left -= consumed;
  uint64_t points = 0;
  while (state.gap_left <= 0) {
    state.gap_left += DrawGap(state.rng, mean);
    ++points;
  }
  if (points > 0) {
    decision.sample = true;
    decision.weight_bytes = points * static_cast<uint64_t>(mean);
  }

  const bool timing_mode = params.timing_period_ns > 0;
  if (decision.sample || timing_mode) {
    const uint64_t now = clock();
    if (timing_mode) AdaptCheckInterval(state, params, now);
    if (decision.sample) {
      decision.now_ns = now;
      state.last_sample_ns = now;
    } else if (now - state.last_sample_ns >= params.timing_period_ns) {
      decision.sample = true;
      decision.timing_only = true;
      decision.now_ns = now;
      state.last_sample_ns = now;
    }
  }

  // Never more than T ahead, so that an allocation of T bytes or more always
  // reaches the slow path and takes the exact branch above.
  int64_t next = state.gap_left < mean ? state.gap_left : mean;
  if (timing_mode && state.check_bytes < next) next = state.check_bytes;
  state.countdown = state.armed = next;
  return decision;
}

uint64_t UniformBelow(uint64_t& rng, uint64_t bound) {
  const unsigned __int128 product =
      static_cast<unsigned __int128>(sampler_internal::NextRandom(rng)) * bound;
  return static_cast<uint64_t>(product >> 64);
}

bool KeepWait(uint64_t wait_ns, uint64_t sample_ns, uint64_t& rng) {
  if (wait_ns >= sample_ns) return true;
  // A uniform draw in [0, sample_ns) below wait_ns: 53 random bits are
  // plenty for rates up to 2^40 ns.
  const double unit =
      static_cast<double>(sampler_internal::NextRandom(rng) >> 11) * 0x1p-53;
  return unit * static_cast<double>(sample_ns) < static_cast<double>(wait_ns);
}

}  // namespace emitter
}  // namespace ringprof
