// Every corruption the reader must reject: Open and Poll return a Status
// naming the problem, and the Decode* functions reject malformed payloads.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace {

using ::ringprof::ringfile::testing::AppendFixed;
using ::ringprof::ringfile::testing::PatchValue;
using ::ringprof::ringfile::testing::TempRingPath;
using ::ringprof::ringfile::testing::TestWriterOptions;
using ::testing::HasSubstr;

// TestWriterOptions: 2 rings of 64 slots of 1152 bytes.
constexpr uint64_t kSlotsOffset = SlotsOffsetFor(2);
constexpr uint64_t kRing0Control = kHeaderSize;
constexpr uint64_t kRing0Slot0 = kSlotsOffset;

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempRingPath("corrupt");
    ASSERT_EQ(writer_.Create(TestWriterOptions(path_)), 0);
    ThreadExit record = {};
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  }

  absl::Status OpenStatus() { return RingReader::Open(path_).status(); }

  // Opens (must succeed) and polls once; returns the poll's status.
  absl::Status PollStatus() {
    absl::StatusOr<std::unique_ptr<RingReader>> reader =
        RingReader::Open(path_);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return reader.status();
    reader_ = std::move(*reader);
    return PollAgain();
  }

  absl::Status PollAgain() {
    PollOptions options;
    options.writer_dead = true;
    return reader_->Poll(options, visitor_, stats_);
  }

  template <typename T>
  void PatchHeader(size_t offset, T value) {
    PatchValue(path_, offset, value);
  }

  class Visitor : public RecordVisitor {
   public:
    void OnRecord(const RecordView&) override { ++count; }
    int count = 0;
  };

  std::string path_;
  RingWriter writer_;
  std::unique_ptr<RingReader> reader_;
  Visitor visitor_;
  PollStats stats_;
};

void ExpectError(const absl::Status& status, absl::StatusCode code,
                 absl::string_view needle) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(needle)));
}

TEST_F(CorruptionTest, ValidFileOpensAndPolls) {
  EXPECT_TRUE(PollStatus().ok());
  EXPECT_EQ(visitor_.count, 2);
}

TEST_F(CorruptionTest, BadMagic) {
  PatchHeader(offsetof(FileHeader, magic), uint64_t{0x4e4f50524f464c45});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "bad magic");
}

TEST_F(CorruptionTest, BadMagicIsReportedEvenWithoutTheReadyWord) {
  PatchHeader(offsetof(FileHeader, magic), uint64_t{0x4e4f50524f464c45});
  PatchHeader(offsetof(FileHeader, ready), uint32_t{0});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "bad magic");
}

TEST_F(CorruptionTest, HeaderNotReady) {
  PatchHeader(offsetof(FileHeader, ready), uint32_t{0});
  ExpectError(OpenStatus(), absl::StatusCode::kFailedPrecondition, "not ready");
  PatchHeader(offsetof(FileHeader, ready), uint32_t{0x12345678});
  ExpectError(OpenStatus(), absl::StatusCode::kFailedPrecondition, "not ready");
}

TEST_F(CorruptionTest, UnknownVersion) {
  // Version 1 (samples without tag fields) is as unknown as a future one.
  PatchHeader(offsetof(FileHeader, version), uint32_t{1});
  ExpectError(OpenStatus(), absl::StatusCode::kInvalidArgument,
              "unsupported ring file version 1");
  PatchHeader(offsetof(FileHeader, version), uint32_t{3});
  ExpectError(OpenStatus(), absl::StatusCode::kInvalidArgument,
              "unsupported ring file version 3");
}

TEST_F(CorruptionTest, HeaderSize) {
  PatchHeader(offsetof(FileHeader, header_size), uint32_t{4095});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "header_size");
}

TEST_F(CorruptionTest, RingCount) {
  PatchHeader(offsetof(FileHeader, ring_count), uint32_t{0});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "ring_count 0");
  PatchHeader(offsetof(FileHeader, ring_count), kMaxRings + 1);
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "ring_count 65");
  // In range but inconsistent with the layout.
  PatchHeader(offsetof(FileHeader, ring_count), uint32_t{3});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "file_size");
}

TEST_F(CorruptionTest, SlotsPerRing) {
  PatchHeader(offsetof(FileHeader, slots_per_ring), uint32_t{63});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slots_per_ring 63");
  PatchHeader(offsetof(FileHeader, slots_per_ring), uint32_t{0});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slots_per_ring 0");
  PatchHeader(offsetof(FileHeader, slots_per_ring), kMaxSlotsPerRing * 2);
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slots_per_ring");
  PatchHeader(offsetof(FileHeader, slots_per_ring), uint32_t{128});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "file_size");
}

