// Bounded random-mutation fuzzing in the normal test suite: valid ring files
// with random bytes overwritten (biased toward the header, counters and slot
// headers) or truncated must give a Status error or a bounded, clean read,
// never a crash, hang or out-of-bounds access (run it under --config=asan).
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "ringfile/format.h"
#include "ringfile/reader_exercise.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace ringfile {
namespace {

using ::ringprof::ringfile::testing::ExerciseResult;
using ::ringprof::ringfile::testing::ExerciseRingFile;
using ::ringprof::ringfile::testing::TemplateRingFile;
using ::ringprof::ringfile::testing::TempRingPath;
using ::ringprof::ringfile::testing::WriteWholeFile;

constexpr int kIterations = 3000;

bool IsExpectedError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition ||
         status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kDataLoss;
}

// Where to mutate: mostly the structures the reader must distrust.
uint64_t PickOffset(std::mt19937_64& rng, uint64_t size) {
  const uint64_t slots = SlotsOffsetFor(2);
  switch (rng() % 6) {
    case 0:
      return rng() % 64;  // header sizes and offsets
    case 1:
      return offsetof(FileHeader, ready) + rng() % 4;
    case 2:
      return kHeaderSize + rng() % (2 * kControlBlockSize);  // counters
    case 3:  // a slot header: sequence, type, payload_size
      return slots + (rng() % 8) * 256 + rng() % 16;
    case 4:  // inside a payload's fixed part
      return slots + (rng() % 8) * 256 + 16 + rng() % 80;
    default:
      return rng() % size;
  }
}

uint8_t PickValue(std::mt19937_64& rng, uint8_t old) {
  switch (rng() % 4) {
    case 0:
      return 0;
    case 1:
      return 0xff;
    case 2:
      return old ^ static_cast<uint8_t>(1u << (rng() % 8));
    default:
      return static_cast<uint8_t>(rng());
  }
}

TEST(ReaderMutationTest, MutatedFilesAreRejectedOrReadCleanly) {
  const std::string& original = TemplateRingFile();
  // The unmutated template reads completely.
  const std::string path = TempRingPath("mutation");
  WriteWholeFile(path, absl::MakeConstSpan(
                           reinterpret_cast<const uint8_t*>(original.data()),
                           original.size()));
  ExerciseResult clean = ExerciseRingFile(path);
  ASSERT_TRUE(clean.open_status.ok()) << clean.open_status;
  ASSERT_TRUE(clean.poll_status.ok()) << clean.poll_status;
  // 15 records: ring 0 laps by two (6 in 4 slots), ring 1 by five (9).
  ASSERT_EQ(clean.decoded, 8u);
  ASSERT_EQ(clean.lost, 7u);

  std::mt19937_64 rng(20261129);
  int open_errors = 0, poll_errors = 0, read_ok = 0, decode_errors = 0;
  uint64_t delivered = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::string bytes = original;
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations; ++m) {
      const uint64_t offset = PickOffset(rng, bytes.size());
      bytes[offset] = static_cast<char>(
          PickValue(rng, static_cast<uint8_t>(bytes[offset])));
    }
    if (rng() % 10 == 0) bytes.resize(rng() % bytes.size());
    WriteWholeFile(path, absl::MakeConstSpan(
                             reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size()));
    ExerciseResult result = ExerciseRingFile(path);
    if (!result.open_status.ok()) {
      ASSERT_TRUE(IsExpectedError(result.open_status))
          << "iteration " << i << ": " << result.open_status;
      ASSERT_FALSE(result.open_status.message().empty());
      ++open_errors;
      continue;
    }
    if (!result.poll_status.ok()) {
      ASSERT_TRUE(IsExpectedError(result.poll_status))
          << "iteration " << i << ": " << result.poll_status;
      ++poll_errors;
    } else {
      ++read_ok;
    }
    // Eight slots hold at most eight records, whatever the counters say.
    ASSERT_LE(result.delivered, 8u);
    ASSERT_LE(result.polls, 64u);
    delivered += result.delivered;
    decode_errors += static_cast<int>(result.decode_errors);
  }
  printf(
      "iterations=%d open_errors=%d poll_errors=%d read_ok=%d delivered=%lu "
      "decode_errors=%d\n",
      kIterations, open_errors, poll_errors, read_ok, delivered, decode_errors);
  // The mutations reach every layer: rejected headers, rejected slots, and
  // files that still read (with some payloads the decoders reject).
  EXPECT_GT(open_errors, kIterations / 10);
  EXPECT_GT(poll_errors, 0);
  EXPECT_GT(read_ok, kIterations / 10);
  EXPECT_GT(decode_errors, 0);
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
