#include "collector/base/gzip.h"

#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(GzipTest, RoundTripAndMagic) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += std::to_string(i % 97);
  const std::string gz = GzipCompress(data);
  EXPECT_TRUE(IsGzip(gz));
  EXPECT_FALSE(IsGzip(data));
  EXPECT_LT(gz.size(), data.size() / 2);
  absl::StatusOr<std::string> back = GzipDecompress(gz, data.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST(GzipTest, RefusesCorruptTruncatedAndOversizedData) {
  EXPECT_TRUE(
      absl::IsDataLoss(GzipDecompress("\x1f\x8bnot gzip", 1 << 20).status()));
  const std::string data(100000, 'x');
  const std::string gz = GzipCompress(data);
  EXPECT_TRUE(absl::IsDataLoss(
      GzipDecompress(gz.substr(0, gz.size() / 2), 1 << 20).status()));
  // A decompression bomb is cut off at the bound.
  EXPECT_TRUE(absl::IsResourceExhausted(GzipDecompress(gz, 1000).status()));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
