// Tags without a session (no ring file): the per-thread stack, the intern
// table and the bounds.
#include "emitter/tags.h"

#include <string>
#include <thread>

#include "emitter/runtime.h"
#include "emitter/thread_state.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

uint32_t Current() { return TagsForSample(0).tag_set; }

TEST(TagsTest, PushPopRestoresAndInternsEachSetOnce) {
  EXPECT_EQ(Current(), 0u);
  PushTag("endpoint", "/checkout");
  const uint32_t checkout = Current();
  EXPECT_NE(checkout, 0u);
  PushTag("tenant", "42");
  const uint32_t nested = Current();
  EXPECT_NE(nested, checkout);
  PopTag();
  EXPECT_EQ(Current(), checkout);
  PopTag();
  EXPECT_EQ(Current(), 0u);
  PopTag();  // unbalanced: ignored
  EXPECT_EQ(Current(), 0u);
  // The same pushes give the same ids.
  PushTag("endpoint", "/checkout");
  EXPECT_EQ(Current(), checkout);
  PushTag("tenant", "42");
  EXPECT_EQ(Current(), nested);
  PopTag();
  PopTag();
}

TEST(TagsTest, ThreadsDoNotSeeEachOthersTags) {
  PushTag("endpoint", "/main");
  const uint32_t main_set = Current();
  uint32_t seen_at_start = 1, seen_after_push = 0;
  std::thread other([&] {
    seen_at_start = Current();
    PushTag("endpoint", "/main");  // same content: same id
    seen_after_push = Current();
  });
  other.join();
  EXPECT_EQ(seen_at_start, 0u);
  EXPECT_EQ(seen_after_push, main_set);
  EXPECT_EQ(Current(), main_set);
  PopTag();
}

TEST(TagsTest, DepthBeyondTheBoundChangesNothingAndPairsUp) {
  for (uint32_t i = 0; i < ringfile::kMaxTagsPerSet; ++i) {
    PushTag(("k" + std::to_string(i)).c_str(), "v");
  }
  const uint32_t full = Current();
  const uint64_t too_deep = GetTagStats().too_deep;
  PushTag("extra", "x");
  PushTag("extra2", "y");
  EXPECT_EQ(Current(), full);
  EXPECT_EQ(GetTagStats().too_deep, too_deep + 2);
  PopTag();
  PopTag();
  EXPECT_EQ(Current(), full);
  PopTag();
  EXPECT_NE(Current(), full);
  for (uint32_t i = 1; i < ringfile::kMaxTagsPerSet; ++i) PopTag();
  EXPECT_EQ(Current(), 0u);
}

TEST(TagsTest, EmptyKeyChangesNothingButPairs) {
  PushTag("a", "1");
  const uint32_t a = Current();
  PushTag("", "x");
  PushTag(nullptr, "x");
  EXPECT_EQ(Current(), a);
  PopTag();
  PopTag();
  EXPECT_EQ(Current(), a);
  PopTag();
  EXPECT_EQ(Current(), 0u);
}

TEST(TagsTest, LongValuesAreCutAtACharacterBoundary) {
  // 127 ASCII bytes then a 2-byte character: the cut at 128 would split it.
  std::string value(127, 'x');
  value += "\xc3\xa9";
  PushTag("k", value.c_str());
  const uint32_t cut = Current();
  PopTag();
  PushTag("k", std::string(127, 'x').c_str());
  EXPECT_EQ(Current(), cut);  // same content after the cut
  PopTag();
  // Values that differ only beyond the bound are the same set.
  PushTag("k", (std::string(128, 'y') + "1").c_str());
  const uint32_t y1 = Current();
  PopTag();
  PushTag("k", (std::string(128, 'y') + "2").c_str());
  EXPECT_EQ(Current(), y1);
  PopTag();
}

TEST(TagsTest, SpanIdIsPerThreadAndRestorable) {
  EXPECT_EQ(SetSpanId(0x1234), 0u);
  uint64_t other_span = 1;
  std::thread other([&] { other_span = TagsForSample(0).span_id; });
  other.join();
  EXPECT_EQ(other_span, 0u);
  EXPECT_EQ(TagsForSample(0).span_id, 0x1234u);
  EXPECT_EQ(SetSpanId(0), 0x1234u);
}

TEST(TagsTest, ConcurrentInternsAgree) {
  // Threads interning the same sets at once get the same ids.
  uint32_t ids[4][8] = {};
  std::thread threads[4];
  for (int t = 0; t < 4; ++t) {
    threads[t] = std::thread([&ids, t] {
      for (int i = 0; i < 8; ++i) {
        PushTag("race", std::to_string(i).c_str());
        ids[t][i] = Current();
        EXPECT_NE(ids[t][i], 0u);
        PopTag();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < 4; ++t) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(ids[t][i], ids[0][i]);
  }
}

// Last: fills the table.
TEST(TagsTest, FullTableKeepsTheCurrentSet) {
  PushTag("base", "1");
  const uint32_t base = Current();
  const uint64_t full_before = GetTagStats().table_full;
  for (uint32_t i = 0; i < kMaxTagSets + 10; ++i) {
    PushTag("n", std::to_string(i).c_str());
    const uint32_t id = Current();
    EXPECT_TRUE(id == base || id != 0);
    PopTag();
  }
  EXPECT_EQ(GetTagStats().sets, kMaxTagSets);
  EXPECT_GT(GetTagStats().table_full, full_before);
  PushTag("n", "new value beyond the table");
  EXPECT_EQ(Current(), base);
  PopTag();
  // Sets interned before the table filled are still found.
  PushTag("n", "0");
  EXPECT_NE(Current(), base);
  PopTag();
  PopTag();
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
