#include <string>
#include <vector>

#include "examples/pipeline/log_generator.h"
#include "examples/pipeline/lz_codec.h"
#include "examples/pipeline/tokenizer.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace examples {
namespace {

TEST(LzCodecTest, RoundTripsEdgeCases) {
  for (const std::string& input :
       {std::string(), std::string("a"), std::string("abc"),
        std::string(10000, 'x'), std::string("abcdabcdabcdabcdabcd"),
        std::string("\0\1\2\3\0\1\2\3\0\1\2\3", 12)}) {
    const std::vector<uint8_t> compressed = CompressBlock(input);
    std::string output;
    ASSERT_TRUE(DecompressBlock(compressed, &output)) << input.size();
    EXPECT_EQ(output, input);
  }
}

TEST(LzCodecTest, CompressesLogText) {
  LogGenerator generator(1);
  const std::string block = generator.GenerateLogBlock(64 * 1024);
  const std::vector<uint8_t> compressed = CompressBlock(block);
  std::string output;
  ASSERT_TRUE(DecompressBlock(compressed, &output));
  EXPECT_EQ(output, block);
  EXPECT_LT(compressed.size() * 2, block.size()) << "expected ratio > 2";
}

TEST(LzCodecTest, RejectsCorruptInputWithoutCrashing) {
  LogGenerator generator(2);
  const std::vector<uint8_t> good =
      CompressBlock(generator.GenerateLogBlock(4096));
  int rejected = 0;
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    std::vector<uint8_t> truncated(good.begin(), good.begin() + cut);
    std::string output;
    if (!DecompressBlock(truncated, &output)) ++rejected;
  }
  EXPECT_EQ(rejected, static_cast<int>((good.size() + 6) / 7));
  std::vector<uint8_t> bad_offset = {10, 0, 4, 99};  // match before any output
  std::string output;
  EXPECT_FALSE(DecompressBlock(bad_offset, &output));
}

TEST(TokenizerTest, CountsNormalizedTokens) {
  const TokenStats stats =
      TokenizeBlock("GET /a/17 HTTP/1.1 get /A/2024 200 [x]\n");
  EXPECT_EQ(stats.tokens, 7u);
  EXPECT_EQ(stats.counts.at("get"), 2u);
  EXPECT_EQ(stats.counts.at("/a/#"), 2u);
  EXPECT_EQ(stats.counts.at("http/#.#"), 1u);
  EXPECT_EQ(stats.counts.at("#"), 1u);
  EXPECT_EQ(stats.counts.at("x"), 1u);
  TokenStats total;
  MergeTokenStats(stats, &total);
  MergeTokenStats(stats, &total);
  EXPECT_EQ(total.tokens, 14u);
  EXPECT_EQ(total.counts.at("get"), 4u);
}

TEST(LogGeneratorTest, DeterministicWholeLines) {
  LogGenerator a(7), b(7);
  const std::string block = a.GenerateLogBlock(10000);
  EXPECT_EQ(block, b.GenerateLogBlock(10000));
  EXPECT_GE(block.size(), 10000u);
  EXPECT_EQ(block.back(), '\n');
}

}  // namespace
}  // namespace examples
}  // namespace ringprof
