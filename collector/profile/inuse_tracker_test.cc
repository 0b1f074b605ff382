// The reader algorithm of ringfile/FORMAT.md §5.1: allocations and frees in
// timestamp order whatever their arrival order, lost records corrected by a
// complete sweep, an incomplete sweep only adding, a late start rebuilt
// from one sweep.
#include "collector/profile/inuse_tracker.h"

#include <utility>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using Values = std::pair<int64_t, int64_t>;  // objects, bytes
constexpr uint64_t kSecond = 1'000'000'000;

int64_t TotalBytes(const InUseTracker& tracker) {
  int64_t total = 0;
  for (const auto& [stack, values] : tracker.ByStack()) total += values.second;
  return total;
}

TEST(InUseTrackerTest, AllocationsMinusFrees) {
  InUseTracker t;
  t.OnAlloc(10, 0x100, 1, 4096, 1);
  t.OnAlloc(11, 0x200, 2, 8192, 2);
  t.OnFree(12, 0x100);
  t.OnFree(13, 0x999);  // never seen: ignored
  t.ApplyBefore(100);
  const auto by_stack = t.ByStack();
  ASSERT_EQ(by_stack.size(), 1u);
  EXPECT_EQ(by_stack.at(2), Values(2, 8192));
}

TEST(InUseTrackerTest, TimestampOrderNotArrivalOrder) {
  InUseTracker t;
  // Another ring delivered the free of the old block after the new block
  // at the same address.
  t.OnAlloc(30, 0x100, 2, 100, 1);
  t.OnAlloc(10, 0x100, 1, 50, 1);
  t.OnFree(20, 0x100);
  t.ApplyBefore(100);
  const auto by_stack = t.ByStack();
  ASSERT_EQ(by_stack.size(), 1u);
  EXPECT_EQ(by_stack.at(2), Values(1, 100));
}

TEST(InUseTrackerTest, OnlyEventsBeforeTheCutAreApplied) {
  InUseTracker t;
  t.OnAlloc(10, 0x100, 1, 100, 1);
  t.OnFree(50, 0x100);
  t.ApplyBefore(20);
  EXPECT_EQ(TotalBytes(t), 100);
  t.ApplyBefore(60);
  EXPECT_EQ(TotalBytes(t), 0);
}

TEST(InUseTrackerTest, CompleteSweepDropsEntriesWhoseFreeWasLost) {
  InUseTracker t;
  t.OnAlloc(1 * kSecond, 0x100, 1, 100, 1);  // its free was lost
  t.OnAlloc(1 * kSecond, 0x200, 2, 200, 1);  // still live
  // Sweep 1 begins at 10 s: only 0x200 is re-sent.
  t.OnLive(10 * kSecond, 1, 1 * kSecond, 0x200, 2, 200, 1);
  // Allocated just before the sweep began, entered after it passed: kept.
  t.OnAlloc(10 * kSecond - 1, 0x300, 3, 300, 1);
  t.OnSweepEnd(11 * kSecond, 1, 10 * kSecond, 1, 0);
  t.ApplyBefore(20 * kSecond);
  const auto by_stack = t.ByStack();
  EXPECT_EQ(by_stack.count(1), 0u);
  EXPECT_EQ(by_stack.at(2), Values(1, 200));
  EXPECT_EQ(by_stack.at(3), Values(1, 300));
  EXPECT_EQ(t.stats().sweeps_complete, 1u);
  EXPECT_EQ(t.stats().pruned, 1u);
}

TEST(InUseTrackerTest, IncompleteSweepOnlyAdds) {
  InUseTracker t;
  t.OnAlloc(1 * kSecond, 0x100, 1, 100, 1);
  // The emitter appended 2 entries; one was overwritten in the ring.
  t.OnLive(10 * kSecond, 4, 2 * kSecond, 0x200, 2, 200, 1);
  t.OnSweepEnd(11 * kSecond, 4, 10 * kSecond, 2, 0);
  t.ApplyBefore(20 * kSecond);
  EXPECT_EQ(TotalBytes(t), 300);
  EXPECT_EQ(t.stats().sweeps_incomplete, 1u);
}

TEST(InUseTrackerTest, LateStartRebuildsFromOneSweep) {
  // Nothing of the allocations was seen, only a sweep.
  InUseTracker t;
  for (uint64_t i = 0; i < 10; ++i) {
    t.OnLive(100 * kSecond, 7, i * kSecond, 0x1000 + 16 * i, 5, 512, 1);
  }
  t.OnSweepEnd(101 * kSecond, 7, 100 * kSecond, 10, 3);
  t.ApplyBefore(200 * kSecond);
  EXPECT_EQ(t.ByStack().at(5), Values(10, 5120));
  EXPECT_EQ(t.stats().resurrected, 10u);
  EXPECT_EQ(t.stats().untracked, 3u);
  // Read again (a restarted collector sees old records twice): the same.
  for (uint64_t i = 0; i < 10; ++i) {
    t.OnLive(100 * kSecond, 7, i * kSecond, 0x1000 + 16 * i, 5, 512, 1);
  }
  t.ApplyBefore(200 * kSecond);
  EXPECT_EQ(t.ByStack().at(5), Values(10, 5120));
}

TEST(InUseTrackerTest, SweepCopyBeforeAFreeDoesNotResurrect) {
  InUseTracker t;
  t.OnAlloc(1 * kSecond, 0x100, 1, 100, 1);
  // The free (ring A) arrives before the sweep's copy (ring B), which was
  // taken earlier.
  t.OnFree(10 * kSecond + 5, 0x100);
  t.OnLive(10 * kSecond, 2, 1 * kSecond, 0x100, 1, 100, 1);
  t.OnSweepEnd(10 * kSecond + 9, 2, 10 * kSecond, 1, 0);
  t.ApplyBefore(20 * kSecond);
  EXPECT_EQ(TotalBytes(t), 0);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
