#include "collector/profile/tag_labeler.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Tags = std::vector<std::pair<absl::string_view, absl::string_view>>;

TEST(TagLabelerTest, TagsBecomeSortedSampleLabelsWithTheSpanId) {
  ProcessMemory memory(1 << 20, nullptr);
  TagLabeler labeler(1, 100, {}, &memory);
  ASSERT_TRUE(labeler.Define(5, Tags{{"route", "/a"}, {"k8s.team", "web"}}));
  const uint32_t id = labeler.LabelsFor(5, 0xabc);
  ASSERT_NE(id, 0u);
  EXPECT_THAT(labeler.labels(id),
              ElementsAre(Pair("k8s.team", "web"), Pair("route", "/a"),
                          Pair("span_id", "0000000000000abc")));
  EXPECT_EQ(labeler.LabelsFor(5, 0xabc), id);
  EXPECT_NE(labeler.LabelsFor(5, 0), id);
  EXPECT_EQ(labeler.LabelsFor(0, 0), 0u);
}

TEST(TagLabelerTest, RefusesWhatTheRulesRefuse) {
  ProcessMemory memory(1 << 20, nullptr);
  TagLabeler labeler(1, 100, {{"env", "prod"}}, &memory);
  ASSERT_TRUE(labeler.Define(1, Tags{{"service_name", "x"},
                                     {"span_id", "1"},
                                     {"env", "dev"},
                                     {"ringprof_cpu_source", "t"},
                                     {"9bad", "v"},
                                     {"empty", ""},
                                     {"a.b", "1"},
                                     {"a_b", "2"},
                                     {"ok", "yes"}}));
  EXPECT_THAT(labeler.labels(labeler.LabelsFor(1, 0)),
              ElementsAre(Pair("a.b", "1"), Pair("ok", "yes")));
  EXPECT_EQ(labeler.stats().labels_dropped, 7u);
}

TEST(TagLabelerTest, ValuesPastTheBudgetBecomeOtherAndIdsKeepTheirFirstSet) {
  ProcessMemory memory(1 << 20, nullptr);
  TagLabeler labeler(1, 2, {}, &memory);
  const std::string values[] = {"a", "b", "c"};
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(labeler.Define(i + 1, Tags{{"user", values[i]}}));
  }
  EXPECT_THAT(labeler.labels(labeler.LabelsFor(3, 0)),
              ElementsAre(Pair("user", "other")));
  EXPECT_EQ(labeler.stats().values_folded, 1u);
  ASSERT_TRUE(labeler.Define(1, Tags{{"user", "zzz"}}));
  EXPECT_THAT(labeler.labels(labeler.LabelsFor(1, 0)),
              ElementsAre(Pair("user", "a")));
}

TEST(TagLabelerTest, UnknownSetsAreCountedAndKeepTheSpan) {
  ProcessMemory memory(1 << 20, nullptr);
  TagLabeler labeler(1, 100, {}, &memory);
  EXPECT_EQ(labeler.LabelsFor(9, 0), 0u);
  const uint32_t span_only = labeler.LabelsFor(9, 1);
  EXPECT_THAT(labeler.labels(span_only),
              ElementsAre(Pair("span_id", "0000000000000001")));
  EXPECT_EQ(labeler.stats().unknown_sets, 2u);
}

TEST(TagLabelerTest, PastTheBudgetASampleKeepsItsTagsAndLosesItsSpan) {
  ProcessMemory memory(150, nullptr);
  TagLabeler labeler(1, 100, {}, &memory);
  ASSERT_TRUE(labeler.Define(1, Tags{{"k", "v"}}));
  const uint32_t tags = labeler.LabelsFor(1, 0);
  ASSERT_NE(tags, 0u);
  EXPECT_EQ(labeler.LabelsFor(1, 77), tags);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
