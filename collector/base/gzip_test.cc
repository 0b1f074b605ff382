#include "collector/base/gzip.h"

#include <string>
#include <thread>

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

// Each thread reuses its compression state: a stream after others (a
// longer one, another level) is byte for byte what a fresh state makes.
TEST(GzipTest, AReusedStateGivesAFreshStatesBytes) {
  std::string big, small;
  for (int i = 0; i < 200000; ++i) big += std::to_string(i * 7919 % 1000);
  for (int i = 0; i < 3000; ++i) small += std::to_string(i % 13);
  std::string fresh_small, fresh_small_9;
  std::thread([&] { fresh_small = GzipCompress(small, 1); }).join();
  std::thread([&] { fresh_small_9 = GzipCompress(small, 9); }).join();

  const std::string big_gz = GzipCompress(big, 1);
  EXPECT_EQ(GzipCompress(small, 9), fresh_small_9);
  EXPECT_EQ(GzipCompress(small, 1), fresh_small);
  EXPECT_EQ(GzipCompress(small, 1), fresh_small);
  absl::StatusOr<std::string> back = GzipDecompress(big_gz, big.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, big);
  // Out-of-range levels are clamped, not undefined.
  EXPECT_EQ(GzipCompress(small, 0), fresh_small);
  EXPECT_EQ(GzipCompress(small, 42), fresh_small_9);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
