#include "collector/shipping/labels.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

WindowProfile Profile(const std::string& name) {
  WindowProfile p;
  p.kind = FindProfileKind(name)->kind;
  p.service_name = "svc";
  p.pid = 42;
  p.session_id = "0011223344556677";
  return p;
}

TEST(BuildSeriesLabelsTest, CpuSeriesHasSessionIdNotPid) {
  SeriesLabelConfig config;
  config.tags = {{"env", "prod"}};
  config.host_labels = {{"hostname", "h1"}, {"pod", ""}};
  config.source_labels = {{"service_git_ref", "abc123"}};
  WindowProfile p = Profile("process_cpu");
  p.labels = {{"service_name", "svc"}, {"ringprof_cpu_source", "timer"}};
  SeriesLabels s = BuildSeriesLabels(config, p);
  EXPECT_THAT(s.labels, ElementsAre(Pair("__name__", "process_cpu"),
                                    Pair("__session_id__", "0011223344556677"),
                                    Pair("env", "prod"), Pair("hostname", "h1"),
                                    Pair("ringprof_cpu_source", "timer"),
                                    Pair("service_git_ref", "abc123"),
                                    Pair("service_name", "svc")));
  EXPECT_TRUE(ValidateSeriesLabels(s.labels).ok());
  config.pid_label = true;
  EXPECT_THAT(BuildSeriesLabels(config, p).labels,
              testing::Contains(Pair("pid", "42")));
}

TEST(BuildSeriesLabelsTest, MemorySeriesCarriesDeltaFalseAndAppNameWins) {
  SeriesLabelConfig config;
  config.application_name = "app";
  config.host_labels = {{"hostname", "h1"}};
  config.tags = {{"hostname", "from-tag"}};
  WindowProfile p = Profile("memory");
  p.session_id.clear();
  SeriesLabels s = BuildSeriesLabels(config, p);
  EXPECT_THAT(
      s.labels,
      ElementsAre(Pair("__delta__", "false"), Pair("__name__", "memory"),
                  Pair("hostname", "from-tag"), Pair("service_name", "app")));
}

TEST(BuildSeriesLabelsTest, ServiceNameIsRepairedOrUnknown) {
  WindowProfile p = Profile("process_cpu");
  p.service_name = "bin_caf\xe9";
  EXPECT_THAT(BuildSeriesLabels({}, p).labels,
              testing::Contains(Pair("service_name", "bin_caf\xEF\xBF\xBD")));
  p.service_name.clear();
  EXPECT_THAT(BuildSeriesLabels({}, p).labels,
              testing::Contains(Pair("service_name", "unknown_service")));
}

TEST(BuildSeriesLabelsTest,
     WorkloadLabelsNeverReplaceTheCollectorsAndFailAlone) {
  SeriesLabelConfig config;
  config.host_labels = {{"hostname", "h1"}};
  config.tags = {{"env", "prod"}};
  WindowProfile p = Profile("process_cpu");
  p.workload_labels = {
      {"pod", "evil"},
      {"namespace", "evil"},
      {"hostname", "evil"},
      {"pid", "1"},
      {"service_name", "evil"},
      {"__session_id__", "ffffffffffffffff"},
      {"__otel__", "true"},
      {"env", "dev"},
      {"9lives", "x"},
      {"bad name", "x"},
      {"empty", ""},
      {"team.name", "caf\xe9"},
      {"team_name", "dup"},
  };
  SeriesLabels s = BuildSeriesLabels(config, p);
  EXPECT_THAT(s.labels, ElementsAre(Pair("__name__", "process_cpu"),
                                    Pair("__session_id__", "0011223344556677"),
                                    Pair("env", "prod"), Pair("hostname", "h1"),
                                    Pair("service_name", "svc"),
                                    Pair("team.name", "caf\xEF\xBF\xBD")));
  EXPECT_TRUE(ValidateSeriesLabels(s.labels).ok());
  EXPECT_EQ(s.dropped.size(), 12u);
  EXPECT_THAT(s.dropped[0],
              Field(&DroppedLabel::reason, HasSubstr("collector")));
}

TEST(BuildSeriesLabelsTest, WorkloadLabelsStopAtThirty) {
  WindowProfile p = Profile("process_cpu");
  for (int i = 0; i < 40; ++i) {
    p.workload_labels.emplace_back("l" + std::to_string(i), "v");
  }
  SeriesLabels s = BuildSeriesLabels({}, p);
  EXPECT_EQ(s.labels.size(), 30u);
  EXPECT_EQ(s.dropped.size(), 13u);
  EXPECT_TRUE(ValidateSeriesLabels(s.labels).ok());
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