TEST_F(CorruptionTest, SlotSize) {
  PatchHeader(offsetof(FileHeader, slot_size), uint32_t{1000});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slot_size 1000");
  PatchHeader(offsetof(FileHeader, slot_size), uint32_t{64});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slot_size 64");
  PatchHeader(offsetof(FileHeader, slot_size), kMaxSlotSize + 64);
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slot_size");
}

TEST_F(CorruptionTest, Offsets) {
  PatchHeader(offsetof(FileHeader, control_offset), uint32_t{0});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "control_offset 0");
  PatchHeader(offsetof(FileHeader, control_offset), kHeaderSize);
  PatchHeader(offsetof(FileHeader, slots_offset), uint64_t{4096});
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "slots_offset 4096");
}

TEST_F(CorruptionTest, FileSizeField) {
  PatchHeader(offsetof(FileHeader, file_size), uint64_t{1} << 40);
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "file_size");
}

TEST_F(CorruptionTest, TruncatedFile) {
  ASSERT_EQ(truncate(path_.c_str(), FileSizeFor(2, 64, 1152) - 1), 0);
  ExpectError(OpenStatus(), absl::StatusCode::kDataLoss, "truncated");
}

TEST_F(CorruptionTest, FileShorterThanTheHeader) {
  ASSERT_EQ(truncate(path_.c_str(), 100), 0);
  ExpectError(OpenStatus(), absl::StatusCode::kFailedPrecondition, "not ready");
  ASSERT_EQ(truncate(path_.c_str(), 0), 0);
  ExpectError(OpenStatus(), absl::StatusCode::kFailedPrecondition, "not ready");
}

