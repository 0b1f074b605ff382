#include "emitter/sampler.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

using sampler_internal::DrawGap;
using sampler_internal::LogUnit;
using sampler_internal::NextRandom;

uint64_t g_fake_now = 0;
uint64_t FakeClock() { return g_fake_now; }

struct Totals {
  uint64_t allocated = 0;
  uint64_t weight = 0;
  uint64_t samples = 0;
  uint64_t timing_samples = 0;
  std::vector<uint64_t> sample_times;  // allocation samples only
};

// Feeds `count` allocations with sizes from `next_size` through the sampler,
// advancing the fake clock by ns_per_alloc each.
template <typename SizeFn>
Totals RunSampler(const SamplerParams& params, uint64_t seed, int count,
                  SizeFn next_size, uint64_t ns_per_alloc = 0) {
  SamplerState state;
  Totals totals;
  g_fake_now = 1'000'000'000;
  for (int i = 0; i < count; ++i) {
    const size_t size = next_size();
    totals.allocated += size;
    g_fake_now += ns_per_alloc;
    if (!CountdownExpired(state, size)) continue;
    const SampleDecision d =
        OnCountdownExpired(state, params, size, FakeClock, seed);
    if (!d.sample) continue;
    if (d.timing_only) {
      EXPECT_EQ(d.weight_bytes, 0u);
      ++totals.timing_samples;
      continue;
    }
    ++totals.samples;
    totals.weight += d.weight_bytes;
    totals.sample_times.push_back(d.now_ns);
  }
  return totals;
}

TEST(SamplerMathTest, LogUnitMatchesLibm) {
  uint64_t rng = 1;
  for (int i = 0; i < 100000; ++i) {
    const double u =
        static_cast<double>((NextRandom(rng) >> 11) + 1) / 9007199254740992.0;
    ASSERT_NEAR(LogUnit(u), std::log(u), 1e-9) << u;
  }
  EXPECT_EQ(LogUnit(1.0), 0.0);
  EXPECT_NEAR(LogUnit(1.0 / 9007199254740992.0),
              std::log(1.0 / 9007199254740992.0), 1e-9);
}

TEST(SamplerMathTest, GapsAreExponentialWithTheConfiguredMean) {
  const int64_t mean = 512 * 1024;
  uint64_t rng = 12345;
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  int below_median = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t gap = DrawGap(rng, mean);
    ASSERT_GE(gap, 1);
    sum += gap;
    sum_sq += static_cast<double>(gap) * gap;
    if (gap < mean * std::log(2.0)) ++below_median;
  }
  const double sample_mean = sum / n;
  const double sample_sd = std::sqrt(sum_sq / n - sample_mean * sample_mean);
  // Exp(T): mean T, standard deviation T, median T ln 2. Standard error of
  // the mean is T/sqrt(n) ~ 0.22%: 1% is > 4 sigma.
  EXPECT_NEAR(sample_mean / mean, 1.0, 0.01);
  EXPECT_NEAR(sample_sd / mean, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(below_median) / n, 0.5, 0.01);
}

TEST(SamplerTest, SumOfWeightsEstimatesBytesForMixedSizes) {
  SamplerParams params;
  params.mean_bytes = 64 * 1024;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    uint64_t rng = seed * 7919;
    const Totals totals = RunSampler(params, seed, 2'000'000, [&] {
      const uint64_t r = NextRandom(rng);
      if (r % 1000 == 0) return size_t{200 * 1024};  // above the mean
      if (r % 10 == 0) return size_t{1 + r % 16384};
      return size_t{1 + r % 256};
    });
    // ~ allocated / T = 8000+ samples: relative error ~1.1% (sd); 5% bound.
    EXPECT_NEAR(static_cast<double>(totals.weight) / totals.allocated, 1.0,
                0.05)
        << "seed " << seed << " samples " << totals.samples;
  }
}

TEST(SamplerTest, AllocationsOfAtLeastTheMeanAreAlwaysRecordedExactly) {
  SamplerParams params;
  params.mean_bytes = 4096;
  SamplerState state;
  uint64_t rng = 99;
  for (int i = 0; i < 10000; ++i) {
    const size_t small = 1 + NextRandom(rng) % 100;
    if (CountdownExpired(state, small)) {
      OnCountdownExpired(state, params, small, FakeClock, 7);
    }
    const size_t large = 4096 + NextRandom(rng) % 100000;
    ASSERT_TRUE(CountdownExpired(state, large)) << i;
    const SampleDecision d =
        OnCountdownExpired(state, params, large, FakeClock, 7);
    ASSERT_TRUE(d.sample);
    ASSERT_FALSE(d.timing_only);
    ASSERT_EQ(d.weight_bytes, large);
  }
}

