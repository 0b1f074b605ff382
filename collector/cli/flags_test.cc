#include "collector/cli/flags.h"

#include <stdlib.h>

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "collector/base/flag_environment.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

// Every flag the collector defines (here and in shipping/) has an
// environment variable: a flag added without one fails here.
TEST(FlagsTest, EveryCollectorFlagHasAVariable) {
  int checked = 0;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "collector/")) continue;
    EXPECT_NE(FlagVariableOf(name), "") << "--" << name;
    ++checked;
  }
  EXPECT_GT(checked, 40);
  EXPECT_EQ(FlagVariableOf("watermark_slack"), "RINGPROF_WATERMARK_SLACK");
  EXPECT_EQ(FlagVariableOf("server_address"), "PYROSCOPE_SERVER_ADDRESS");
  EXPECT_EQ(FlagVariableOf("otlp_endpoint"),
            "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
}

TEST(FlagsTest, EnvironmentSetsFlagsAndBadValuesNameTheVariable) {
  absl::FlagSaver saver;
  setenv("RINGPROF_WINDOW", "20s", 1);
  ASSERT_TRUE(ApplyEnvironmentToFlags().ok());
  unsetenv("RINGPROF_WINDOW");
  absl::StatusOr<CollectorOptions> options = CollectorOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->profiler.window_ns, int64_t{20} * 1000000000);

  setenv("RINGPROF_TICK", "soon", 1);
  absl::Status status = ApplyEnvironmentToFlags();
  unsetenv("RINGPROF_TICK");
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_TRUE(absl::StrContains(status.message(), "RINGPROF_TICK")) << status;
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
