#include "collector/shipping/upload_pacer.h"

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr int64_t kSecond = 1000000000;

TEST(UploadPacerTest, BurstGoesAtOnceThenTheRate) {
  UploadPacer pacer(/*bytes_per_second=*/4 << 20, /*burst_bytes=*/2 << 20);
  EXPECT_EQ(pacer.Reserve(1 << 20, 0), 0);
  EXPECT_EQ(pacer.Reserve(1 << 20, 0), 0);
  // Empty: 1 MiB more needs a quarter of a second at 4 MiB/s.
  const int64_t wait = pacer.Reserve(1 << 20, 0);
  EXPECT_NEAR(static_cast<double>(wait), kSecond / 4.0, 1e3);
  EXPECT_GT(pacer.Reserve(1 << 20, wait - 1000), 0);
  EXPECT_EQ(pacer.Reserve(1 << 20, wait), 0);
}

TEST(UploadPacerTest, SustainedRateOverManyProfiles) {
  UploadPacer pacer(4 << 20, 2 << 20);
  int64_t now = 0;
  size_t sent = 0;
  // 200 profiles of 300 KiB, sent as soon as allowed.
  for (int i = 0; i < 200; ++i) {
    while (int64_t wait = pacer.Reserve(300 << 10, now)) now += wait;
    sent += 300 << 10;
  }
  // Everything beyond the burst went at 4 MiB/s.
  const double seconds = static_cast<double>(now) / kSecond;
  EXPECT_NEAR(static_cast<double>(sent - (2 << 20)) / seconds, 4 << 20,
              0.01 * (4 << 20));
}

TEST(UploadPacerTest, CostAboveTheBurstWaitsForAFullBucketOnly) {
  UploadPacer pacer(1 << 20, 1 << 20);
  EXPECT_EQ(pacer.Reserve(3 << 20, 0), 0);  // full bucket: goes, debt of 2 MiB
  const int64_t wait = pacer.Reserve(1, 0);
  EXPECT_NEAR(static_cast<double>(wait), 2.0 * kSecond, 1e3);
}

TEST(UploadPacerTest, ZeroRateIsOff) {
  UploadPacer pacer(0, 2 << 20);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(pacer.Reserve(100 << 20, 0), 0);
}

TEST(UploadPacerTest, ClockGoingBackDoesNotRefill) {
  UploadPacer pacer(1 << 20, 1 << 20);
  EXPECT_EQ(pacer.Reserve(1 << 20, 10 * kSecond), 0);
  EXPECT_GT(pacer.Reserve(1 << 20, 5 * kSecond), 0);
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
