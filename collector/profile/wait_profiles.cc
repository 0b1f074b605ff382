#include "collector/profile/wait_profiles.h"

#include <algorithm>
#include <cmath>

namespace ringprof {
namespace collector {

ProfileKind WaitProfileKind(ringfile::WaitKind kind) {
  return kind == ringfile::WaitKind::kLock ? ProfileKind::kMutex
                                           : ProfileKind::kBlock;
}

WaitTotals WaitSampleWeight(uint64_t wait_ns, uint64_t sample_ns) {
  const double wait = static_cast<double>(std::max<uint64_t>(wait_ns, 1));
  const double rate = static_cast<double>(std::max<uint64_t>(sample_ns, 1));
  WaitTotals totals;
  totals.delay_ns = std::max(wait, rate);
  totals.waits = std::max(1.0, rate / wait);
  return totals;
}

void WaitSampleValues(const WaitTotals& totals, int64_t values[2]) {
  // A hostile writer's 10^12-ns waits must not overflow int64 sums.
  constexpr double kMax = 9.2e18;
  values[0] = std::llround(std::min(totals.waits, kMax));
  values[1] = std::llround(std::min(totals.delay_ns, kMax));
}

}  // namespace collector
}  // namespace ringprof
