#include "collector/shipping/pyroscope_flags.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class PyroscopeFlagsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* env :
         {"PYROSCOPE_SERVER_ADDRESS", "PYROSCOPE_APPLICATION_NAME",
          "PYROSCOPE_TAGS", "PYROSCOPE_BASIC_AUTH_USER",
          "PYROSCOPE_BASIC_AUTH_PASSWORD", "PYROSCOPE_BASIC_AUTH_PASSWORD_FILE",
          "PYROSCOPE_AUTH_TOKEN", "PYROSCOPE_TENANT_ID",
          "PYROSCOPE_HTTP_HEADERS", "RINGPROF_SPOOL_MAX_BYTES",
          "RINGPROF_LEGACY_INGEST", "RINGPROF_UPLOAD_TIMEOUT"}) {
      unsetenv(env);
    }
    absl::SetFlag(&FLAGS_server_address, "");
    absl::SetFlag(&FLAGS_tags, "");
    absl::SetFlag(&FLAGS_application_name, "");
    absl::SetFlag(&FLAGS_basic_auth_password_file, "");
    absl::SetFlag(&FLAGS_http_headers, "");
    absl::SetFlag(&FLAGS_spool_max_bytes, "256M");
  }

  std::string WriteFile(const std::string& content) {
    const std::string path = std::string(getenv("TEST_TMPDIR")) + "/secret";
    std::ofstream(path) << content;
    return path;
  }
};

TEST_F(PyroscopeFlagsTest, NoServerMeansNoSink) {
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->has_value());
  auto sink = MakePyroscopeSinkFromFlags();
  ASSERT_TRUE(sink.ok());
  EXPECT_EQ(*sink, nullptr);
}

TEST_F(PyroscopeFlagsTest, EnvironmentFollowsSdkConventions) {
  setenv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040", 1);
  setenv("PYROSCOPE_APPLICATION_NAME", "checkout", 1);
  setenv("PYROSCOPE_TAGS", "env=prod,region=eu", 1);
  setenv("PYROSCOPE_BASIC_AUTH_USER", "123", 1);
  setenv("PYROSCOPE_BASIC_AUTH_PASSWORD", "pw", 1);
  setenv("PYROSCOPE_TENANT_ID", "team-a", 1);
  setenv("PYROSCOPE_HTTP_HEADERS", "X-A=1, X-B=two", 1);
  setenv("RINGPROF_SPOOL_MAX_BYTES", "64M", 1);
  setenv("RINGPROF_LEGACY_INGEST", "true", 1);
  setenv("RINGPROF_UPLOAD_TIMEOUT", "2s", 1);
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_TRUE(options->has_value());
  const PyroscopeSinkOptions& o = **options;
  EXPECT_EQ(o.upload.server_url, "http://pyroscope:4040");
  EXPECT_EQ(o.labels.application_name, "checkout");
  EXPECT_THAT(o.labels.tags,
              UnorderedElementsAre(Pair("env", "prod"), Pair("region", "eu")));
  EXPECT_EQ(o.upload.basic_auth_user, "123");
  EXPECT_EQ(o.upload.basic_auth_password, "pw");
  EXPECT_EQ(o.upload.tenant_id, "team-a");
  EXPECT_THAT(o.upload.extra_headers,
              UnorderedElementsAre(Pair("X-A", "1"), Pair("X-B", "two")));
  EXPECT_EQ(o.spool_max_bytes, 64u << 20);
  EXPECT_TRUE(o.upload.legacy_ingest);
  EXPECT_EQ(o.upload.timeout_ms, 2000);

  // The command line wins over the environment.
  absl::SetFlag(&FLAGS_server_address, "https://other:443");
  absl::SetFlag(&FLAGS_tags, "env=staging");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)->upload.server_url, "https://other:443");
  EXPECT_THAT((*options)->labels.tags,
              UnorderedElementsAre(Pair("env", "staging")));
}

TEST_F(PyroscopeFlagsTest, InvalidTagsAreAStartupError) {
  setenv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040", 1);
  setenv("PYROSCOPE_TAGS", "my-env=prod", 1);
  auto sink = MakePyroscopeSinkFromFlags();
  ASSERT_FALSE(sink.ok());
  EXPECT_EQ(sink.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sink.status().message(), HasSubstr("PYROSCOPE_TAGS"));
  EXPECT_THAT(sink.status().message(), HasSubstr("my-env"));
}

TEST_F(PyroscopeFlagsTest, SecretsComeFromFilesAndNeverAppearInErrors) {
  setenv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040", 1);
  absl::SetFlag(&FLAGS_basic_auth_password_file, WriteFile("from-file\n"));
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)->upload.basic_auth_password, "from-file");

  absl::SetFlag(&FLAGS_basic_auth_password_file, "/nonexistent/pw");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("/nonexistent/pw"));

  absl::SetFlag(&FLAGS_basic_auth_password_file, "");
  absl::SetFlag(&FLAGS_http_headers, "X-Api-Key:topsecretvalue");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), Not(HasSubstr("topsecretvalue")));

  absl::SetFlag(&FLAGS_http_headers, "");
  absl::SetFlag(&FLAGS_server_address, "ftp://user:hunter2@host");
  auto sink = MakePyroscopeSinkFromFlags();
  ASSERT_FALSE(sink.ok());
  EXPECT_THAT(sink.status().message(), Not(HasSubstr("hunter2")));
}

TEST_F(PyroscopeFlagsTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseByteSize("512K"), 512u << 10);
  EXPECT_EQ(*ParseByteSize("1g"), 1u << 30);
  EXPECT_FALSE(ParseByteSize("0").ok());
  EXPECT_FALSE(ParseByteSize("lots").ok());
  EXPECT_FALSE(ParseByteSize("-5M").ok());
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