TEST(SamplerTest, TimingSamplesDoNotChangeTheAllocationProfile) {
  SamplerParams off;
  off.mean_bytes = 256 * 1024;
  SamplerParams on = off;
  on.timing_period_ns = 10'000'000;
  uint64_t rng_a = 5, rng_b = 5;
  auto sizes_a = [&] { return size_t{1 + NextRandom(rng_a) % 1024}; };
  auto sizes_b = [&] { return size_t{1 + NextRandom(rng_b) % 1024}; };
  // 1 us per allocation of ~512 bytes: ~500 MB/s, one allocation sample
  // every ~0.5 ms... too often for timing samples; slow it down to 20 us.
  const Totals without = RunSampler(off, 3, 300000, sizes_a, 20000);
  const Totals with = RunSampler(on, 3, 300000, sizes_b, 20000);
  // Same seed, same sizes: the Poisson process is untouched, so the very
  // same allocations are sampled with the very same weights.
  EXPECT_EQ(with.weight, without.weight);
  EXPECT_EQ(with.samples, without.samples);
  EXPECT_EQ(with.sample_times, without.sample_times);
  EXPECT_EQ(without.timing_samples, 0u);
  EXPECT_GT(with.timing_samples, 0u);
}

TEST(SamplerTest, TimingModeGivesASampleEveryPeriodToABusyThread) {
  SamplerParams params;
  params.mean_bytes = 1 << 30;  // allocation samples practically never
  params.timing_period_ns = 10'000'000;
  uint64_t rng = 11;
  // 64 bytes per microsecond for 2 simulated seconds.
  const Totals totals = RunSampler(
      params, 1, 2'000'000, [&] { return size_t{1 + NextRandom(rng) % 127}; },
      1000);
  // 2 s / 10 ms = 200 periods. The check interval adapts so that the clock
  // is read a few times per period: samples land within a fraction of a
  // period after it expires.
  EXPECT_GE(totals.timing_samples, 150u);
  EXPECT_LE(totals.timing_samples, 201u);
}

TEST(SamplerTest, BytesOfAFailedHugeAllocationAreNotAGapDebt) {
  // A failed allocation of SIZE_MAX / 4 bytes that expired the countdown
  // but never reached the slow path (an operator new that threw): the next
  // allocation's slow path must not draw a gap for every T of those bytes.
  SamplerParams params;
  SamplerState state;
  ASSERT_TRUE(CountdownExpired(state, 16));
  OnCountdownExpired(state, params, 16, FakeClock, 42);
  ASSERT_TRUE(CountdownExpired(state, SIZE_MAX / 4));
  ASSERT_TRUE(CountdownExpired(state, 64));
  const SampleDecision decision =
      OnCountdownExpired(state, params, 64, FakeClock, 0);
  // At most the two intervals the clamp leaves: a weight of a few T.
  EXPECT_LE(decision.weight_bytes,
            8 * static_cast<uint64_t>(params.mean_bytes));
  EXPECT_GT(state.countdown, 0);
}

TEST(SamplerTest, FreshStateTakesTheSlowPathFirst) {
  SamplerState state;
  EXPECT_TRUE(CountdownExpired(state, 1));
  SamplerParams params;
  OnCountdownExpired(state, params, 1, FakeClock, 1);
  EXPECT_NE(state.rng, 0u);
  EXPECT_GT(state.countdown, 0);
  EXPECT_LE(state.countdown, params.mean_bytes);
}

TEST(WaitSamplingTest, WaitsOfAtLeastTheRateAreAlwaysKept) {
  uint64_t rng = 12345;
  for (uint64_t wait : {1000u, 1001u, 5000000u}) {
    EXPECT_TRUE(KeepWait(wait, 1000, rng)) << wait;
  }
}

TEST(WaitSamplingTest, WeightedTotalsAreUnbiased) {
  // Waits of 1 .. 999 ns against a rate of 1000 ns: kept with probability
  // d / 1000, each kept one weighing 1000 ns and 1000 / d waits.
  constexpr uint64_t kRate = 1000;
  uint64_t rng = 99;
  double true_ns = 0, estimated_ns = 0, estimated_waits = 0;
  constexpr int kWaits = 400000;
  for (int i = 0; i < kWaits; ++i) {
    const uint64_t wait = 1 + static_cast<uint64_t>(i) % (kRate - 1);
    true_ns += static_cast<double>(wait);
    if (KeepWait(wait, kRate, rng)) {
      estimated_ns += kRate;
      estimated_waits += static_cast<double>(kRate) / wait;
    }
  }
  EXPECT_NEAR(estimated_ns / true_ns, 1.0, 0.01);
  // The count estimate has more variance (short waits weigh up to 1000).
  EXPECT_NEAR(estimated_waits / kWaits, 1.0, 0.05);
}

TEST(UniformBelowTest, DrawsAreBelowTheBoundAndEvenlySpread) {
  // The CPU timer's sample point within its 10 ms period: 10 bins of 1 ms
  // get 10% of the draws each (binomial sd 0.095% at 100,000 draws).
  constexpr uint64_t kBound = 10000000;
  constexpr int kDraws = 100000;
  uint64_t rng = 7;
  int bins[10] = {};
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t draw = UniformBelow(rng, kBound);
    ASSERT_LT(draw, kBound);
    ++bins[draw / (kBound / 10)];
  }
  for (int bin : bins) EXPECT_NEAR(bin, kDraws / 10, 500);
  EXPECT_EQ(UniformBelow(rng, 1), 0u);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
