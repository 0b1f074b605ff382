#include "collector/profile/leaf_names.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/base/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

LeafNames Leaves(int64_t total,
                 std::vector<std::pair<std::string, UnnamedModule>> modules) {
  LeafNames leaves;
  leaves.total = total;
  for (auto& [path, module] : modules) {
    leaves.unnamed += module.value;
    leaves.modules[path] = module;
  }
  return leaves;
}

TEST(LeafNamesTest, SumsAcrossProfilesKeepingTheFirstReason) {
  LeafNamesByKind sum;
  sum[ProfileKind::kCpu] = Leaves(100, {{"/lib/libc.so.6", {"stripped", 30}}});
  LeafNamesByKind other;
  other[ProfileKind::kCpu] =
      Leaves(50, {{"/lib/libc.so.6", {"another", 5}}, {"", {"none", 1}}});
  other[ProfileKind::kMemory] = Leaves(4096, {});
  sum += other;
  const LeafNames& cpu = sum[ProfileKind::kCpu];
  EXPECT_EQ(cpu.total, 150);
  EXPECT_EQ(cpu.unnamed, 36);
  EXPECT_EQ(cpu.modules.at("/lib/libc.so.6").value, 35);
  EXPECT_EQ(cpu.modules.at("/lib/libc.so.6").reason, "stripped");
  EXPECT_EQ(cpu.modules.at("").value, 1);
  EXPECT_EQ(sum[ProfileKind::kMemory].total, 4096);
  EXPECT_EQ(sum[ProfileKind::kMemory].unnamed, 0);
}

TEST(LeafNamesTest, NothingCountedPrintsNothing) {
  EXPECT_THAT(LeafNameSummary({}), IsEmpty());
  LeafNamesByKind empty;
  empty[ProfileKind::kCpu] = LeafNames();
  EXPECT_THAT(LeafNameSummary(empty), IsEmpty());
}

TEST(LeafNamesTest, SummaryGivesEachKindsShareThenTheModulesHoldingIt) {
  LeafNamesByKind leaves;
  leaves[ProfileKind::kCpu] =
      Leaves(1000, {{"/usr/lib/libc.so.6", {"stripped (no .symtab)", 382}},
                    {"/opt/app", {"access denied", 1}}});
  leaves[ProfileKind::kMemory] =
      Leaves(1 << 20, {{"/usr/lib/libc.so.6", {"stripped (no .symtab)", 0}}});
  leaves[ProfileKind::kBlock] = Leaves(10'000'000, {{"", {"no module", 3}}});
  const std::string cpu = KindName(ProfileKind::kCpu);
  const std::string block = KindName(ProfileKind::kBlock);
  auto type = [](ProfileKind kind) {
    const ProfileKindInfo& info = KindInfo(kind);
    return std::string(info.sample_types[info.default_sample_type].type);
  };
  EXPECT_THAT(
      LeafNameSummary(leaves),
      ElementsAre(
          absl::StrCat("unsymbolized (samples whose leaf has no function "
                       "name): ",
                       cpu, " 38.3% of ", type(ProfileKind::kCpu), ", ",
                       KindName(ProfileKind::kMemory), " 0% of ",
                       type(ProfileKind::kMemory), ", ", block, " <0.1% of ",
                       type(ProfileKind::kBlock)),
          absl::StrCat("  libc.so.6 (", cpu, " 38.2%): stripped (no .symtab)"),
          absl::StrCat("  app (", cpu, " 0.1%): access denied"),
          absl::StrCat("  [no module] (", block, " <0.1%): no module")));
  // At most max_modules of them, the largest first.
  EXPECT_THAT(LeafNameSummary(leaves, 1),
              ElementsAre(HasSubstr("unsymbolized"), HasSubstr("libc.so.6"),
                          "  and 2 more modules (their reasons logged above)"));
}

TEST(LeafNamesTest, ExportsEveryKindUnderItsName) {
  for (const ProfileKindInfo& info : ProfileKinds()) {
    const std::string label = absl::StrCat("{profile=\"", info.name, "\"}");
    Metrics& metrics = Metrics::Get();
    Counter& total =
        metrics.GetCounter("ringprof_profile_value_total" + label, "");
    Counter& unnamed = metrics.GetCounter(
        "ringprof_profile_unsymbolized_value_total" + label, "");
    const uint64_t total_before = total.value();
    const uint64_t unnamed_before = unnamed.value();
    ExportLeafNames(info.kind, Leaves(400, {{"/x", {"why", 100}}}));
    ExportLeafNames(info.kind, Leaves(600, {}));
    EXPECT_EQ(total.value() - total_before, 1000u) << info.name;
    EXPECT_EQ(unnamed.value() - unnamed_before, 100u) << info.name;
    EXPECT_DOUBLE_EQ(
        metrics.GetGauge("ringprof_profile_unsymbolized_ratio" + label, "")
            .value(),
        static_cast<double>(unnamed.value()) / total.value());
    const std::string text = metrics.RenderText();
    EXPECT_THAT(text, HasSubstr("ringprof_profile_value_total" + label));
    EXPECT_THAT(text, HasSubstr("ringprof_profile_unsymbolized_ratio" + label));
  }
  EXPECT_THAT(Metrics::Get().RenderText(),
              HasSubstr("# TYPE ringprof_profile_unsymbolized_value_total "
                        "counter"));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
