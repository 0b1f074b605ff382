#include "collector/profile/wait_profiles.h"

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(WaitProfilesTest, ShortWaitsStandForManyLongOnesForThemselves) {
  // Kept with probability 1/4: stands for the rate and four waits.
  WaitTotals short_wait = WaitSampleWeight(250, 1000);
  EXPECT_DOUBLE_EQ(short_wait.delay_ns, 1000);
  EXPECT_DOUBLE_EQ(short_wait.waits, 4);
  // Always kept: exactly itself.
  WaitTotals long_wait = WaitSampleWeight(5000, 1000);
  EXPECT_DOUBLE_EQ(long_wait.delay_ns, 5000);
  EXPECT_DOUBLE_EQ(long_wait.waits, 1);
  // Zeros from a broken writer count as 1 ns.
  EXPECT_DOUBLE_EQ(WaitSampleWeight(0, 0).waits, 1);
}

TEST(WaitProfilesTest, ValuesAreRoundedOncePerStackAndClamped) {
  WaitTotals totals;
  for (int i = 0; i < 3; ++i) {
    const WaitTotals w = WaitSampleWeight(600, 1000);  // 1.67 waits each
    totals.waits += w.waits;
    totals.delay_ns += w.delay_ns;
  }
  int64_t values[2];
  WaitSampleValues(totals, values);
  EXPECT_EQ(values[0], 5);  // 3 x 1.667, not 3 x 2
  EXPECT_EQ(values[1], 3000);
  totals.waits = totals.delay_ns = 1e30;
  WaitSampleValues(totals, values);
  EXPECT_GT(values[0], 0);
  EXPECT_GT(values[1], 0);
}

TEST(WaitProfilesTest, LocksAreTheMutexProfileOtherWaitsTheBlockProfile) {
  EXPECT_EQ(WaitProfileKind(ringfile::WaitKind::kLock), ProfileKind::kMutex);
  EXPECT_EQ(WaitProfileKind(ringfile::WaitKind::kBlock), ProfileKind::kBlock);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
