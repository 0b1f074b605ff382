#include "collector/profile/window_set.h"

#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kTick = 10'000'000;

struct Seen {
  int64_t index, from, until;
  bool final_window;
  int64_t first_event;
};

std::vector<Seen> Close(WindowSet& set, int64_t unix_ns, bool idle = false) {
  std::vector<Seen> out;
  set.CloseBefore(unix_ns, idle, [&](const WindowSet::Closed& c) {
    out.push_back({c.index, c.from_unix_ns, c.until_unix_ns, c.final_window,
                   c.window.first_event_unix_ns});
  });
  return out;
}

TEST(WindowSetTest, WindowsCloseOnceTheyEndedOldestFirst) {
  WindowSet set(10 * kSec, kTick);
  set.At(25 * kSec);
  set.At(3 * kSec);
  set.At(4 * kSec);
  EXPECT_TRUE(Close(set, 9 * kSec).empty());  // window 0 has not ended
  std::vector<Seen> closed = Close(set, 10 * kSec);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].index, 0);
  EXPECT_EQ(closed[0].from, 0);
  EXPECT_EQ(closed[0].until, 10 * kSec);
  EXPECT_FALSE(closed[0].final_window);
  EXPECT_EQ(closed[0].first_event, 3 * kSec);
  EXPECT_TRUE(Close(set, 29 * kSec).empty());
  EXPECT_FALSE(set.empty());
}

TEST(WindowSetTest, TheLastWindowEndsATickAfterItsLastEvent) {
  WindowSet set(10 * kSec, kTick);
  set.At(2 * kSec);
  set.At(12 * kSec + 5);
  std::vector<Seen> closed = Close(set, INT64_MAX);
  ASSERT_EQ(closed.size(), 2u);
  EXPECT_FALSE(closed[0].final_window);
  EXPECT_EQ(closed[0].until, 10 * kSec);
  EXPECT_TRUE(closed[1].final_window);
  EXPECT_EQ(closed[1].until, 12 * kSec + 5 + kTick);
  EXPECT_TRUE(set.empty());
}

TEST(WindowSetTest, LateDataGoesToTheOldestOpenWindow) {
  WindowSet set(10 * kSec, kTick);
  set.At(5 * kSec);
  Close(set, 10 * kSec);
  // Window 0 is gone: a record stamped in it counts in window 1.
  WindowSet::Window& late = set.At(7 * kSec);
  late.aggregates.timer_cpu_ns[1] += 42;
  std::vector<Seen> closed = Close(set, INT64_MAX);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].index, 1);
}

TEST(WindowSetTest, IdleWindowsAreFilledBoundedly) {
  WindowSet set(10 * kSec, kTick);
  set.At(1 * kSec);
  // Without idle filling only the window with data closes.
  EXPECT_EQ(Close(set, 50 * kSec, /*idle=*/false).size(), 1u);
  set.At(51 * kSec);
  // Windows 1 to 4 (idle), 5 (data), 6 to 8 (idle) end by 90 s.
  std::vector<Seen> closed = Close(set, 90 * kSec, /*idle=*/true);
  ASSERT_EQ(closed.size(), 8u);
  EXPECT_EQ(closed.front().index, 1);
  EXPECT_EQ(closed[4].first_event, 51 * kSec);
  EXPECT_EQ(closed.back().index, 8);
  // A timestamp a year ahead creates at most kMaxIdleWindows + 1 windows.
  const int64_t year = 365LL * 24 * 3600 * kSec;
  EXPECT_EQ(static_cast<int64_t>(Close(set, year, /*idle=*/true).size()),
            WindowSet::kMaxIdleWindows + 1);
}

TEST(WindowSetTest, PositionsStopAtTheRecordsOfOpenWindows) {
  WindowSet set(10 * kSec, kTick);
  WindowSet::Contributes(set.At(1 * kSec), /*ring=*/0, /*index=*/7);
  WindowSet::Contributes(set.At(2 * kSec), 0, 5);
  WindowSet::Contributes(set.At(15 * kSec), 1, 30);
  std::vector<uint64_t> positions = {100, 100, 100};
  set.LowerPositions(positions);
  EXPECT_EQ(positions, (std::vector<uint64_t>{5, 30, 100}));
  Close(set, 10 * kSec);  // window 0 delivered: its records no longer hold
  positions = {100, 100, 100};
  set.LowerPositions(positions);
  EXPECT_EQ(positions, (std::vector<uint64_t>{100, 30, 100}));
}

TEST(WindowSetTest, AResumedSetStartsAtThePredecessorsEnd) {
  WindowSet set(10 * kSec, kTick);
  set.ResumeAt(20 * kSec + 3);
  set.At(5 * kSec);  // delivered time: counts in the first open window
  std::vector<Seen> closed = Close(set, INT64_MAX);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].index, 2);
  WindowSet fresh(10 * kSec, kTick);
  fresh.ResumeAt(INT64_MIN);  // nothing delivered
  fresh.At(5 * kSec);
  EXPECT_EQ(Close(fresh, INT64_MAX)[0].index, 0);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
