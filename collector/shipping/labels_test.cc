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

TEST(ParseTagsTest, ParsesPyroscopeTagSyntaxRenamingDotsLikeTheServer) {
  absl::StatusOr<Labels> tags =
      ParseTags(" env=prod , region = eu.1,k8s.cluster=prod,_x=1 ");
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, ElementsAre(Pair("env", "prod"), Pair("region", "eu.1"),
                                 Pair("k8s_cluster", "prod"), Pair("_x", "1")));
  EXPECT_TRUE(ParseTags("")->empty());
  // The operator may name the host.
  EXPECT_TRUE(ParseTags("hostname=h,namespace=n,pod=p").ok());
}

TEST(ParseTagsTest, RejectsWhatPyroscopeWouldReject) {
  struct Case {
    std::string text, fragment;
  } cases[] = {
      {"env", "name=value"},
      {"my-env=prod", "invalid label name"},
      {"1env=prod", "must not start with a digit"},
      {"=prod", "empty label name"},
      {"env=", "empty value"},
      {"env=a,env=b", "twice"},
      {"a_b=1,a.b=2", "after renaming"},
      {"service_name=x", "reserved"},
      {"pid=1", "reserved"},
      {"__name__=x", "reserved"},
      {"__session_id__=0011223344556677", "reserved"},
      {"__otel__=true", "reserved"},
      {"__order__=enforced", "reserved"},
      {"__delta__=false", "reserved"},
      {std::string(1025, 'a') + "=v", "longer than 1024"},
      {"k=" + std::string(2049, 'v'), "longer than 2048"},
      {"k=\xff\xfe", "UTF-8"},
      {"k=\xc0\xaf", "UTF-8"},  // overlong '/'
  };
  for (const Case& c : cases) {
    absl::StatusOr<Labels> tags = ParseTags(c.text);
    ASSERT_FALSE(tags.ok()) << c.text;
    EXPECT_EQ(tags.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tags.status().message(), HasSubstr(c.fragment)) << c.text;
  }
  std::string many;
  for (int i = 0; i < 19; ++i) many += "k" + std::to_string(i) + "=v,";
  EXPECT_FALSE(ParseTags(many).ok());
}

TEST(ParseTagsTest, AcceptsMultibyteUtf8Values) {
  EXPECT_TRUE(ParseTags("team=\xc3\xa9quipe,emoji=\xf0\x9f\x94\xa5").ok());
}

TEST(SanitizeTest, NamesAndValues) {
  EXPECT_EQ(*SanitizeLabelName("a.b.c"), "a_b_c");
  EXPECT_FALSE(SanitizeLabelName("9a").ok());
  EXPECT_FALSE(SanitizeLabelName("a b").ok());
  EXPECT_FALSE(SanitizeLabelName("caf\xc3\xa9").ok());
  EXPECT_EQ(SanitizeLabelValue("caf\xe9"), "caf\xEF\xBF\xBD");
  const std::string long_value = std::string(2047, 'v') + "\xc3\xa9";
  EXPECT_EQ(SanitizeLabelValue(long_value), std::string(2047, 'v'));
}

WindowProfile Profile(const std::string& name) {
  WindowProfile p;
  p.name = name;
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
                                    Pair("team_name", "caf\xEF\xBF\xBD")));
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

TEST(ValidateSeriesLabelsTest, ChecksCountNamesAndPresenceOfNameAndService) {
  EXPECT_FALSE(ValidateSeriesLabels({{"service_name", "x"}}).ok());
  EXPECT_FALSE(ValidateSeriesLabels({{"__name__", "x"}}).ok());
  const Labels base = {{"__name__", "x"}, {"service_name", "s"}};
  auto with = [&](Labels extra) {
    Labels l = base;
    l.insert(l.end(), extra.begin(), extra.end());
    return l;
  };
  EXPECT_TRUE(ValidateSeriesLabels(base).ok());
  EXPECT_FALSE(ValidateSeriesLabels(with({{"a", "1"}, {"a", "2"}})).ok());
  EXPECT_FALSE(ValidateSeriesLabels(with({{"a b", "1"}})).ok());
  EXPECT_FALSE(ValidateSeriesLabels(with({{"1a", "1"}})).ok());
  EXPECT_FALSE(ValidateSeriesLabels(with({{"a.b", "1"}})).ok());
  Labels many = base;
  for (int i = 0; i < 29; ++i) many.emplace_back("l" + std::to_string(i), "v");
  EXPECT_FALSE(ValidateSeriesLabels(many).ok());
  many.pop_back();
  EXPECT_TRUE(ValidateSeriesLabels(many).ok());
  EXPECT_THAT(ValidateSeriesLabels(with({{"a", ""}})).message(),
              HasSubstr("empty"));
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
