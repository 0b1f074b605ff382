#include "collector/shipping/pyroscope_flags.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "collector/base/flag_environment.h"
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
  absl::FlagSaver saver_;  // every flag back to its default after a test
  void TearDown() override {
    for (const char* env :
         {"PYROSCOPE_SERVER_ADDRESS", "PYROSCOPE_APPLICATION_NAME",
          "PYROSCOPE_TAGS", "PYROSCOPE_BASIC_AUTH_USER",
          "PYROSCOPE_BASIC_AUTH_PASSWORD", "PYROSCOPE_BASIC_AUTH_PASSWORD_FILE",
          "PYROSCOPE_AUTH_TOKEN", "PYROSCOPE_TENANT_ID",
          "PYROSCOPE_HTTP_HEADERS", "RINGPROF_SPOOL_MAX_BYTES",
          "RINGPROF_LEGACY_INGEST", "RINGPROF_UPLOAD_TIMEOUT",
          "RINGPROF_PID_LABEL", "RINGPROF_MAX_REQUEST_BYTES",
          "RINGPROF_UPLOAD_RATE", "PYROSCOPE_SERVICE_GIT_REF",
          "RINGPROF_METRICS_PORT"}) {
      unsetenv(env);
    }
    absl::SetFlag(&FLAGS_server_address, "");
    absl::SetFlag(&FLAGS_tags, "");
    absl::SetFlag(&FLAGS_application_name, "");
    absl::SetFlag(&FLAGS_basic_auth_password_file, "");
    absl::SetFlag(&FLAGS_http_headers, "");
    absl::SetFlag(&FLAGS_spool_max_bytes, "256M");
    absl::SetFlag(&FLAGS_auth_token_file, "");
    absl::SetFlag(&FLAGS_legacy_ingest, false);
    absl::SetFlag(&FLAGS_max_request_bytes, "2M");
    absl::SetFlag(&FLAGS_upload_attempts, 5);
  }

  // As ringprof's main does it: the environment is applied first, so flags
  // the test sets afterwards stand for the command line, which wins.
  void SetEnv(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    ASSERT_TRUE(ApplyEnvironmentToFlags().ok());
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
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  SetEnv("PYROSCOPE_APPLICATION_NAME", "checkout");
  SetEnv("PYROSCOPE_TAGS", "env=prod,region=eu");
  SetEnv("PYROSCOPE_BASIC_AUTH_USER", "123");
  SetEnv("PYROSCOPE_BASIC_AUTH_PASSWORD", "pw");
  SetEnv("PYROSCOPE_TENANT_ID", "team-a");
  SetEnv("PYROSCOPE_HTTP_HEADERS", "X-A=1, X-B=two");
  SetEnv("RINGPROF_SPOOL_MAX_BYTES", "64M");
  SetEnv("RINGPROF_LEGACY_INGEST", "true");
  SetEnv("RINGPROF_UPLOAD_TIMEOUT", "2s");
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
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  SetEnv("PYROSCOPE_TAGS", "my-env=prod");
  auto sink = MakePyroscopeSinkFromFlags();
  ASSERT_FALSE(sink.ok());
  EXPECT_EQ(sink.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sink.status().message(), HasSubstr("PYROSCOPE_TAGS"));
  EXPECT_THAT(sink.status().message(), HasSubstr("my-env"));
}

