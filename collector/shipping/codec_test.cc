#include "collector/shipping/codec.h"

#include <set>
#include <string>

#include "collector/shipping/http_uploader.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

TEST(CodecTest, ZstdRoundTripAndLimits) {
  const std::string data(100000, 'x');
  const std::string z = ZstdCompress(data);
  EXPECT_LT(z.size(), 1000u);
  EXPECT_EQ(*ZstdDecompress(z, data.size()), data);
  EXPECT_FALSE(ZstdDecompress(z, data.size() - 1).ok());
  EXPECT_FALSE(ZstdDecompress("garbage", 100).ok());
  EXPECT_FALSE(ZstdDecompress(z.substr(0, z.size() / 2), data.size()).ok());
}

TEST(CodecTest, UuidV4FormatAndUniqueness) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewUuidV4();
    ASSERT_EQ(id.size(), 36u);
    EXPECT_EQ(id[14], '4');
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(HttpUploaderTest, RedactsCredentialsInUrls) {
  EXPECT_EQ(RedactUrl("https://user:secret@host:4040/x"),
            "https://host:4040/x");
  EXPECT_EQ(RedactUrl("http://host/a@b"), "http://host/a@b");
  EXPECT_EQ(RedactUrl("http://host"), "http://host");
}

TEST(HttpUploaderTest, ParsesRetryAfter) {
  EXPECT_EQ(ParseRetryAfterMs("3", 0), 3000);
  EXPECT_EQ(ParseRetryAfterMs("-1", 0), -1);
  EXPECT_EQ(ParseRetryAfterMs("soon", 0), -1);
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777.
  EXPECT_EQ(ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", 784111770),
            7000);
  EXPECT_EQ(ParseRetryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", 784111790), 0);
}

TEST(HttpUploaderTest, RejectsBadConfiguration) {
  UploaderOptions o;
  o.server_url = "pyroscope:4040";
  EXPECT_EQ(HttpUploader::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.server_url = "http://pyroscope:4040/";
  o.extra_headers = {{"Bad Header", "v"}};
  EXPECT_FALSE(HttpUploader::Create(o).ok());
  o.extra_headers = {{"X-Ok", "v\r\nInjected: 1"}};
  EXPECT_FALSE(HttpUploader::Create(o).ok());
  o.extra_headers = {};
  o.ca_file = "/nonexistent/ca.pem";
  EXPECT_FALSE(HttpUploader::Create(o).ok());
}

TEST(HttpUploaderTest, LegacyUrlCarriesNameTagsAndSeconds) {
  UploaderOptions o;
  o.server_url = "http://pyroscope:4040/";
  o.legacy_ingest = true;
  auto uploader = HttpUploader::Create(o);
  ASSERT_TRUE(uploader.ok());
  SpoolRecord r;
  for (auto [k, v] :
       {std::pair<const char*, const char*>{"__name__", "process_cpu"},
        {"env", "prod"},
        {"service_name", "app"}}) {
    auto* l = r.add_labels();
    l->set_name(k);
    l->set_value(v);
  }
  r.set_from_unix_ns(1700000000123456789);
  r.set_until_unix_ns(1700000010123456789);
  EXPECT_EQ((*uploader)->BuildUrl(r),
            "http://pyroscope:4040/ingest?name=app%7Benv%3Dprod%7D"
            "&from=1700000000&until=1700000010&format=pprof&spyName=ringprof");
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
