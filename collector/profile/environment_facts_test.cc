#include "collector/profile/environment_facts.h"

#include <string>

#include "collector/base/metrics.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

uint64_t FactCount(const std::string& fact) {
  return Metrics::Get()
      .GetCounter("ringprof_environment_facts_total{fact=\"" + fact + "\"}", "")
      .value();
}

TEST(EnvironmentFactsTest, EachDistinctFactIsKeptOnceAndEveryReportCounted) {
  const uint64_t before = FactCount("no_dl_find_object");
  ReportEnvironmentFact("perl", 10, 2, "2.31");
  ReportEnvironmentFact("perl", 11, 2, "2.31");  // another process
  ReportEnvironmentFact("sort", 12, 2, "2.31");  // another service
  EXPECT_EQ(FactCount("no_dl_find_object"), before + 3);
  const std::vector<std::string> lines = EnvironmentFactLines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "perl: glibc before 2.35 has no _dl_find_object: CPU-sample "
            "stacks stop at the first frame in a library loaded after start: "
            "2.31");
  EXPECT_EQ(lines[1].substr(0, 6), "sort: ");
}

TEST(EnvironmentFactsTest, UntrustedTextIsRepairedAndUnknownKindsKept) {
  ReportEnvironmentFact("evil\nsvc", 1, 999, std::string("a\0b\x1b", 4));
  const std::vector<std::string> lines = EnvironmentFactLines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "evil?svc: environment fact 999: a?b?");
  EXPECT_EQ(FactCount("kind_999"), 1u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
