#include "collector/symbolize/minidebuginfo.h"

#include <fcntl.h>
#include <lzma.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::HasSubstr;

std::string Xz(const std::string& data, uint32_t preset = 0) {
  std::string out(lzma_stream_buffer_bound(data.size()), '\0');
  size_t written = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(
                preset, LZMA_CHECK_CRC64, nullptr,
                reinterpret_cast<const uint8_t*>(data.data()), data.size(),
                reinterpret_cast<uint8_t*>(out.data()), &written, out.size()),
            LZMA_OK);
  out.resize(written);
  return out;
}

std::string DataPath(const std::string& name) {
  return std::string(getenv("TEST_SRCDIR")) +
         "/ringprof/collector/symbolize/testdata/symbolizer/" + name;
}

std::unique_ptr<ElfFile> OpenElf(const std::string& path) {
  absl::StatusOr<UniqueFd> fd = OpenRegularFile(path);
  EXPECT_TRUE(fd.ok()) << fd.status();
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::Open(std::move(*fd), uint64_t{1} << 30);
  EXPECT_TRUE(file.ok()) << file.status();
  return std::move(*file);
}

TEST(XzDecompressTest, RoundTripsConcatenatedStreams) {
  const std::string a(100000, 'a');
  const std::string b = "and then some";
  std::string out;
  ASSERT_TRUE(XzDecompress(Xz(a) + Xz(b), {}, &out).ok());
  EXPECT_EQ(out, a + b);
}

TEST(XzDecompressTest, StopsAtTheDecompressedLimit) {
  // 64 MiB of zeros in a few KiB; the limit is 1 MiB.
  MiniDebugInfoLimits limits;
  limits.max_decompressed_bytes = 1 << 20;
  std::string out = "untouched";
  absl::Status status =
      XzDecompress(Xz(std::string(64 << 20, '\0')), limits, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(status.message(), HasSubstr("more than 1048576 bytes"));
  EXPECT_TRUE(out.empty());
  // Exactly at the limit is fine.
  ASSERT_TRUE(XzDecompress(Xz(std::string(1 << 20, 'x')), limits, &out).ok());
  EXPECT_EQ(out.size(), size_t{1} << 20);
}

TEST(XzDecompressTest, RefusesADecoderThatNeedsTooMuchMemory) {
  // Preset 9 declares a 64 MiB dictionary; the limit is 8 MiB.
  MiniDebugInfoLimits limits;
  limits.max_decoder_bytes = 8 << 20;
  std::string out;
  absl::Status status = XzDecompress(Xz("small", 9), limits, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(status.message(), HasSubstr("xz decoder needs more than"));
  EXPECT_TRUE(XzDecompress(Xz("small", 9), {}, &out).ok());
}

TEST(XzDecompressTest, RefusesWhatIsNotWholeXz) {
  const std::string good = Xz(std::string(5000, 'q'));
  std::string out;
  for (const std::string& bad :
       {std::string(), std::string("not xz at all"),
        good.substr(0, good.size() / 2), good.substr(0, good.size() - 1),
        good + "trailing garbage"}) {
    absl::Status status = XzDecompress(bad, {}, &out);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << bad.size() << " " << status;
  }
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x55;
  EXPECT_FALSE(XzDecompress(flipped, {}, &out).ok());
}

TEST(MiniDebugInfoTest, ReadsTheSectionOfAFedoraStrippedBinary) {
  std::unique_ptr<ElfFile> binary =
      OpenElf(DataPath("minidebuginfo/symbolizer_test_program"));
  absl::StatusOr<std::unique_ptr<ElfFile>> mini = ReadMiniDebugInfo(*binary);
  ASSERT_TRUE(mini.ok()) << mini.status();
  EXPECT_NE((*mini)->Section(".symtab"), nullptr);
  EXPECT_EQ((*mini)->fd(), -1);
  // The one whose section is refused unread: larger than the limit.
  MiniDebugInfoLimits limits;
  limits.max_compressed_bytes = 16;
  mini = ReadMiniDebugInfo(*binary, limits);
  EXPECT_EQ(mini.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(mini.status().message(), HasSubstr("exceeds the 16-byte limit"));
}

TEST(MiniDebugInfoTest, WithoutTheSectionIsNotFound) {
  std::unique_ptr<ElfFile> binary =
      OpenElf(DataPath("stripped/symbolizer_test_program"));
  EXPECT_TRUE(absl::IsNotFound(ReadMiniDebugInfo(*binary).status()));
}

TEST(MiniDebugInfoTest, HostileSectionsSayWhy) {
  struct Case {
    const char* variant;
    const char* reason;
  };
  for (const Case& c : {Case{"minidebuginfo_not_xz", "not xz data"},
                        Case{"minidebuginfo_truncated", "corrupt or truncated"},
                        Case{"minidebuginfo_not_elf", "not a sound ELF"},
                        Case{"minidebuginfo_bomb", "decompresses to more"}}) {
    std::unique_ptr<ElfFile> binary =
        OpenElf(DataPath(std::string(c.variant) + "/symbolizer_test_program"));
    absl::StatusOr<std::unique_ptr<ElfFile>> mini = ReadMiniDebugInfo(*binary);
    ASSERT_FALSE(mini.ok()) << c.variant;
    EXPECT_THAT(mini.status().message(), HasSubstr(c.reason)) << c.variant;
  }
}

TEST(MiniDebugInfoTest, ADecompressedElfWithHeadersOutsideItIsRefused) {
  // A real MiniDebugInfo ELF cut short: its section headers (at the end)
  // now lie outside the image.
  std::unique_ptr<ElfFile> binary =
      OpenElf(DataPath("minidebuginfo/symbolizer_test_program"));
  Elf_Scn* scn = binary->Section(".gnu_debugdata");
  ASSERT_NE(scn, nullptr);
  Elf_Data* data = elf_rawdata(scn, nullptr);
  ASSERT_NE(data, nullptr);
  std::string image;
  ASSERT_TRUE(
      XzDecompress(absl::string_view(static_cast<const char*>(data->d_buf),
                                     data->d_size),
                   {}, &image)
          .ok());
  image.resize(image.size() - 64);
  absl::StatusOr<std::unique_ptr<ElfFile>> mini =
      MiniDebugInfoFromSection(Xz(image));
  EXPECT_FALSE(mini.ok());
  EXPECT_THAT(mini.status().message(), HasSubstr("not a sound ELF"));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
