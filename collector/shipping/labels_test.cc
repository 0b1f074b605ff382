#include "collector/shipping/labels.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(ParseTagsTest, ParsesPyroscopeTagSyntax) {
  absl::StatusOr<Labels> tags = ParseTags(" env=prod , region = eu.1,a.b=c ");
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, ElementsAre(Pair("env", "prod"), Pair("region", "eu.1"),
                                 Pair("a.b", "c")));
  EXPECT_TRUE(ParseTags("")->empty());
}

TEST(ParseTagsTest, RejectsWhatPyroscopeWouldReject) {
  struct Case {
    std::string text, fragment;
  } cases[] = {
      {"env", "name=value"},
      {"my-env=prod", "invalid label name"},
      {"=prod", "empty label name"},
      {"env=", "empty value"},
      {"env=a,env=b", "twice"},
      {"service_name=x", "reserved"},
      {"__name__=x", "reserved"},
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
  for (int i = 0; i < 23; ++i) many += "k" + std::to_string(i) + "=v,";
  EXPECT_FALSE(ParseTags(many).ok());
}

TEST(ParseTagsTest, AcceptsMultibyteUtf8Values) {
  EXPECT_TRUE(ParseTags("team=\xc3\xa9quipe,emoji=\xf0\x9f\x94\xa5").ok());
}

TEST(BuildSeriesLabelsTest, CpuSeries) {
  SeriesLabelConfig config;
  config.tags = {{"env", "prod"}};
  config.host_labels = {{"hostname", "h1"}, {"pod", ""}};
  Labels labels = BuildSeriesLabels(config, "process_cpu", "svc",
                                    {{"pid", "42"}, {"service_name", "svc"}});
  EXPECT_THAT(labels,
              ElementsAre(Pair("__name__", "process_cpu"), Pair("env", "prod"),
                          Pair("hostname", "h1"), Pair("pid", "42"),
                          Pair("service_name", "svc")));
  EXPECT_TRUE(ValidateSeriesLabels(labels).ok());
}

TEST(BuildSeriesLabelsTest, MemorySeriesCarriesDeltaFalseAndAppNameWins) {
  SeriesLabelConfig config;
  config.application_name = "app";
  config.host_labels = {{"hostname", "h1"}};
  Labels labels = BuildSeriesLabels(config, "memory", "svc",
                                    {{"hostname", "from-collector"}});
  EXPECT_THAT(labels, ElementsAre(Pair("__delta__", "false"),
                                  Pair("__name__", "memory"),
                                  Pair("hostname", "from-collector"),
                                  Pair("service_name", "app")));
}

TEST(BuildSeriesLabelsTest, MissingServiceNameBecomesUnknownService) {
  Labels labels = BuildSeriesLabels({}, "process_cpu", "", {});
  EXPECT_THAT(labels, ElementsAre(Pair("__name__", "process_cpu"),
                                  Pair("service_name", "unknown_service")));
}

TEST(ValidateSeriesLabelsTest, ChecksCountNamesAndPresenceOfName) {
  EXPECT_FALSE(ValidateSeriesLabels({{"service_name", "x"}}).ok());
  EXPECT_FALSE(
      ValidateSeriesLabels({{"__name__", "x"}, {"a", "1"}, {"a", "2"}}).ok());
  EXPECT_FALSE(ValidateSeriesLabels({{"__name__", "x"}, {"a b", "1"}}).ok());
  Labels many = {{"__name__", "x"}};
  for (int i = 0; i < 30; ++i) many.emplace_back("l" + std::to_string(i), "v");
  EXPECT_FALSE(ValidateSeriesLabels(many).ok());
  many.pop_back();
  EXPECT_TRUE(ValidateSeriesLabels(many).ok());
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
