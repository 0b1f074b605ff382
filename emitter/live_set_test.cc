// The live set on its own (no session, so sweeps append nothing): exact
// membership, the filter cleared by the last removal, the capacity bound,
// realloc's detach/restore, and concurrent use (run under ASan and TSan).
#include "emitter/live_set.h"

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "emitter/runtime.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr int kMaxFrames = 8;

class LiveSetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(LiveSetInit(kMaxFrames)); }

  // Addresses unique to each test (16-byte aligned, never 0).
  static uint64_t Address(uint64_t test, uint64_t i) {
    return (test << 32) + 16 * (i + 1);
  }

  static bool Track(uint64_t address) {
    const uint32_t entry = LiveSetReserve(address);
    if (entry == kNoEntry) return false;
    const uint64_t frames[2] = {0x401000, 0x402000};
    LiveSetPublish(entry, 1, 2, 0, 64, 4096, address, frames, 2);
    return true;
  }

  static bool Untrack(uint64_t address) {
    const uint32_t entry = LiveSetDetach(address);
    if (entry == kNoEntry) return false;
    LiveSetRelease(entry);
    return true;
  }
};

TEST_F(LiveSetTest, MembershipIsExactAndTheFilterClears) {
  const uint32_t before = LiveSetSize();
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(Track(Address(1, i)));
  EXPECT_EQ(LiveSetSize(), before + 1000);
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_TRUE(MaybeLive(Address(1, i)));
  }
  // Never tracked: not removable (a filter collision is only a "maybe").
  EXPECT_FALSE(Untrack(Address(1, 5000)));
  for (uint64_t i = 0; i < 1000; i += 2) EXPECT_TRUE(Untrack(Address(1, i)));
  // A second free of the same address (double free) finds nothing.
  EXPECT_FALSE(Untrack(Address(1, 0)));
  for (uint64_t i = 1; i < 1000; i += 2) EXPECT_TRUE(Untrack(Address(1, i)));
  EXPECT_EQ(LiveSetSize(), before);
  // Every cell these addresses used is back to zero.
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_FALSE(MaybeLive(Address(1, i))) << i;
  }
}

// The free path's cell keeps neighbouring blocks on one cache line of the
// filter, and the same offset in different 64 MiB-aligned regions (glibc's
// thread arenas) in different cells.
TEST_F(LiveSetTest, FilterCellsKeepNeighboursTogetherAndArenasApart) {
  const uint64_t base = uint64_t{0x7f12} << 32;
  for (uint64_t offset = 0; offset < 1024; offset += 16) {
    EXPECT_EQ(LiveFilterCell(base + offset) / 64, LiveFilterCell(base) / 64);
    if (offset != 0) {
      EXPECT_NE(LiveFilterCell(base + offset), LiveFilterCell(base));
    }
  }
  std::set<uint32_t> cells;
  for (uint64_t arena = 0; arena < 64; ++arena) {
    cells.insert(LiveFilterCell(base + (arena << 26) + 0x1230));
  }
  EXPECT_EQ(cells.size(), 64u);
}

// A pinned cell (a bootstrap block's) stays set whatever samples sharing it
// come and go, so every free of the pinned address takes the slow path.
TEST_F(LiveSetTest, PinnedCellOutlivesSamplesSharingIt) {
  // In a cell no other test's addresses use (theirs are all below 2^15),
  // since a pin is for good.
  const uint64_t pinned = Address(9, 0) + (uint64_t{1} << 20);
  ASSERT_GE(LiveFilterCell(pinned), 1u << 15);
  const uint64_t sharing = pinned + (uint64_t{1} << 38);
  ASSERT_EQ(LiveFilterCell(pinned), LiveFilterCell(sharing));
  ASSERT_FALSE(MaybeLive(pinned));
  LiveFilterPin(pinned);
  EXPECT_TRUE(MaybeLive(pinned));
  ASSERT_TRUE(Track(sharing));
  EXPECT_TRUE(Untrack(sharing));
  EXPECT_TRUE(MaybeLive(pinned));
  EXPECT_TRUE(MaybeLive(sharing));  // a collision, and only a "maybe"
  EXPECT_FALSE(Untrack(pinned));    // never a sample
}

