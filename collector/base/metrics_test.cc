#include "collector/base/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, SameNameReturnsSameObject) {
  Counter& a = Metrics::Get().GetCounter("test_same_total", "help");
  Counter& b = Metrics::Get().GetCounter("test_same_total", "other help");
  EXPECT_EQ(&a, &b);
  Gauge& g1 = Metrics::Get().GetGauge("test_same_gauge", "help");
  Gauge& g2 = Metrics::Get().GetGauge("test_same_gauge", "help");
  EXPECT_EQ(&g1, &g2);
}

TEST(MetricsTest, RendersCountersAndGaugesInTextFormat) {
  Metrics::Get().GetCounter("test_render_total", "Things rendered.").Add(41);
  Metrics::Get().GetCounter("test_render_total", "").Add(1);
  Metrics::Get().GetGauge("test_render_bytes", "Line\\one\ntwo").Set(2.5);
  const std::string text = Metrics::Get().RenderText();
  EXPECT_THAT(text, HasSubstr("# HELP test_render_total Things rendered.\n"
                              "# TYPE test_render_total counter\n"
                              "test_render_total 42\n"));
  EXPECT_THAT(text, HasSubstr("# HELP test_render_bytes Line\\\\one\\ntwo\n"
                              "# TYPE test_render_bytes gauge\n"
                              "test_render_bytes 2.5\n"));
}

TEST(MetricsTest, LabelledSeriesShareOneFamilyHeader) {
  Metrics::Get()
      .GetCounter("test_family_total{type=\"cpu\"}", "Per type.")
      .Add(3);
  Metrics::Get()
      .GetCounter("test_family_total{type=\"memory\"}", "Per type.")
      .Add(4);
  const std::string text = Metrics::Get().RenderText();
  EXPECT_THAT(text, HasSubstr("# TYPE test_family_total counter\n"
                              "test_family_total{type=\"cpu\"} 3\n"
                              "test_family_total{type=\"memory\"} 4\n"));
  EXPECT_THAT(text, Not(HasSubstr("# TYPE test_family_total{")));
}

TEST(MetricsTest, HistogramComponentsRenderAsOneHistogram) {
  Metrics& m = Metrics::Get();
  m.GetCounter("test_latency_seconds_bucket{le=\"0.1\"}", "Latency.").Add(1);
  m.GetCounter("test_latency_seconds_bucket{le=\"+Inf\"}", "Latency.").Add(2);
  m.GetGauge("test_latency_seconds_sum", "Latency.").Set(0.75);
  m.GetCounter("test_latency_seconds_count", "Latency.").Add(2);
  const std::string text = m.RenderText();
  EXPECT_THAT(text, HasSubstr("# HELP test_latency_seconds Latency.\n"
                              "# TYPE test_latency_seconds histogram\n"
                              "test_latency_seconds_bucket{le=\"0.1\"} 1\n"
                              "test_latency_seconds_bucket{le=\"+Inf\"} 2\n"
                              "test_latency_seconds_sum 0.75\n"
                              "test_latency_seconds_count 2\n"));
  // A plain *_count without buckets stays its own counter family.
  m.GetCounter("test_plain_count", "Not a histogram.").Add(1);
  EXPECT_THAT(m.RenderText(), HasSubstr("# TYPE test_plain_count counter\n"));
}

TEST(MetricsTest, ConcurrentRegistrationAndUpdatesAreConsistent) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kAdds; ++i) {
        Metrics::Get().GetCounter("test_concurrent_total", "c").Add(1);
        if (i % 1000 == 0) Metrics::Get().RenderText();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(Metrics::Get().GetCounter("test_concurrent_total", "c").value(),
            uint64_t{kThreads} * kAdds);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
