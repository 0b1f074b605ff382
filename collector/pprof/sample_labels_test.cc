#include "collector/pprof/sample_labels.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

int64_t String(perftools::profiles::Profile* p, const std::string& s) {
  for (int i = 0; i < p->string_table_size(); ++i) {
    if (p->string_table(i) == s) return i;
  }
  p->add_string_table(s);
  return p->string_table_size() - 1;
}

// One sample per label, each `name=v`.
perftools::profiles::Profile WithSampleLabels(
    const std::vector<std::string>& names) {
  perftools::profiles::Profile p;
  p.add_string_table("");
  for (const std::string& name : names) {
    auto* sample = p.add_sample();
    sample->add_value(1);
    auto* label = sample->add_label();
    label->set_key(String(&p, name));
    label->set_str(String(&p, "v"));
  }
  return p;
}

Labels SeriesOf(int n) {
  Labels labels = {{"__name__", "process_cpu"}, {"service_name", "app"}};
  for (int i = static_cast<int>(labels.size()); i < n; ++i) {
    labels.emplace_back("series_" + std::to_string(i), "x");
  }
  return labels;
}

TEST(SampleLabelsTest, SpanTraceAndProfileIdsAndSeriesNamesAreNotPromoted) {
  auto p = WithSampleLabels({"span_id", "trace_id", "profile_id",
                             "service_name", "endpoint", "k8s.pod"});
  EXPECT_THAT(PromotedSampleLabelNames(p, SeriesOf(2)),
              ElementsAre("endpoint", "k8s.pod"));
}

TEST(SampleLabelsTest, NumericLabelsAreNotPromoted) {
  auto p = WithSampleLabels({"endpoint"});
  auto* label = p.mutable_sample(0)->add_label();
  label->set_key(String(&p, "bytes"));
  label->set_num(4096);
  EXPECT_THAT(PromotedSampleLabelNames(p, SeriesOf(2)),
              ElementsAre("endpoint"));
}

TEST(SampleLabelsTest, WithinTheBudgetNothingChanges) {
  auto p = WithSampleLabels({"a", "b", "span_id"});
  const std::string before = p.SerializeAsString();
  EXPECT_THAT(FitSampleLabels(SeriesOf(28), 30, &p), IsEmpty());
  EXPECT_EQ(p.SerializeAsString(), before);
}

TEST(SampleLabelsTest, OverTheBudgetTheLastNamesInOrderAreRemoved) {
  auto p = WithSampleLabels({"d", "span_id", "b", "a", "c"});
  EXPECT_THAT(FitSampleLabels(SeriesOf(28), 30, &p), ElementsAre("c", "d"));
  // Samples stay (values kept); span_id and the kept names stay on them.
  ASSERT_EQ(p.sample_size(), 5);
  EXPECT_THAT(PromotedSampleLabelNames(p, SeriesOf(28)), ElementsAre("a", "b"));
  int span_labels = 0;
  for (const auto& s : p.sample()) {
    EXPECT_EQ(s.value(0), 1);
    for (const auto& l : s.label())
      span_labels += p.string_table(l.key()) == "span_id";
  }
  EXPECT_EQ(span_labels, 1);
}

TEST(SampleLabelsTest, AFullSeriesKeepsNoPromotedName) {
  auto p = WithSampleLabels({"a", "span_id"});
  EXPECT_THAT(FitSampleLabels(SeriesOf(30), 30, &p), ElementsAre("a"));
  EXPECT_THAT(PromotedSampleLabelNames(p, SeriesOf(30)), IsEmpty());
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
