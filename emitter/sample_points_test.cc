#include "emitter/sample_points.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>

#include "emitter/sampler.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr int64_t kPeriodNs = 10000000;  // 100 Hz

TEST(SamplePointsTest, EachBlockTakesEverySlotOnce) {
  SamplePoints points;
  SeedSamplePoints(points, 42);
  for (int block = 0; block < 20; ++block) {
    std::set<int64_t> slots;
    for (int i = 0; i < kSamplePointBlock; ++i) {
      const int64_t offset = NextSamplePoint(points, kPeriodNs);
      ASSERT_GE(offset, 0);
      ASSERT_LT(offset, kPeriodNs);
      slots.insert(offset * kSamplePointBlock / kPeriodNs);
    }
    EXPECT_EQ(slots.size(), static_cast<size_t>(kSamplePointBlock))
        << "block " << block;
  }
}

TEST(SamplePointsTest, OffsetsAreUniformWithinTheirSlots) {
  // A period that 32 does not divide: offsets still reach its end.
  constexpr int64_t kOddPeriodNs = 3333333;
  SamplePoints points;
  SeedSamplePoints(points, 7);
  constexpr int kDraws = kSamplePointBlock * 2000;
  int bins[10] = {};
  int64_t largest = 0;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t offset = NextSamplePoint(points, kOddPeriodNs);
    ASSERT_GE(offset, 0);
    ASSERT_LT(offset, kOddPeriodNs);
    if (offset > largest) largest = offset;
    ++bins[offset * 10 / kOddPeriodNs];
  }
  // Binomial sd about 100 at 120,000 draws (less with the slots).
  for (int bin : bins) EXPECT_NEAR(bin, kDraws / 10, 600);
  EXPECT_GT(largest, kOddPeriodNs - kOddPeriodNs / 1000);
}

// The share of [0, a) in cycles of length `cycle` that one thread's
// stratified samples see over `periods` periods, the cycles starting at
// `phase` on the thread's clock.
double SampledShare(SamplePoints& points, int64_t a, int64_t cycle,
                    int64_t phase, int periods) {
  int hits = 0;
  for (int n = 0; n < periods; ++n) {
    const int64_t at = n * kPeriodNs + NextSamplePoint(points, kPeriodNs);
    if ((at + cycle - phase % cycle) % cycle < a) ++hits;
  }
  return static_cast<double>(hits) / periods;
}

// The same with independent points (the baseline).
double IndependentShare(uint64_t& rng, int64_t a, int64_t cycle, int64_t phase,
                        int periods) {
  int hits = 0;
  for (int n = 0; n < periods; ++n) {
    const int64_t at =
        n * kPeriodNs + static_cast<int64_t>(UniformBelow(rng, kPeriodNs));
    if ((at + cycle - phase % cycle) % cycle < a) ++hits;
  }
  return static_cast<double>(hits) / periods;
}

// Share errors of `runs` runs of one thread over 800 periods (8 s of CPU
// at 100 Hz) on cycles of `cycle` ns spending `a` ns in the function.
// `independent`: points drawn independently instead (the baseline).
struct Errors {
  double mean = 0;
  double rms = 0;
  double max = 0;
};
Errors ShareErrors(int64_t a, int64_t cycle, int runs,
                   bool independent = false) {
  Errors errors;
  for (int run = 0; run < runs; ++run) {
    SamplePoints points;
    SeedSamplePoints(points, run);
    const double share =
        independent ? IndependentShare(points.rng, a, cycle, run * 1234567, 800)
                    : SampledShare(points, a, cycle, run * 1234567, 800);
    const double error = share - static_cast<double>(a) / cycle;
    errors.mean += error / runs;
    errors.rms += error * error / runs;
    errors.max = std::fmax(errors.max, std::fabs(error));
  }
  errors.rms = std::sqrt(errors.rms);
  return errors;
}

TEST(SamplePointsTest, WorkInStepWithThePeriodIsSeenEvenly) {
  // 12 ms in the function, 8 ms out, 20 ms cycles: a fixed phase sees each
  // cycle at the same two points; independent points err by 0.015 (sd).
  // Here each block sees the cycle at evenly spread points.
  for (const int64_t cycle : {20000000, 30000000, 40000000, 60000000}) {
    const Errors errors = ShareErrors(cycle * 3 / 5, cycle, 200);
    const Errors baseline = ShareErrors(cycle * 3 / 5, cycle, 200, true);
    printf("%lld: mean %.4f rms %.4f max %.4f; independent rms %.4f max %.4f\n",
           (long long)cycle, errors.mean, errors.rms, errors.max, baseline.rms,
           baseline.max);
    EXPECT_LT(std::fabs(errors.mean), 0.002) << cycle;
    EXPECT_LT(errors.max, 0.02) << cycle;
    EXPECT_LT(errors.rms, baseline.rms / 2) << cycle;
  }
}

TEST(SamplePointsTest, OtherWorkIsSampledWithoutBias) {
  // Cycles out of step with the period: no worse than independent points
  // (sd 0.015 at 17.3 ms), unbiased over runs.
  for (const int64_t cycle : {7600000, 10200000, 17300000, 80000000}) {
    const Errors errors = ShareErrors(cycle * 3 / 5, cycle, 400);
    const Errors baseline = ShareErrors(cycle * 3 / 5, cycle, 400, true);
    printf("%lld: mean %.4f rms %.4f max %.4f; independent rms %.4f max %.4f\n",
           (long long)cycle, errors.mean, errors.rms, errors.max, baseline.rms,
           baseline.max);
    EXPECT_LT(std::fabs(errors.mean), 0.004) << cycle;
    EXPECT_LT(errors.rms, baseline.rms * 2) << cycle;
  }
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