// A sample is tracked in both the summary and its filter cell or in
// neither: when the summary counter of a group of cells saturates (255
// live samples in it) the next sample there is refused and leaves its own
// cell untouched, and removals take both back to zero.
TEST_F(LiveSetTest, SaturatedSummaryRefusesWithoutTouchingTheCell) {
  // A group no other test uses (cells 0x18000 to 0x1801f), the same cells
  // again every 2^38 bytes.
  const uint64_t base = (uint64_t{1} << 38) + (uint64_t{0x18000} << 4);
  ASSERT_EQ(LiveFilterCell(base), 0x18000u);
  auto address = [&](uint64_t i) {
    return base + 16 * (i % 32) + ((i / 32) << 38);
  };
  ASSERT_EQ(LiveFilterCell(address(255)), 0x1801fu);
  ASSERT_FALSE(MaybeLive(address(255)));
  for (uint64_t i = 0; i < 255; ++i) ASSERT_TRUE(Track(address(i))) << i;
  // The 256th, in a cell of its own within the group (i % 32 == 31 holds
  // only 7 samples), is refused by the saturated summary.
  EXPECT_FALSE(Track(address(255)));
  EXPECT_TRUE(MaybeLive(address(255)));  // its cell is shared, a "maybe"
  for (uint64_t i = 0; i < 255; ++i) ASSERT_TRUE(Untrack(address(i))) << i;
  // Nothing left over: neither counter kept the refused sample.
  EXPECT_FALSE(MaybeLive(address(255)));
  EXPECT_TRUE(Track(address(255)));
  EXPECT_TRUE(Untrack(address(255)));
  EXPECT_FALSE(MaybeLive(address(255)));
}

TEST_F(LiveSetTest, ReallocFailureRestoresTheEntry) {
  const uint64_t address = Address(2, 0);
  ASSERT_TRUE(Track(address));
  const uint32_t entry = LiveSetDetach(address);
  ASSERT_NE(entry, kNoEntry);
  EXPECT_FALSE(MaybeLive(address));
  LiveSetRestore(entry, address);
  EXPECT_TRUE(MaybeLive(address));
  EXPECT_TRUE(Untrack(address));
  EXPECT_FALSE(MaybeLive(address));
}

TEST_F(LiveSetTest, FullSetRefusesAndRecoversAfterFrees) {
  std::vector<uint64_t> tracked;
  for (uint64_t i = 0; i < kLiveCapacity + 100; ++i) {
    if (Track(Address(3, i))) tracked.push_back(Address(3, i));
  }
  // Some capacity may be in use by other tests' leftovers (none here), and
  // a crowded probe run may refuse an address early: never more than fits.
  EXPECT_LE(tracked.size(), kLiveCapacity);
  EXPECT_GE(tracked.size(), kLiveCapacity * 9 / 10);
  EXPECT_EQ(LiveSetReserve(Address(3, kLiveCapacity + 200)), kNoEntry);
  for (uint64_t address : tracked) ASSERT_TRUE(Untrack(address));
  EXPECT_TRUE(Track(Address(3, kLiveCapacity + 300)));
  EXPECT_TRUE(Untrack(Address(3, kLiveCapacity + 300)));
}

// Threads allocate and free their own addresses, a freeing thread may be
// another than the allocating one (hand-off through a queue), and a sweeper
// copies entries all along. Bounded: a fixed number of operations.
TEST_F(LiveSetTest, ConcurrentTrackUntrackAndSweeps) {
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> handed[kThreads];
  for (auto& h : handed) h.store(0);
  std::thread sweeper([&] {
    uint64_t now = 0;
    while (!done.load()) {
      now += kSweepIntervalNs;
      MaybeSweepLiveSet(now);
    }
  });
  std::vector<std::thread> threads;
  std::atomic<uint64_t> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t address = Address(10 + t, i);
        if (!Track(address)) continue;
        if (i % 2 == 0) {
          if (!Untrack(address)) failures.fetch_add(1);
        } else {
          // Freed by the next thread (the previous one's hand-off).
          const uint64_t previous =
              handed[t].exchange(address, std::memory_order_acq_rel);
          if (previous != 0 && !Untrack(previous)) failures.fetch_add(1);
        }
        // Someone else's hand-off, taken over now and then.
        const int other = (t + 1) % kThreads;
        const uint64_t theirs =
            handed[other].exchange(0, std::memory_order_acq_rel);
        if (theirs != 0 && !Untrack(theirs)) failures.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& h : handed) {
    const uint64_t left = h.exchange(0);
    if (left != 0) EXPECT_TRUE(Untrack(left));
  }
  done.store(true);
  sweeper.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(LiveSetSize(), 0u);
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < kPerThread; i += 997) {
      EXPECT_FALSE(MaybeLive(Address(10 + t, i)));
    }
  }
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
