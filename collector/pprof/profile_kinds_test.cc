#include "collector/pprof/profile_kinds.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(ProfileKindsTest, EveryKindHasOneRowFoundByItsName) {
  std::set<std::string> names;
  for (const ProfileKindInfo& info : ProfileKinds()) {
    EXPECT_EQ(&KindInfo(info.kind), &info);
    EXPECT_EQ(FindProfileKind(info.name), &info);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
  }
  EXPECT_EQ(FindProfileKind("no_such_kind"), nullptr);
}

TEST(ProfileKindsTest, PyroscopeNamesAndGoSampleTypes) {
  // The names and types Pyroscope's SDKs use, so that its UI and queries
  // find ours where they find theirs.
  EXPECT_STREQ(KindName(ProfileKind::kCpu), "process_cpu");
  EXPECT_STREQ(KindName(ProfileKind::kMemory), "memory");
  EXPECT_STREQ(KindName(ProfileKind::kMutex), "mutex");
  EXPECT_STREQ(KindName(ProfileKind::kBlock), "block");
  const ProfileSpec waits = SpecOf(ProfileKind::kMutex);
  ASSERT_EQ(waits.sample_types.size(), 2u);
  EXPECT_EQ(waits.sample_types[0].type, "contentions");
  EXPECT_EQ(waits.sample_types[0].unit, "count");
  EXPECT_EQ(waits.sample_types[1].type, "delay");
  EXPECT_EQ(waits.sample_types[1].unit, "nanoseconds");
  EXPECT_EQ(waits.period_type.type, "contentions");
  EXPECT_EQ(waits.period_type.unit, "count");
  EXPECT_EQ(waits.primary_value, 1);  // delay
  const ProfileSpec memory = SpecOf(ProfileKind::kMemory);
  ASSERT_EQ(memory.sample_types.size(), 4u);
  EXPECT_EQ(memory.sample_types[memory.primary_value].type, "alloc_space");
  EXPECT_EQ(memory.period_type.type, "space");
  EXPECT_EQ(memory.period, 0);
}

TEST(ProfileKindsTest, SourcePeriodIsTheCallersOthersTheTables) {
  EXPECT_EQ(SpecOf(ProfileKind::kCpu, 10'000'000).period, 10'000'000);
  EXPECT_EQ(SpecOf(ProfileKind::kCpu, 5).period, 5);
  EXPECT_EQ(SpecOf(ProfileKind::kBlock, 10'000'000).period, 1);
}

TEST(ProfileKindsTest, OnlyInUseValuesAreSnapshots) {
  EXPECT_TRUE(IsSnapshotSampleType("inuse_space"));
  EXPECT_TRUE(IsSnapshotSampleType("inuse_objects"));
  EXPECT_FALSE(IsSnapshotSampleType("alloc_space"));
  EXPECT_FALSE(IsSnapshotSampleType("cpu"));
  EXPECT_FALSE(IsSnapshotSampleType("delay"));
}

TEST(ProfileKindsTest, ViewsShowAValueOfTheirKindInFilesOfTheirOwn) {
  std::set<std::string> files;
  for (const ProfileKindInfo& info : ProfileKinds()) {
    ASSERT_GE(info.default_sample_type, 0);
    ASSERT_LT(static_cast<size_t>(info.default_sample_type),
              info.sample_types.size());
    EXPECT_FALSE(info.views.empty()) << info.name;
    for (const LocalView& view : info.views) {
      bool found = false;
      for (const SampleTypeInfo& type : info.sample_types) {
        found |= std::string(type.type) == view.sample_type;
      }
      EXPECT_TRUE(found) << info.name << ": " << view.sample_type;
      EXPECT_TRUE(files.insert(view.file).second) << view.file;
      EXPECT_NE(std::string(view.title), "");
      EXPECT_NE(std::string(view.caption), "");
    }
  }
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
