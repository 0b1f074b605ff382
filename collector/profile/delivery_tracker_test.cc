#include "collector/profile/delivery_tracker.h"

#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(DeliveryTrackerTest, ACheckpointFollowsEachEmittedWindow) {
  DeliveryTracker tracker;
  EXPECT_FALSE(tracker.Take(/*force=*/false).has_value());  // nothing sent
  const std::vector<uint64_t> read = {12, 40};
  tracker.SetReadPositions(read);
  tracker.Emitted(10 * kSec);
  std::optional<Checkpoint> taken = tracker.Take(false);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->positions, read);
  EXPECT_EQ(taken->consumed, read);
  EXPECT_EQ(taken->emitted_until_unix_ns, 10 * kSec);
  EXPECT_FALSE(tracker.Take(false).has_value());  // nothing new
  EXPECT_TRUE(tracker.Take(/*force=*/true).has_value());
  tracker.Emitted(5 * kSec);  // an earlier end never moves it back
  EXPECT_EQ(tracker.emitted_until_unix_ns(), 10 * kSec);
}

TEST(DeliveryTrackerTest, AResumedTrackerSkipsWhatItsPredecessorDelivered) {
  Checkpoint checkpoint;
  checkpoint.consumed = {100, 50};
  checkpoint.emitted_until_unix_ns = 20 * kSec;
  DeliveryTracker tracker;
  tracker.Resume(checkpoint);
  // Stamped before the end and read by the predecessor: delivered.
  EXPECT_TRUE(tracker.Replayed(19 * kSec, /*ring=*/0, /*index=*/99));
  EXPECT_TRUE(tracker.Replayed(1 * kSec, 1, 0));
  // Never read by it (late records): they count.
  EXPECT_FALSE(tracker.Replayed(19 * kSec, 0, 100));
  EXPECT_FALSE(tracker.Replayed(19 * kSec, 2, 0));
  // Stamped after the end: new.
  EXPECT_FALSE(tracker.Replayed(20 * kSec, 0, 1));
  EXPECT_EQ(tracker.replay_skipped(), 2u);
  EXPECT_TRUE(tracker.Delivered(20 * kSec - 1));
  EXPECT_FALSE(tracker.Delivered(20 * kSec));
  // Until it reads more, the successor's checkpoint is the predecessor's.
  std::optional<Checkpoint> again = tracker.Take(/*force=*/true);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->consumed, checkpoint.consumed);
  EXPECT_EQ(again->emitted_until_unix_ns, checkpoint.emitted_until_unix_ns);
}

TEST(DeliveryTrackerTest, AFreshTrackerDeliveredNothing) {
  DeliveryTracker tracker;
  EXPECT_FALSE(tracker.Replayed(INT64_MIN + 1, 0, 0));
  EXPECT_FALSE(tracker.Delivered(INT64_MIN + 1));
  EXPECT_EQ(tracker.emitted_until_unix_ns(), INT64_MIN);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