TEST_F(PyroscopeFlagsTest, SecretsComeFromFilesAndNeverAppearInErrors) {
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
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

TEST_F(PyroscopeFlagsTest, BadUrlsAndPortsAreStartupErrors) {
  for (const char* url :
       {"http://host:99999", "http://host:0",
        "http://host:", "http://host:4o40", "http://", "http://:4040",
        "http://ho st:4040", "http://host:4040?x=1", "http://[::1",
        "pyroscope:4040", "http://host:4040\n"}) {
    absl::SetFlag(&FLAGS_server_address, url);
    auto sink = MakePyroscopeSinkFromFlags();
    ASSERT_FALSE(sink.ok()) << url;
    EXPECT_EQ(sink.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(sink.status().message(), HasSubstr("server address")) << url;
  }
  for (const char* url : {"http://host:4040", "https://u:p@h.example/prefix",
                          "http://[::1]:4040/", "http://10.0.0.1"}) {
    EXPECT_TRUE(ValidateServerUrl(url).ok()) << url;
  }
  absl::SetFlag(&FLAGS_server_address, "");
  SetEnv("RINGPROF_METRICS_PORT", "70000");
  EXPECT_FALSE(StartMetricsServerFromFlags().ok());
}

TEST_F(PyroscopeFlagsTest, SecretFilesMustBeSmallRegularFiles) {
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  absl::SetFlag(&FLAGS_basic_auth_password_file, "/dev/zero");
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("not a regular file"));

  // A FIFO without a writer: a clear error, not a hang.
  const std::string fifo = std::string(getenv("TEST_TMPDIR")) + "/fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::SetFlag(&FLAGS_basic_auth_password_file, fifo);
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("not a regular file"));

  absl::SetFlag(&FLAGS_basic_auth_password_file,
                WriteFile(std::string(70000, 'p')));
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("larger than"));
  EXPECT_THAT(options.status().message(), Not(HasSubstr("ppppp")));

  absl::SetFlag(&FLAGS_basic_auth_password_file, WriteFile("a\nb\n"));
  EXPECT_FALSE(PyroscopeSinkOptionsFromFlags().ok());

  // Empty: an error with a user, no basic auth without one.
  absl::SetFlag(&FLAGS_basic_auth_password_file, WriteFile(""));
  absl::SetFlag(&FLAGS_basic_auth_user, "123456");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("is empty"));
  absl::SetFlag(&FLAGS_basic_auth_user, "");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)->upload.basic_auth_password, "");

  // Read once, then gone from the environment a child would inherit.
  absl::SetFlag(&FLAGS_basic_auth_password_file, "");
  SetEnv("PYROSCOPE_BASIC_AUTH_PASSWORD", "pw");
  options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)->upload.basic_auth_password, "pw");
  EXPECT_EQ(getenv("PYROSCOPE_BASIC_AUTH_PASSWORD"), nullptr);
}

TEST_F(PyroscopeFlagsTest, LabelOptions) {
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  SetEnv("PYROSCOPE_TAGS", "k8s.cluster=prod");
  SetEnv("PYROSCOPE_SERVICE_GIT_REF", "v1.2.3");
  SetEnv("RINGPROF_PID_LABEL", "true");
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT((*options)->labels.tags,
              UnorderedElementsAre(Pair("k8s.cluster", "prod")));
  EXPECT_THAT((*options)->labels.source_labels,
              UnorderedElementsAre(Pair("service_git_ref", "v1.2.3")));
  EXPECT_TRUE((*options)->labels.pid_label);
  EXPECT_EQ((*options)->max_request_bytes, 2u << 20);

  SetEnv("PYROSCOPE_TAGS", "service_git_ref=x");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("given both"));
  SetEnv("PYROSCOPE_TAGS", "__session_id__=1");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("reserved"));
  SetEnv("PYROSCOPE_TAGS", "1st=x");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("must not start with a digit"));
  absl::SetFlag(&FLAGS_tags, "");
  absl::SetFlag(&FLAGS_max_request_bytes, "3K");
  EXPECT_FALSE(PyroscopeSinkOptionsFromFlags().ok());
}

TEST_F(PyroscopeFlagsTest, LegacyIngestRefusesNamesItsParserCannotCarry) {
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  absl::SetFlag(&FLAGS_legacy_ingest, true);
  SetEnv("PYROSCOPE_APPLICATION_NAME", "my app");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("application name"));
  SetEnv("PYROSCOPE_APPLICATION_NAME", "team/my-app.v2");
  SetEnv("PYROSCOPE_TAGS", "route=a}b");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("route"));
  SetEnv("PYROSCOPE_TAGS", "route=a_b");
  EXPECT_TRUE(PyroscopeSinkOptionsFromFlags().ok());
}

TEST_F(PyroscopeFlagsTest, UploadRate) {
  SetEnv("PYROSCOPE_SERVER_ADDRESS", "http://pyroscope:4040");
  auto options = PyroscopeSinkOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)->upload_bytes_per_second, 4u << 20);  // the server's
  SetEnv("RINGPROF_UPLOAD_RATE", "512K");
  EXPECT_EQ((*PyroscopeSinkOptionsFromFlags())->upload_bytes_per_second,
            512u << 10);
  SetEnv("RINGPROF_UPLOAD_RATE", "0");
  EXPECT_EQ((*PyroscopeSinkOptionsFromFlags())->upload_bytes_per_second, 0u);
  SetEnv("RINGPROF_UPLOAD_RATE", "fast");
  EXPECT_THAT(PyroscopeSinkOptionsFromFlags().status().message(),
              HasSubstr("--upload-rate"));
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
