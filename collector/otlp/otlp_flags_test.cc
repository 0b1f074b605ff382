#include "collector/otlp/otlp_flags.h"

#include <stdlib.h>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "collector/base/flag_environment.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

TEST(ResolveEndpoint, SignalAsGivenGenericWithThePath) {
  EXPECT_EQ(ResolveEndpoint("http://c:4318/custom", "http://x:1"),
            "http://c:4318/custom");
  EXPECT_EQ(ResolveEndpoint("", "http://c:4318"),
            "http://c:4318/v1development/profiles");
  EXPECT_EQ(ResolveEndpoint("", "https://c/otlp/"),
            "https://c/otlp/v1development/profiles");
  EXPECT_EQ(ResolveEndpoint("", ""), "");
}

// The OTEL_* variables, each set for one test and removed after it.
class OtlpFlagsTest : public ::testing::Test {
 protected:
  void Set(const char* name, const char* value) {
    setenv(name, value, 1);
    set_.push_back(name);
  }
  absl::StatusOr<std::optional<OtlpSinkOptions>> Options() {
    if (absl::Status s = ApplyEnvironmentToFlags(); !s.ok()) return s;
    return OtlpSinkOptionsFromFlags();
  }
  ~OtlpFlagsTest() override {
    for (const char* name : set_) unsetenv(name);
  }
  absl::FlagSaver saver_;
  std::vector<const char*> set_;
};

TEST_F(OtlpFlagsTest, NoEndpointNoSink) {
  absl::StatusOr<std::optional<OtlpSinkOptions>> o = Options();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->has_value());
}

TEST_F(OtlpFlagsTest, GenericVariablesAsTheSdksReadThem) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  Set("OTEL_EXPORTER_OTLP_HEADERS",
      "Authorization=Bearer%20t0ken,X-Scope-OrgID=tenant-1");
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "none");
  Set("OTEL_EXPORTER_OTLP_TIMEOUT", "2500");
  Set("OTEL_RESOURCE_ATTRIBUTES", "service.version=2.0");
  absl::StatusOr<std::optional<OtlpSinkOptions>> o = Options();
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(o->has_value());
  const shipping::UploaderOptions& u = (*o)->queue.upload;
  EXPECT_EQ(u.server_url, "http://collector:4318/v1development/profiles");
  ASSERT_EQ(u.extra_headers.size(), 2u);
  EXPECT_EQ(u.extra_headers[0].second, "Bearer t0ken");
  EXPECT_EQ(u.extra_headers[1].first, "X-Scope-OrgID");
  EXPECT_FALSE(u.gzip_body);
  EXPECT_EQ(u.timeout_ms, 2500);
  ASSERT_EQ((*o)->resource_attributes.size(), 1u);
  EXPECT_EQ((*o)->resource_attributes[0].first, "service.version");
}

TEST_F(OtlpFlagsTest, SignalSpecificVariablesWin) {
  Set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318");
  Set("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://signal:4318/p");
  Set("OTEL_EXPORTER_OTLP_HEADERS", "a=1");
  Set("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "b=2");
  Set("OTEL_SERVICE_NAME", "checkout");
  absl::StatusOr<std::optional<OtlpSinkOptions>> o = Options();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)->queue.upload.server_url, "http://signal:4318/p");
  ASSERT_EQ((*o)->queue.upload.extra_headers.size(), 1u);
  EXPECT_EQ((*o)->queue.upload.extra_headers[0].first, "b");
  EXPECT_TRUE((*o)->queue.upload.gzip_body);  // ringprof's default
  EXPECT_EQ((*o)->queue.labels.application_name, "checkout");
}

TEST_F(OtlpFlagsTest, BadValuesNameTheSettingNeverAHeaderValue) {
  Set("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "collector:4318");
  absl::StatusOr<std::optional<OtlpSinkOptions>> o = Options();
  EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
  EXPECT_TRUE(absl::StrContains(o.status().message(), "--otlp-endpoint"));

  Set("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://collector:4318/p");
  Set("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%zzs3cret");
  o = Options();
  EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
  EXPECT_FALSE(absl::StrContains(o.status().message(), "s3cret"));

  Set("OTEL_EXPORTER_OTLP_HEADERS", "");
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd");
  EXPECT_TRUE(absl::IsInvalidArgument(Options().status()));
  Set("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
  Set("OTEL_EXPORTER_OTLP_TIMEOUT", "10s");
  EXPECT_TRUE(absl::IsInvalidArgument(Options().status()));
}

}  // namespace
}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
