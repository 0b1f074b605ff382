#include "collector/profile/tick_picker.h"

#include <cstdint>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kMs = 1'000'000;

struct Pick {
  uint64_t tick_ns;
  uint32_t tid;
  uint32_t payload;
  bool operator==(const Pick& o) const {
    return std::tie(tick_ns, tid, payload) ==
           std::tie(o.tick_ns, o.tid, o.payload);
  }
  bool operator<(const Pick& o) const {
    return std::tie(tick_ns, tid, payload) <
           std::tie(o.tick_ns, o.tid, o.payload);
  }
};

std::ostream& operator<<(std::ostream& os, const Pick& p) {
  return os << "{t=" << p.tick_ns / kMs << "ms tid=" << p.tid
            << " payload=" << p.payload << "}";
}

class Recorder {
 public:
  TickPicker::PickFn fn() {
    return [this](uint64_t t, uint32_t tid, uint32_t payload) {
      picks_.push_back({t, tid, payload});
    };
  }
  std::vector<Pick> Sorted() const {
    std::vector<Pick> p = picks_;
    std::sort(p.begin(), p.end());
    return p;
  }

 private:
  std::vector<Pick> picks_;
};

TickPicker::Options TenMs() {
  TickPicker::Options o;
  o.tick_ns = 10 * kMs;
  o.max_distance_ns = 10 * kMs;
  return o;
}

TEST(TickPickerTest, PicksClosestOfSeveralSamplesPerTick) {
  TickPicker picker(TenMs());
  // Around tick 100 ms: 93 (7 away), 98 (2 away), 104 (4 away).
  picker.Add(1, 93 * kMs, 1);
  picker.Add(1, 98 * kMs, 2);
  picker.Add(1, 104 * kMs, 3);
  Recorder r;
  picker.Finish(r.fn());
  // Tick 90: 93 is closest (3). Tick 100: 98 (2). Tick 110: 104 (6).
  EXPECT_THAT(r.Sorted(),
              ElementsAre(Pick{90 * kMs, 1, 1}, Pick{100 * kMs, 1, 2},
                          Pick{110 * kMs, 1, 3}));
}

TEST(TickPickerTest, TieGoesToEarlierSample) {
  TickPicker picker(TenMs());
  picker.Add(1, 95 * kMs, 1);
  picker.Add(1, 105 * kMs, 2);
  Recorder r;
  picker.Finish(r.fn());
  EXPECT_THAT(r.Sorted(),
              ElementsAre(Pick{90 * kMs, 1, 1}, Pick{100 * kMs, 1, 1},
                          Pick{110 * kMs, 1, 2}));
}

TEST(TickPickerTest, NoSampleWithinDistanceMeansNoPick) {
  TickPicker::Options o = TenMs();
  o.max_distance_ns = 3 * kMs;
  TickPicker picker(o);
  picker.Add(1, 105 * kMs, 1);  // 5 ms from both neighbours: never picked
  picker.Add(1, 202 * kMs, 2);  // 2 ms from tick 200
  Recorder r;
  picker.Finish(r.fn());
  EXPECT_THAT(r.Sorted(), ElementsAre(Pick{200 * kMs, 1, 2}));
}

TEST(TickPickerTest, EmptyTicksReportedOnlyWhenAsked) {
  TickPicker::Options o = TenMs();
  o.max_distance_ns = 2 * kMs;
  o.report_empty_ticks = true;
  TickPicker picker(o);
  picker.Add(1, 100 * kMs, 1);
  picker.Add(1, 130 * kMs, 2);
  Recorder r;
  picker.Finish(r.fn());
  EXPECT_THAT(r.Sorted(), ElementsAre(Pick{100 * kMs, 1, 1},
                                      Pick{110 * kMs, 0, TickPicker::kNoSample},
                                      Pick{120 * kMs, 0, TickPicker::kNoSample},
                                      Pick{130 * kMs, 1, 2}));
}

