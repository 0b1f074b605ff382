#include "collector/pprof/label_rules.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(ParseTagsTest, ParsesPyroscopeTagSyntaxKeepingDotsAsV2StoresThem) {
  absl::StatusOr<Labels> tags =
      ParseTags(" env=prod , region = eu.1,k8s.cluster=prod,_x=1 ");
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, ElementsAre(Pair("env", "prod"), Pair("region", "eu.1"),
                                 Pair("k8s.cluster", "prod"), Pair("_x", "1")));
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
      {"a_b=1,a.b=2", "twice"},
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
  // Sent as v2 stores it (a v1 server renames '.' to '_' itself).
  EXPECT_EQ(*SanitizeLabelName("a.b.c"), "a.b.c");
  EXPECT_TRUE(SameLabelName("a.b", "a_b"));
  EXPECT_FALSE(SameLabelName("a.b", "a_c"));
  EXPECT_FALSE(SameLabelName("ab", "a_b"));
  EXPECT_FALSE(SanitizeLabelName("9a").ok());
  EXPECT_FALSE(SanitizeLabelName("a b").ok());
  EXPECT_FALSE(SanitizeLabelName("caf\xc3\xa9").ok());
  EXPECT_EQ(SanitizeLabelValue("caf\xe9"), "caf\xEF\xBF\xBD");
  const std::string long_value = std::string(2047, 'v') + "\xc3\xa9";
  EXPECT_EQ(SanitizeLabelValue(long_value), std::string(2047, 'v'));
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
  EXPECT_TRUE(ValidateSeriesLabels(with({{"a.b", "1"}})).ok());
  // One name to a v1 server, which would refuse the series.
  EXPECT_FALSE(ValidateSeriesLabels(with({{"a.b", "1"}, {"a_b", "2"}})).ok());
  Labels many = base;
  for (int i = 0; i < 29; ++i) many.emplace_back("l" + std::to_string(i), "v");
  EXPECT_FALSE(ValidateSeriesLabels(many).ok());
  many.pop_back();
  EXPECT_TRUE(ValidateSeriesLabels(many).ok());
  EXPECT_THAT(ValidateSeriesLabels(with({{"a", ""}})).message(),
              HasSubstr("empty"));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
