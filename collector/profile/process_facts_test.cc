#include "collector/profile/process_facts.h"

#include <string>

#include "collector/base/metrics.h"
#include "collector/profile/environment_facts.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

ringfile::FileInfo Info(const std::string& service,
                        const std::string& executable) {
  ringfile::FileInfo info;
  info.pid = 321;
  info.process_start_ticks = 99;
  info.created_realtime_ns = 1'700'000'000'000'000'000;
  info.service_name = service;
  info.executable = executable;
  return info;
}

TEST(ProcessFactsTest, ServiceIsTheEmittersElseTheExecutablesName) {
  EXPECT_EQ(ProcessFacts(Info("checkout", "/usr/bin/server")).service_name(),
            "checkout");
  EXPECT_EQ(ProcessFacts(Info("", "/usr/bin/server")).service_name(), "server");
  EXPECT_EQ(ProcessFacts(Info("", "")).service_name(), "unknown_service");
}

TEST(ProcessFactsTest, SessionIdIsStableHexPerProcess) {
  const ProcessFacts a(Info("s", "")), again(Info("s", ""));
  ringfile::FileInfo other_info = Info("s", "");
  other_info.pid = 322;
  const ProcessFacts other(other_info);
  EXPECT_EQ(a.session_id().size(), 16u);
  EXPECT_EQ(a.session_id().find_first_not_of("0123456789abcdef"),
            std::string::npos);
  EXPECT_EQ(a.session_id(), again.session_id());
  EXPECT_NE(a.session_id(), other.session_id());
}

TEST(ProcessFactsTest, LabelsKeepTheLatestValueOfABoundedSetOfKeys) {
  ProcessFacts facts(Info("s", ""));
  facts.OnLabel("env", "staging");
  facts.OnLabel("env", "prod");
  for (size_t i = 0; i < 2 * ProcessFacts::kMaxLabels; ++i) {
    facts.OnLabel("k" + std::to_string(i), "v");
  }
  ASSERT_EQ(facts.workload_labels().size(), ProcessFacts::kMaxLabels);
  EXPECT_EQ(facts.workload_labels()[0],
            (std::pair<std::string, std::string>("env", "prod")));
  ProcessFacts restored(Info("s", ""));
  restored.RestoreLabels(facts.workload_labels());
  EXPECT_EQ(restored.workload_labels(), facts.workload_labels());
}

TEST(ProcessFactsTest, EachFactIsReportedOnceAndTheEndIsKept) {
  ProcessFacts facts(Info("facts-test-service", ""));
  EXPECT_FALSE(facts.ended());
  EXPECT_EQ(facts.exit_status(), -1);
  Counter& libc = Metrics::Get().GetCounter(
      "ringprof_environment_facts_total{fact=\"libc\"}", "");
  const uint64_t before = libc.value();
  facts.OnEnvironmentFact(/*kLibc=*/1, "musl-for-facts-test");
  facts.OnEnvironmentFact(1, "musl-for-facts-test");
  EXPECT_EQ(libc.value() - before, 1u);  // this process, once
  int lines = 0;
  for (const std::string& line : EnvironmentFactLines()) {
    lines += line.find("musl-for-facts-test") != std::string::npos;
  }
  EXPECT_EQ(lines, 1);
  facts.OnEnd(3);
  EXPECT_TRUE(facts.ended());
  EXPECT_EQ(facts.exit_status(), 3);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
