// Stratified sample points. Contract and maths in sample_points.h.
#include "emitter/sample_points.h"

#include "emitter/sampler.h"

namespace ringprof {
namespace emitter {
namespace {

// The multipliers prime to 60, without 1 and 59.
constexpr int32_t kMultipliers[] = {7,  11, 13, 17, 19, 23, 29,
                                    31, 37, 41, 43, 47, 49, 53};
constexpr uint64_t kMultiplierCount =
    sizeof(kMultipliers) / sizeof(kMultipliers[0]);
static_assert(kSamplePointBlock == 60, "kMultipliers are prime to 60");

}  // namespace

void SeedSamplePoints(SamplePoints& points, uint64_t seed) {
  points.rng = sampler_internal::NextRandom(seed);
  points.left = 0;
}

int64_t NextSamplePoint(SamplePoints& points, int64_t period_ns) {
  if (points.left <= 0 || points.left > kSamplePointBlock) {
    points.shift =
        static_cast<int32_t>(UniformBelow(points.rng, kSamplePointBlock));
    points.multiplier =
        kMultipliers[UniformBelow(points.rng, kMultiplierCount)];
    points.left = kSamplePointBlock;
  }
  const int64_t index = kSamplePointBlock - points.left--;
  const int64_t slot =
      (points.shift + points.multiplier * index) % kSamplePointBlock;
  // Uniform in [slot P / B, (slot + 1) P / B), whatever P's divisibility.
  const int64_t within = static_cast<int64_t>(
      UniformBelow(points.rng, static_cast<uint64_t>(period_ns)));
  return (slot * period_ns + within) / kSamplePointBlock;
}

}  // namespace emitter
}  // namespace ringprof