TEST(TickPickerTest, EachThreadPickedIndependently) {
  TickPicker picker(TenMs());
  constexpr int kThreads = 64;
  for (uint32_t tid = 1; tid <= kThreads; ++tid) {
    // Thread tid samples exactly on tick 500 ms + tid*10 ms.
    picker.Add(tid, (500 + 10 * tid) * kMs, tid);
  }
  Recorder r;
  picker.Finish(r.fn());
  std::vector<Pick> picks = r.Sorted();
  // A sample exactly on a tick wins that tick and, being 10 ms (= max
  // distance) from each neighbour, the neighbours too.
  ASSERT_EQ(picks.size(), 3u * kThreads);
  for (const Pick& p : picks) {
    EXPECT_EQ(p.payload, p.tid);
    const int64_t d = static_cast<int64_t>(p.tick_ns) -
                      static_cast<int64_t>((500 + 10 * p.tid) * kMs);
    EXPECT_LE(std::abs(d), static_cast<int64_t>(10 * kMs)) << p;
  }
}

TEST(TickPickerTest, WatermarkHoldsBackTicksUntilLateRecordsCanArrive) {
  TickPicker picker(TenMs());
  Recorder r;
  picker.Add(1, 101 * kMs, 1);
  // Tick 100 may still get a closer sample until watermark >= 110 ms.
  picker.Advance(109 * kMs, r.fn());
  EXPECT_THAT(r.Sorted(), IsEmpty());
  // A late record from another ring, older than the first one.
  picker.Add(1, 100 * kMs, 2);
  picker.Advance(110 * kMs, r.fn());
  EXPECT_THAT(r.Sorted(),
              ElementsAre(Pick{90 * kMs, 1, 2}, Pick{100 * kMs, 1, 2}));
  EXPECT_EQ(picker.late_samples(), 0u);
}

TEST(TickPickerTest, RecordsOlderThanDecidedTicksAreCountedLate) {
  TickPicker picker(TenMs());
  Recorder r;
  picker.Add(1, 200 * kMs, 1);
  picker.Advance(400 * kMs, r.fn());
  EXPECT_THAT(r.Sorted(),
              ElementsAre(Pick{190 * kMs, 1, 1}, Pick{200 * kMs, 1, 1},
                          Pick{210 * kMs, 1, 1}));
  picker.Add(2, 150 * kMs, 2);  // every tick it could win is decided
  EXPECT_EQ(picker.late_samples(), 1u);
  picker.Finish(r.fn());
  EXPECT_EQ(r.Sorted().size(), 3u);
}

TEST(TickPickerTest, ClockEdgesAtZeroAndAcrossAdvances) {
  TickPicker picker(TenMs());
  Recorder r;
  picker.Add(1, 0, 1);  // at the clock's origin: no negative ticks
  picker.Add(1, 3 * kMs, 2);
  picker.Advance(5 * kMs, r.fn());  // below max distance: nothing decided
  EXPECT_THAT(r.Sorted(), IsEmpty());
  picker.Advance(10 * kMs, r.fn());
  EXPECT_THAT(r.Sorted(), ElementsAre(Pick{0, 1, 1}));
  picker.Add(1, 19 * kMs, 3);
  picker.Finish(r.fn());
  // Tick 30 is 11 ms from the last sample: beyond the max distance.
  EXPECT_THAT(r.Sorted(), ElementsAre(Pick{0, 1, 1}, Pick{10 * kMs, 1, 2},
                                      Pick{20 * kMs, 1, 3}));
}

TEST(TickPickerTest, IncrementalAdvanceEqualsOneShot) {
  // The same samples decided in many small steps or at once give the same
  // picks: the watermark only delays decisions.
  std::vector<std::tuple<uint32_t, uint64_t, uint32_t>> samples;
  uint64_t state = 12345;
  for (uint32_t i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    samples.emplace_back(1 + (state >> 60), i * 3 * kMs + (state >> 40) % kMs,
                         i);
  }
  TickPicker one_shot(TenMs());
  Recorder all;
  for (auto [tid, t, p] : samples) one_shot.Add(tid, t, p);
  one_shot.Finish(all.fn());

  TickPicker stepped(TenMs());
  Recorder steps;
  for (auto [tid, t, p] : samples) {
    stepped.Add(tid, t, p);
    // Watermark trails the newest sample by more than the sample jitter.
    if (t > 2 * kMs) stepped.Advance(t - 2 * kMs, steps.fn());
  }
  stepped.Finish(steps.fn());
  EXPECT_EQ(stepped.late_samples(), 0u);
  EXPECT_EQ(all.Sorted(), steps.Sorted());
  EXPECT_GT(all.Sorted().size(), 500u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
