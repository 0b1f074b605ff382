#include "collector/shipping/metrics_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "collector/base/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using ::testing::HasSubstr;

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

long Fetch(int port, const std::string& path, std::string* body,
           std::string* content_type = nullptr) {
  CURL* curl = curl_easy_init();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    char* ct = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct);
    if (content_type && ct) *content_type = ct;
  }
  curl_easy_cleanup(curl);
  return status;
}

TEST(MetricsServerTest, ServesPrometheusText) {
  Metrics::Get()
      .GetCounter("ringprof_test_served_total", "A test counter.")
      .Add(7);
  auto server = MetricsServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  std::string body, type;
  EXPECT_EQ(Fetch((*server)->port(), "/metrics", &body, &type), 200);
  EXPECT_THAT(body, HasSubstr("# TYPE ringprof_test_served_total counter\n"
                              "ringprof_test_served_total 7\n"));
  EXPECT_THAT(type, HasSubstr("text/plain; version=0.0.4"));
  body.clear();
  EXPECT_EQ(Fetch((*server)->port(), "/", &body), 404);
}

TEST(MetricsServerTest, SilentClientDoesNotBlockTheEndpointForever) {
  auto server = MetricsServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  std::string body;
  // Served after the silent client's 2 s allowance (curl waits up to 10 s).
  EXPECT_EQ(Fetch((*server)->port(), "/metrics", &body), 200);
  close(silent);
}

TEST(MetricsServerTest, RejectsBadAddresses) {
  EXPECT_EQ(MetricsServer::Start("not-an-ip", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(MetricsServer::Start("127.0.0.1", 70000).ok());
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
