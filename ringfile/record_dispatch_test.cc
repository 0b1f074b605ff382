#include "ringfile/record_dispatch.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace ringfile {
namespace {

// Counts what reaches each method.
class CountingHandler : public RecordHandler {
 public:
  void OnAllocSample(const RecordView&, const AllocSampleView& s) override {
    ++allocs;
    frames += s.frames.size();
  }
  void OnFreeSampled(const RecordView&, const FreeSampled& f) override {
    ++frees;
    last_address = f.address;
  }
  void OnWaitSample(const RecordView&, const WaitSampleView& s) override {
    ++waits;
    frames += s.frames.size();
  }
  void OnMalformed(const RecordView& record,
                   const absl::Status& status) override {
    ++malformed;
    malformed_type = record.type;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  }
  void OnUnknownType(const RecordView&) override { ++unknown; }

  int allocs = 0, frees = 0, waits = 0, malformed = 0, unknown = 0;
  size_t frames = 0;
  uint64_t last_address = 0;
  RecordType malformed_type{};
};

std::vector<uint8_t> AllocPayload(uint16_t frame_count, size_t frames_given) {
  AllocSample head = {};
  head.frame_count = frame_count;
  head.weight_bytes = 4096;
  std::vector<uint8_t> bytes(sizeof(head) + 8 * frames_given);
  std::memcpy(bytes.data(), &head, sizeof(head));
  for (size_t i = 0; i < frames_given; ++i) {
    const uint64_t frame = 0x1000 + i;
    std::memcpy(bytes.data() + sizeof(head) + 8 * i, &frame, 8);
  }
  return bytes;
}

RecordView View(RecordType type, const std::vector<uint8_t>& payload) {
  RecordView view;
  view.type = type;
  view.payload = absl::MakeConstSpan(payload);
  return view;
}

TEST(RecordDispatchTest, DecodedRecordsReachTheirMethod) {
  CountingHandler handler;
  const std::vector<uint8_t> alloc = AllocPayload(3, 3);
  EXPECT_TRUE(
      DispatchRecord(View(RecordType::kAllocSample, alloc), handler).ok());
  FreeSampled free_sampled = {};
  free_sampled.address = 0xabc0;
  std::vector<uint8_t> free_bytes(sizeof(free_sampled));
  std::memcpy(free_bytes.data(), &free_sampled, sizeof(free_sampled));
  EXPECT_TRUE(
      DispatchRecord(View(RecordType::kFreeSampled, free_bytes), handler).ok());
  WaitSample wait = {};
  wait.frame_count = 1;
  wait.wait_ns = 7;
  wait.sample_ns = 1000;
  wait.kind = static_cast<uint16_t>(WaitKind::kBlock);
  std::vector<uint8_t> wait_bytes(sizeof(wait) + 8);
  std::memcpy(wait_bytes.data(), &wait, sizeof(wait));
  EXPECT_TRUE(
      DispatchRecord(View(RecordType::kWaitSample, wait_bytes), handler).ok());
  EXPECT_EQ(handler.allocs, 1);
  EXPECT_EQ(handler.waits, 1);
  EXPECT_EQ(handler.frames, 4u);
  EXPECT_EQ(handler.frees, 1);
  EXPECT_EQ(handler.last_address, 0xabc0u);
  EXPECT_EQ(handler.malformed, 0);
}

TEST(RecordDispatchTest, MalformedRecordsGoToOnMalformedOnce) {
  CountingHandler handler;
  // Says 5 frames, carries 2.
  const std::vector<uint8_t> short_alloc = AllocPayload(5, 2);
  EXPECT_FALSE(
      DispatchRecord(View(RecordType::kAllocSample, short_alloc), handler)
          .ok());
  // Shorter than its fixed part.
  const std::vector<uint8_t> stub(3);
  EXPECT_FALSE(
      DispatchRecord(View(RecordType::kFreeSampled, stub), handler).ok());
  EXPECT_EQ(handler.malformed, 2);
  EXPECT_EQ(handler.malformed_type, RecordType::kFreeSampled);
  // A wait sample of an unknown kind.
  WaitSample wait = {};
  wait.wait_ns = 7;
  wait.sample_ns = 1000;
  wait.kind = 9;
  std::vector<uint8_t> wait_bytes(sizeof(wait));
  std::memcpy(wait_bytes.data(), &wait, sizeof(wait));
  EXPECT_FALSE(
      DispatchRecord(View(RecordType::kWaitSample, wait_bytes), handler).ok());
  EXPECT_EQ(handler.malformed, 3);
  EXPECT_EQ(handler.allocs, 0);
  EXPECT_EQ(handler.frees, 0);
  EXPECT_EQ(handler.waits, 0);
}

TEST(RecordDispatchTest, UnknownTypeIsReportedNotDecoded) {
  CountingHandler handler;
  const std::vector<uint8_t> payload(16);
  EXPECT_FALSE(
      DispatchRecord(
          View(static_cast<RecordType>(kMaxKnownRecordType + 100), payload),
          handler)
          .ok());
  EXPECT_EQ(handler.unknown, 1);
  EXPECT_EQ(handler.malformed, 0);
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