TEST_F(CorruptionTest, TruncatedAfterOpen) {
  ASSERT_TRUE(PollStatus().ok());
  ASSERT_EQ(truncate(path_.c_str(), kSlotsOffset), 0);
  ExpectError(PollAgain(), absl::StatusCode::kDataLoss, "truncated");
  // The reader stays unusable rather than touching the mapping again.
  EXPECT_EQ(PollAgain().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(OpenTest, MissingFile) {
  EXPECT_EQ(RingReader::Open(TempRingPath("missing")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(OpenTest, DirectoryIsNotARingFile) {
  const std::string dir = TempRingPath("dir");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ExpectError(RingReader::Open(dir).status(),
              absl::StatusCode::kInvalidArgument, "not a regular file");
}

TEST(OpenTest, FifoDoesNotHang) {
  const std::string fifo = TempRingPath("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectError(RingReader::Open(fifo).status(),
              absl::StatusCode::kInvalidArgument, "not a regular file");
}

TEST(OpenTest, SymlinkIsNotFollowed) {
  const std::string target = TempRingPath("target");
  RingWriter writer;
  ASSERT_EQ(writer.Create(TestWriterOptions(target)), 0);
  const std::string link = TempRingPath("link");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_TRUE(RingReader::Open(target).ok());
  ExpectError(RingReader::Open(link).status(),
              absl::StatusCode::kInvalidArgument, "symbolic link");
}

TEST_F(CorruptionTest, PayloadSizeBeyondTheSlot) {
  PatchValue(path_, kRing0Slot0 + 12, uint32_t{1152 - 16 + 1});
  ExpectError(PollStatus(), absl::StatusCode::kDataLoss, "payload_size 1137");
}

TEST_F(CorruptionTest, RecordTypeZero) {
  PatchValue(path_, kRing0Slot0 + 8, uint32_t{0});
  ExpectError(PollStatus(), absl::StatusCode::kDataLoss, "record type 0");
}

TEST_F(CorruptionTest, NextIndexGoingBackwards) {
  ASSERT_TRUE(PollStatus().ok());
  PatchValue(path_, kRing0Control + offsetof(RingControl, next_index),
             uint64_t{1});
  ExpectError(PollAgain(), absl::StatusCode::kDataLoss, "went backwards");
}

TEST_F(CorruptionTest, ImpossibleNextIndex) {
  PatchValue(path_, kRing0Control + offsetof(RingControl, next_index),
             kMaxRecordIndex + 1);
  ExpectError(PollStatus(), absl::StatusCode::kDataLoss, "impossibly large");
}

TEST_F(CorruptionTest, HugeButPossibleNextIndexIsALapNotAHang) {
  PatchValue(path_, kRing0Control + offsetof(RingControl, next_index),
             kMaxRecordIndex);
  ASSERT_TRUE(PollStatus().ok());
  // Everything but the last ring's worth is lapped; the last 64 slots hold
  // older sequences and count as lost once (the writer is dead).
  EXPECT_EQ(stats_.lost, kMaxRecordIndex);
  EXPECT_EQ(visitor_.count, 0);
}

TEST_F(CorruptionTest, DroppedGoingBackwards) {
  PatchValue(path_, kRing0Control + offsetof(RingControl, dropped),
             uint64_t{10});
  ASSERT_TRUE(PollStatus().ok());
  EXPECT_EQ(stats_.writer_dropped, 10u);
  PatchValue(path_, kRing0Control + offsetof(RingControl, dropped),
             uint64_t{9});
  ExpectError(PollAgain(), absl::StatusCode::kDataLoss,
              "dropped counter went backwards");
}

TEST_F(CorruptionTest, SequenceFromTheFutureIsLostNotDelivered) {
  PatchValue(path_, kRing0Slot0, kCommittedSequence(1000));
  ASSERT_TRUE(PollStatus().ok());
  EXPECT_EQ(visitor_.count, 1);
  EXPECT_EQ(stats_.lost, 1u);
}

// --- Decode* on malformed payloads ------------------------------------------

class DecodeTest : public ::testing::Test {
 protected:
  template <typename Head>
  RecordView Make(RecordType type, const Head& head, size_t tail_bytes) {
    const size_t size = sizeof(Head) + tail_bytes;
    storage_.assign((size + 7) / 8 + 1, 0);
    memcpy(storage_.data(), &head, sizeof(Head));
    RecordView view;
    view.type = type;
    view.payload = absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(storage_.data()), size);
    return view;
  }
  std::vector<uint64_t> storage_;
};

TEST_F(DecodeTest, AllocSampleFrameCountMustMatch) {
  AllocSample head = {};
  head.frame_count = 3;
  RecordView ok = Make(RecordType::kAllocSample, head, 24);
  EXPECT_TRUE(DecodeAllocSample(ok).ok());
  ExpectError(
      DecodeAllocSample(Make(RecordType::kAllocSample, head, 16)).status(),
      absl::StatusCode::kInvalidArgument, "AllocSample: frame_count 3");
  ExpectError(
      DecodeAllocSample(Make(RecordType::kAllocSample, head, 25)).status(),
      absl::StatusCode::kInvalidArgument, "frame_count");
  RecordView truncated = ok;
  truncated.payload = truncated.payload.subspan(0, 55);
  ExpectError(DecodeAllocSample(truncated).status(),
              absl::StatusCode::kInvalidArgument, "shorter than 56");
}

TEST_F(DecodeTest, MisalignedFramesAreRejected) {
  AllocSample head = {};
  head.frame_count = 1;
  RecordView view = Make(RecordType::kAllocSample, head, 8);
  // The same bytes at an address that is 1 mod 8.
  std::vector<uint64_t> buffer(view.payload.size() / 8 + 2);
  uint8_t* start = reinterpret_cast<uint8_t*>(buffer.data()) + 1;
  memcpy(start, view.payload.data(), view.payload.size());
  view.payload = absl::MakeConstSpan(start, view.payload.size());
  ExpectError(DecodeAllocSample(view).status(),
              absl::StatusCode::kInvalidArgument, "aligned");
}

TEST_F(DecodeTest, CpuSampleFrameCountMustMatch) {
  CpuSample head = {};
  head.frame_count = 2;
  EXPECT_TRUE(DecodeCpuSample(Make(RecordType::kCpuSample, head, 16)).ok());
  ExpectError(DecodeCpuSample(Make(RecordType::kCpuSample, head, 8)).status(),
              absl::StatusCode::kInvalidArgument, "CpuSample: frame_count 2");
}

TEST_F(DecodeTest, WaitSampleFields) {
  WaitSample head = {};
  head.frame_count = 2;
  head.wait_ns = 5;
  head.sample_ns = 1000;
  head.kind = static_cast<uint16_t>(WaitKind::kBlock);
  EXPECT_TRUE(DecodeWaitSample(Make(RecordType::kWaitSample, head, 16)).ok());
  ExpectError(DecodeWaitSample(Make(RecordType::kWaitSample, head, 8)).status(),
              absl::StatusCode::kInvalidArgument, "WaitSample: frame_count 2");
  head.kind = 3;
  ExpectError(
      DecodeWaitSample(Make(RecordType::kWaitSample, head, 16)).status(),
      absl::StatusCode::kInvalidArgument, "kind 3");
  head.kind = static_cast<uint16_t>(WaitKind::kLock);
  head.wait_ns = 0;
  ExpectError(
      DecodeWaitSample(Make(RecordType::kWaitSample, head, 16)).status(),
      absl::StatusCode::kInvalidArgument, "wait_ns 0");
  head.wait_ns = 5;
  head.sample_ns = 0;
  ExpectError(
      DecodeWaitSample(Make(RecordType::kWaitSample, head, 16)).status(),
      absl::StatusCode::kInvalidArgument, "sample_ns 0");
}

TEST_F(DecodeTest, ModuleMapFields) {
  ModuleMap head = {};
  head.start = 0x1000;
  head.size = 0x1000;
  head.path_size = 4;
  head.build_id_size = 20;
  EXPECT_TRUE(DecodeModuleMap(Make(RecordType::kModuleMap, head, 4)).ok());
  ExpectError(DecodeModuleMap(Make(RecordType::kModuleMap, head, 5)).status(),
              absl::StatusCode::kInvalidArgument, "path_size 4");
  head.build_id_size = 33;
  ExpectError(DecodeModuleMap(Make(RecordType::kModuleMap, head, 4)).status(),
              absl::StatusCode::kInvalidArgument, "build_id_size 33");
  head.build_id_size = 20;
  head.size = 0;
  ExpectError(DecodeModuleMap(Make(RecordType::kModuleMap, head, 4)).status(),
              absl::StatusCode::kInvalidArgument, "bad range");
  head.size = ~uint64_t{0};
  ExpectError(DecodeModuleMap(Make(RecordType::kModuleMap, head, 4)).status(),
              absl::StatusCode::kInvalidArgument, "bad range");
}

TEST_F(DecodeTest, ThreadNameFields) {
  ThreadName head = {};
  head.name_size = 5;
  EXPECT_TRUE(DecodeThreadName(Make(RecordType::kThreadName, head, 5)).ok());
  ExpectError(DecodeThreadName(Make(RecordType::kThreadName, head, 6)).status(),
              absl::StatusCode::kInvalidArgument, "name_size 5");
  head.name_size = kMaxThreadNameSize + 1;
  ExpectError(DecodeThreadName(
                  Make(RecordType::kThreadName, head, kMaxThreadNameSize + 1))
                  .status(),
              absl::StatusCode::kInvalidArgument, "name_size 65");
}

TEST_F(DecodeTest, LiveSampleFramesMustMatchThePayload) {
  LiveSample head = {};
  head.frame_count = 2;
  EXPECT_TRUE(DecodeLiveSample(Make(RecordType::kLiveSample, head, 16)).ok());
  ExpectError(
      DecodeLiveSample(Make(RecordType::kLiveSample, head, 24)).status(),
      absl::StatusCode::kInvalidArgument, "LiveSample: frame_count 2");
  head.frame_count = 0xffff;
  EXPECT_FALSE(DecodeLiveSample(Make(RecordType::kLiveSample, head, 16)).ok());
}

TEST_F(DecodeTest, LabelSizesMustAddUp) {
  Label head = {};
  head.key_size = 3;
  head.value_size = 4;
  EXPECT_TRUE(DecodeLabel(Make(RecordType::kLabel, head, 7)).ok());
  ExpectError(DecodeLabel(Make(RecordType::kLabel, head, 8)).status(),
              absl::StatusCode::kInvalidArgument, "key_size 3 + value_size 4");
  head.key_size = 0xffff;
  head.value_size = 0xffff;
  ExpectError(DecodeLabel(Make(RecordType::kLabel, head, 7)).status(),
              absl::StatusCode::kInvalidArgument, "key_size");
}

// A TagSet payload from pairs, with optional overrides of the sizes.
std::vector<uint8_t> TagSetPayload(
    uint32_t id, const std::vector<std::pair<std::string, std::string>>& tags,
    int count_override = -1) {
  TagSet head = {};
  head.id = id;
  head.count =
      static_cast<uint16_t>(count_override >= 0 ? count_override : tags.size());
  std::vector<uint8_t> out(sizeof(head));
  memcpy(out.data(), &head, sizeof(head));
  for (const auto& [key, value] : tags) {
    TagSizes sizes = {static_cast<uint16_t>(key.size()),
                      static_cast<uint16_t>(value.size())};
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&sizes);
    out.insert(out.end(), bytes, bytes + sizeof(sizes));
  }
  for (const auto& [key, value] : tags) {
    out.insert(out.end(), key.begin(), key.end());
    out.insert(out.end(), value.begin(), value.end());
  }
  return out;
}

TEST_F(DecodeTest, TagSetSizesMustAddUp) {
  auto decode = [this](const std::vector<uint8_t>& payload) {
    storage_.assign(payload.size() / 8 + 1, 0);
    memcpy(storage_.data(), payload.data(), payload.size());
    RecordView view;
    view.type = RecordType::kTagSet;
    view.payload = absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(storage_.data()), payload.size());
    return DecodeTagSet(view);
  };
  auto ok = decode(TagSetPayload(7, {{"endpoint", "/a"}, {"tenant", ""}}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->head.id, 7u);
  ASSERT_EQ(ok->tags.size(), 2u);
  EXPECT_EQ(ok->tags[0].first, "endpoint");
  EXPECT_EQ(ok->tags[0].second, "/a");
  EXPECT_EQ(ok->tags[1].first, "tenant");
  EXPECT_EQ(ok->tags[1].second, "");
  EXPECT_TRUE(decode(TagSetPayload(1, {})).ok());

  ExpectError(decode(TagSetPayload(0, {{"k", "v"}})).status(),
              absl::StatusCode::kInvalidArgument, "TagSet: id 0");
  ExpectError(decode(TagSetPayload(1, {{"k", "v"}}, 9)).status(),
              absl::StatusCode::kInvalidArgument, "count 9");
  ExpectError(decode(TagSetPayload(1, {{"k", "v"}}, 2)).status(),
              absl::StatusCode::kInvalidArgument, "TagSet");
  ExpectError(decode(TagSetPayload(1, {{"", "v"}})).status(),
              absl::StatusCode::kInvalidArgument, "key_size 0");
  ExpectError(decode(TagSetPayload(1, {{std::string(65, 'k'), "v"}})).status(),
              absl::StatusCode::kInvalidArgument, "key_size 65");
  ExpectError(decode(TagSetPayload(1, {{"k", std::string(129, 'v')}})).status(),
              absl::StatusCode::kInvalidArgument, "value_size 129");
  ExpectError(decode(TagSetPayload(1, {{"k", "v"}, {"k", "w"}})).status(),
              absl::StatusCode::kInvalidArgument, "twice");
  std::vector<uint8_t> longer = TagSetPayload(1, {{"k", "v"}});
  longer.push_back('x');
  ExpectError(decode(longer).status(), absl::StatusCode::kInvalidArgument,
              "add up to 2, 3 bytes follow");
  std::vector<uint8_t> shorter = TagSetPayload(1, {{"k", "v"}});
  shorter.pop_back();
  ExpectError(decode(shorter).status(), absl::StatusCode::kInvalidArgument,
              "TagSet");
}

TEST_F(DecodeTest, FixedSizeRecordsMustBeExact) {
  FreeSampled free_sampled = {};
  EXPECT_TRUE(
      DecodeFreeSampled(Make(RecordType::kFreeSampled, free_sampled, 0)).ok());
  ExpectError(DecodeFreeSampled(Make(RecordType::kFreeSampled, free_sampled, 8))
                  .status(),
              absl::StatusCode::kInvalidArgument,
              "FreeSampled: payload_size 32");
  ModuleUnmap unmap = {};
  EXPECT_FALSE(
      DecodeModuleUnmap(Make(RecordType::kModuleUnmap, unmap, 1)).ok());
  LostSamples lost = {};
  EXPECT_FALSE(DecodeLostSamples(Make(RecordType::kLostSamples, lost, 8)).ok());
  ProcessEnd end = {};
  EXPECT_FALSE(DecodeProcessEnd(Make(RecordType::kProcessEnd, end, 8)).ok());
  ThreadExit thread_exit = {};
  EXPECT_FALSE(
      DecodeThreadExit(Make(RecordType::kThreadExit, thread_exit, 8)).ok());
  LiveSweepEnd sweep_end = {};
  EXPECT_TRUE(
      DecodeLiveSweepEnd(Make(RecordType::kLiveSweepEnd, sweep_end, 0)).ok());
  EXPECT_FALSE(
      DecodeLiveSweepEnd(Make(RecordType::kLiveSweepEnd, sweep_end, 8)).ok());
  // And the wrong type for the decoder.
  ExpectError(
      DecodeThreadExit(Make(RecordType::kProcessEnd, thread_exit, 0)).status(),
      absl::StatusCode::kInvalidArgument, "ThreadExit: record has type 9");
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
