// Every record type written by RingWriter comes back intact from RingReader,
// and the reader's accounting (lapped, dropped, unknown, stalled) is exact.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

using ::ringprof::ringfile::testing::AppendAllocSample;
using ::ringprof::ringfile::testing::AppendCpuSample;
using ::ringprof::ringfile::testing::AppendFixed;
using ::ringprof::ringfile::testing::AppendLabel;
using ::ringprof::ringfile::testing::AppendModuleMap;
using ::ringprof::ringfile::testing::AppendThreadName;
using ::ringprof::ringfile::testing::OwnedRecord;
using ::ringprof::ringfile::testing::ReadAllRecords;
using ::ringprof::ringfile::testing::TempRingPath;
using ::ringprof::ringfile::testing::TestWriterOptions;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

class RoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempRingPath("roundtrip");
    ASSERT_EQ(writer_.Create(TestWriterOptions(path_)), 0);
  }

  std::vector<OwnedRecord> ReadAll(PollStats* stats = nullptr) {
    absl::StatusOr<std::vector<OwnedRecord>> records =
        ReadAllRecords(path_, stats);
    EXPECT_TRUE(records.ok()) << records.status();
    return records.ok() ? *std::move(records) : std::vector<OwnedRecord>{};
  }

  std::string path_;
  RingWriter writer_;
};

TEST_F(RoundTripTest, HeaderFieldsReachTheReader) {
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const FileInfo& info = (*reader)->info();
  EXPECT_EQ(info.version, kFormatVersion);
  EXPECT_EQ(info.ring_count, 2u);
  EXPECT_EQ(info.slots_per_ring, 64u);
  EXPECT_EQ(info.slot_size, 1152u);
  EXPECT_EQ(info.file_size, FileSizeFor(2, 64, 1152));
  EXPECT_EQ(info.pid, 4242u);
  EXPECT_EQ(info.process_start_ticks, 12345u);
  EXPECT_EQ(info.service_name, "test-service");
  EXPECT_EQ(info.executable, "/usr/bin/test-program");
  // The creation clock pair was read just before ours.
  const uint64_t mono_ns = mono.tv_sec * 1000000000ull + mono.tv_nsec;
  const int64_t real_ns = real.tv_sec * 1000000000ll + real.tv_nsec;
  EXPECT_LE(info.created_monotonic_ns, mono_ns);
  EXPECT_NEAR(static_cast<double>(info.ToRealtimeNs(mono_ns)),
              static_cast<double>(real_ns), 1e9);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), info.file_size);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(RoundTripTest, AllocSample) {
  AllocSample head = {};
  head.monotonic_ns = 111;
  head.tid = 7;
  head.flags = kSampleTruncated;
  head.requested_size = 24;
  head.weight_bytes = 524288;
  head.address = 0xdead0000;
  std::vector<uint64_t> frames;
  for (int i = 0; i < 32; ++i) frames.push_back(0x400000 + i * 16);
  ASSERT_TRUE(AppendAllocSample(writer_, head, frames, /*shard=*/1));

  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].ring, 1u);
  EXPECT_EQ(records[0].index, 0u);
  absl::StatusOr<AllocSampleView> view = DecodeAllocSample(records[0].view());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->head.monotonic_ns, 111u);
  EXPECT_EQ(view->head.tid, 7u);
  EXPECT_EQ(view->head.frame_count, 32);
  EXPECT_EQ(view->head.flags, kSampleTruncated);
  EXPECT_EQ(view->head.requested_size, 24u);
  EXPECT_EQ(view->head.weight_bytes, 524288u);
  EXPECT_EQ(view->head.address, 0xdead0000u);
  EXPECT_THAT(view->frames, ElementsAreArray(frames));
}

TEST_F(RoundTripTest, CpuSample) {
  CpuSample head = {};
  head.monotonic_ns = 5;
  head.tid = 9;
  head.cpu_period_ns = 10'000'000;
  const uint64_t frames[] = {1, 2, 3};
  ASSERT_TRUE(AppendCpuSample(writer_, head, frames));
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 1u);
  absl::StatusOr<CpuSampleView> view = DecodeCpuSample(records[0].view());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->head.tid, 9u);
  EXPECT_EQ(view->head.cpu_period_ns, 10'000'000u);
  EXPECT_THAT(view->frames, ElementsAre(1, 2, 3));
}

TEST_F(RoundTripTest, ModuleMapWithOddLengthPath) {
  ModuleMap head = {};
  head.monotonic_ns = 1;
  head.start = 0x7f0000001000;
  head.size = 0x5000;
  head.file_offset = 0x1000;
  head.load_bias = 0x7f0000000000;
  const uint8_t build_id[20] = {0xab, 1,  2,  3,  4,  5,  6,  7,  8,  9,
                                10,   11, 12, 13, 14, 15, 16, 17, 18, 0xcd};
  ASSERT_TRUE(AppendModuleMap(writer_, head, "/usr/lib/libfoo.so.1", build_id));
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].payload_size, sizeof(ModuleMap) + 20);
  absl::StatusOr<ModuleMapView> view = DecodeModuleMap(records[0].view());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->path, "/usr/lib/libfoo.so.1");
  EXPECT_THAT(view->build_id, ElementsAreArray(build_id));
  EXPECT_EQ(view->head.start, 0x7f0000001000u);
  EXPECT_EQ(view->head.size, 0x5000u);
  EXPECT_EQ(view->head.file_offset, 0x1000u);
  EXPECT_EQ(view->head.load_bias, 0x7f0000000000u);
}

TEST_F(RoundTripTest, FixedSizeRecords) {
  FreeSampled free_sampled = {};
  free_sampled.monotonic_ns = 1;
  free_sampled.tid = 2;
  free_sampled.address = 0x1234;
  ModuleUnmap unmap = {};
  unmap.monotonic_ns = 2;
  unmap.start = 0x5000;
  unmap.size = 0x1000;
  LostSamples lost = {};
  lost.monotonic_ns = 3;
  lost.samples = 17;
  lost.weight_bytes = 17 << 19;
  ThreadExit thread_exit = {};
  thread_exit.monotonic_ns = 4;
  thread_exit.tid = 99;
  ProcessEnd end = {};
  end.monotonic_ns = 5;
  end.exit_status = 3;
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kFreeSampled, free_sampled));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kModuleUnmap, unmap));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kLostSamples, lost));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, thread_exit));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kProcessEnd, end));

  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 5u);
  absl::StatusOr<FreeSampled> f = DecodeFreeSampled(records[0].view());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->tid, 2u);
  EXPECT_EQ(f->address, 0x1234u);
  absl::StatusOr<ModuleUnmap> u = DecodeModuleUnmap(records[1].view());
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->start, 0x5000u);
  EXPECT_EQ(u->size, 0x1000u);
  absl::StatusOr<LostSamples> l = DecodeLostSamples(records[2].view());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->samples, 17u);
  EXPECT_EQ(l->weight_bytes, uint64_t{17} << 19);
  absl::StatusOr<ThreadExit> t = DecodeThreadExit(records[3].view());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tid, 99u);
  absl::StatusOr<ProcessEnd> e = DecodeProcessEnd(records[4].view());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->exit_status, 3);
  EXPECT_EQ(e->monotonic_ns, 5u);
}

TEST_F(RoundTripTest, LiveSetRecords) {
  LiveSample live = {};
  live.monotonic_ns = 10;
  live.alloc_ns = 7;
  live.sweep_id = 3;
  live.tid = 5;
  live.frame_count = 2;
  live.requested_size = 100;
  live.weight_bytes = 4096;
  live.address = 0xabc0;
  const uint64_t frames[2] = {0x401000, 0x402000};
  ASSERT_TRUE(writer_.TryAppend(RecordType::kLiveSample, &live, sizeof(live),
                                frames, sizeof(frames), 0));
  LiveSweepEnd end = {};
  end.monotonic_ns = 11;
  end.begin_ns = 9;
  end.sweep_id = 3;
  end.entries = 1;
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kLiveSweepEnd, end));
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  absl::StatusOr<LiveSampleView> view = DecodeLiveSample(records[0].view());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->head.alloc_ns, 7u);
  EXPECT_EQ(view->head.sweep_id, 3u);
  EXPECT_EQ(view->head.weight_bytes, 4096u);
  EXPECT_EQ(view->head.address, 0xabc0u);
  EXPECT_THAT(view->frames, ElementsAre(0x401000, 0x402000));
  absl::StatusOr<LiveSweepEnd> e = DecodeLiveSweepEnd(records[1].view());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->begin_ns, 9u);
  EXPECT_EQ(e->entries, 1u);
}

TEST_F(RoundTripTest, ThreadNameAndLabel) {
  ThreadName name = {};
  name.tid = 12;
  ASSERT_TRUE(AppendThreadName(writer_, name, "worker-3"));
  Label label = {};
  label.monotonic_ns = 8;
  ASSERT_TRUE(AppendLabel(writer_, label, "region", "eu-west"));
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 2u);
  absl::StatusOr<ThreadNameView> n = DecodeThreadName(records[0].view());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->head.tid, 12u);
  EXPECT_EQ(n->name, "worker-3");
  absl::StatusOr<LabelView> l = DecodeLabel(records[1].view());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->key, "region");
  EXPECT_EQ(l->value, "eu-west");
}

TEST_F(RoundTripTest, DecodeRejectsTheWrongType) {
  ThreadName name = {};
  ASSERT_TRUE(AppendThreadName(writer_, name, "x"));
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), 1u);
  absl::StatusOr<AllocSampleView> view = DecodeAllocSample(records[0].view());
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RoundTripTest, EveryPayloadLengthUpToTheSlot) {
  // Lengths that exercise every alignment of the word-by-word copy, and the
  // largest payload a slot holds.
  const uint32_t max = writer_.max_payload_size();
  ASSERT_EQ(max, 1152u - kSlotHeaderSize);
  std::vector<uint32_t> lengths = {0, 1, 7, 8, 9, 15, 16, 17, 63, max - 1, max};
  std::vector<uint8_t> bytes(max);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  for (uint32_t length : lengths) {
    const uint32_t head = length / 3;
    ASSERT_TRUE(writer_.TryAppend(RecordType::kLabel, bytes.data(), head,
                                  bytes.data() + head, length - head, 0))
        << length;
  }
  std::vector<OwnedRecord> records = ReadAll();
  ASSERT_EQ(records.size(), lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    RecordView view = records[i].view();
    ASSERT_EQ(view.payload.size(), lengths[i]);
    EXPECT_EQ(memcmp(view.payload.data(), bytes.data(), lengths[i]), 0)
        << lengths[i];
  }
}

TEST_F(RoundTripTest, OversizedRecordIsRefusedAndCounted) {
  std::vector<uint8_t> bytes(writer_.max_payload_size() + 1);
  EXPECT_FALSE(writer_.TryAppend(RecordType::kLabel, bytes.data(), 8,
                                 bytes.data() + 8, bytes.size() - 8, 1));
  // Sizes whose uint32 sum would wrap are refused too.
  EXPECT_FALSE(writer_.TryAppend(RecordType::kLabel, bytes.data(), 0xffffffff,
                                 bytes.data(), 2, 1));
  PollStats stats;
  std::vector<OwnedRecord> records = ReadAll(&stats);
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(stats.writer_dropped, 2u);
  EXPECT_EQ(stats.lost, 0u);
}

TEST_F(RoundTripTest, LappedRecordsAreCountedAsLost) {
  // 64 slots per ring: 200 records leave the newest 64.
  for (uint64_t i = 0; i < 200; ++i) {
    LostSamples record = {};
    record.samples = i;
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kLostSamples, record, 0));
  }
  PollStats stats;
  std::vector<OwnedRecord> records = ReadAll(&stats);
  EXPECT_EQ(stats.lost, 200u - 64u);
  ASSERT_EQ(records.size(), 64u);
  for (size_t i = 0; i < records.size(); ++i) {
    absl::StatusOr<LostSamples> record = DecodeLostSamples(records[i].view());
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(record->samples, 136 + i);
    EXPECT_EQ(records[i].index, 136 + i);
  }
}

TEST_F(RoundTripTest, UnknownRecordTypesAreSkippedAndCounted) {
  const uint64_t payload = 42;
  ASSERT_TRUE(
      writer_.TryAppend(static_cast<RecordType>(kMaxKnownRecordType + 1),
                        &payload, 8, nullptr, 0, 0));
  ThreadExit exit_record = {};
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, exit_record, 0));
  PollStats stats;
  std::vector<OwnedRecord> records = ReadAll(&stats);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].type, RecordType::kThreadExit);
  EXPECT_EQ(stats.unknown_types, 1u);
  EXPECT_EQ(stats.lost, 0u);
}

class CountingVisitor : public RecordVisitor {
 public:
  void OnRecord(const RecordView&) override { ++count; }
  int count = 0;
};

TEST_F(RoundTripTest, IncrementalPollsAndFinished) {
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CountingVisitor visitor;
  PollStats stats;
  PollOptions options;
  options.now_ns = 1;
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 0);
  EXPECT_FALSE((*reader)->Finished());

  ThreadExit record = {};
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, i));
  }
  options.max_records = 4;  // bounded: takes three polls
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 4);
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 10);
  EXPECT_FALSE((*reader)->Finished());  // the process has not ended

  ProcessEnd end = {};
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kProcessEnd, end, 0));
  writer_.MarkProcessEnded();
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 11);
  EXPECT_TRUE((*reader)->Finished());
  EXPECT_EQ(stats.delivered, 11u);
  EXPECT_EQ(stats.lost, 0u);
}

TEST_F(RoundTripTest, ResumeContinuesWhereAnEarlierReaderStopped) {
  ThreadExit record = {};
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  }
  PollOptions options;
  options.writer_dead = true;
  options.max_records = 10;
  std::vector<uint64_t> saved;
  {
    absl::StatusOr<std::unique_ptr<RingReader>> first = RingReader::Open(path_);
    ASSERT_TRUE(first.ok());
    CountingVisitor visitor;
    PollStats stats;
    ASSERT_TRUE((*first)->Poll(options, visitor, stats).ok());
    EXPECT_EQ(visitor.count, 10);
    saved = (*first)->Positions();
    EXPECT_THAT(saved, ElementsAre(10, 0));
  }
  // 100 more: ring 0 (64 slots) laps the saved position by 140 - 64 - 10.
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  }
  absl::StatusOr<std::unique_ptr<RingReader>> second = RingReader::Open(path_);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*second)->Resume({10})));
  EXPECT_TRUE(absl::IsInvalidArgument((*second)->Resume({10, 1})));
  ASSERT_TRUE((*second)->Resume(saved).ok());
  CountingVisitor visitor;
  PollStats stats;
  options.max_records = 1000;
  ASSERT_TRUE((*second)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 64);
  EXPECT_EQ(stats.lost, 130u - 64u - 10u + 0u);
  EXPECT_EQ(stats.writer_dropped, 0u);
  EXPECT_THAT((*second)->Positions(), ElementsAre(130, 0));
}

// A visitor that appends two records for every one it reads: the writers
// outpace the reader for as long as the poll runs.
class OutpacingVisitor : public RecordVisitor {
 public:
  explicit OutpacingVisitor(RingWriter& writer) : writer_(writer) {}
  void OnRecord(const RecordView&) override {
    ++count;
    ThreadExit record = {};
    AppendFixed(writer_, RecordType::kThreadExit, record, 0);
    AppendFixed(writer_, RecordType::kThreadExit, record, 0);
  }
  int count = 0;

 private:
  RingWriter& writer_;
};

TEST_F(RoundTripTest, PollIsBoundedWhenWritersOutpaceTheReader) {
  ThreadExit record = {};
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  }
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  OutpacingVisitor visitor(writer_);
  PollStats stats;
  PollOptions options;
  options.now_ns = 1;
  options.max_records = UINT32_MAX;
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  // At most 2 x 64 slots of ring 0 examined in one call.
  EXPECT_GT(visitor.count, 0);
  EXPECT_LE(stats.delivered + stats.lost, 2u * 64u);
  EXPECT_FALSE((*reader)->Finished());
}

// A record whose writer took an index but never committed (stalled or died
// mid-append) blocks its ring until stall_timeout_ns, then counts as lost.
TEST_F(RoundTripTest, UncommittedSlotIsSkippedAfterTheStallTimeout) {
  // Simulate a writer that took index 0 and stopped: bump next_index of
  // ring 0 without writing the slot, through a second mapping.
  ThreadExit record = {};
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  // Un-commit record 0: sequence = kWritingSequence(0).
  testing::PatchValue(path_, SlotsOffsetFor(2), kWritingSequence(0));

  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CountingVisitor visitor;
  PollStats stats;
  PollOptions options;
  options.stall_timeout_ns = 1000;
  options.now_ns = 5000;
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 0);
  options.now_ns = 6000;  // exactly the timeout: still waiting
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 0);
  EXPECT_EQ(stats.lost, 0u);
  options.now_ns = 6001;
  ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
  EXPECT_EQ(visitor.count, 1);
  EXPECT_EQ(stats.lost, 1u);
}

TEST_F(RoundTripTest, DeadWriterSlotIsSkippedAtOnce) {
  ThreadExit record = {};
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  ASSERT_TRUE(AppendFixed(writer_, RecordType::kThreadExit, record, 0));
  testing::PatchValue(path_, SlotsOffsetFor(2), kWritingSequence(0));
  PollStats stats;
  std::vector<OwnedRecord> records = ReadAll(&stats);  // writer_dead = true
  EXPECT_EQ(records.size(), 1u);
  EXPECT_EQ(stats.lost, 1u);
}

TEST(WriterCreateTest, RefusesExistingFilesSymlinksAndBadOptions) {
  const std::string path = TempRingPath("create");
  RingWriter writer;
  ASSERT_EQ(writer.Create(TestWriterOptions(path)), 0);
  EXPECT_EQ(writer.Create(TestWriterOptions(path)), EBUSY);
  RingWriter second;
  EXPECT_EQ(second.Create(TestWriterOptions(path)), EEXIST);

  const std::string link = TempRingPath("symlink");
  ASSERT_EQ(symlink("/nonexistent-target", link.c_str()), 0);
  EXPECT_EQ(second.Create(TestWriterOptions(link)), EEXIST);

  const std::string other = TempRingPath("bad-options");
  WriterOptions options = TestWriterOptions(other);
  options.slot_size = 1000;  // not a multiple of 64
  EXPECT_EQ(second.Create(options), EINVAL);
  options = TestWriterOptions(other);
  options.ring_count = 0;
  EXPECT_EQ(second.Create(options), EINVAL);
  options = TestWriterOptions(other);
  options.ring_count = kMaxRings + 1;
  EXPECT_EQ(second.Create(options), EINVAL);
  EXPECT_FALSE(second.ok());
  EXPECT_FALSE(second.TryAppend(RecordType::kLabel, nullptr, 0, nullptr, 0, 0));
  // Nothing was left behind by the failures.
  EXPECT_NE(access(other.c_str(), F_OK), 0);
}

// Blocks the file holds, in bytes.
uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// With reserve_as_written the file starts with its header's blocks only and
// gains a chunk of a ring's slots as appends first reach it; every record
// reads back, a lap included, and errno is kept.
TEST(WriterCreateTest, ReserveAsWrittenReservesChunksAsTheAppendsReachThem) {
  // tmpfs (blocks are pages as written) where the test runs has it.
  const char* shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : nullptr;
  if (shm == nullptr) GTEST_SKIP() << "no writable /dev/shm";
  const std::string path =
      absl::StrCat(shm, "/ringprof-reserve-test.", getpid(), ".ring");
  WriterOptions options = TestWriterOptions(path);
  options.populate = false;
  options.reserve_as_written = true;
  options.slots_per_ring = 1024;
  options.slot_size = 1024;  // 1 MiB per ring, 64 slots per chunk
  RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  const uint64_t header = SlotsOffsetFor(options.ring_count);
  const uint64_t file_size =
      FileSizeFor(options.ring_count, 1024, options.slot_size);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), file_size);
  EXPECT_EQ(AllocatedBytes(path), header);

  // Ten records into ring 1: the first chunk of that ring, errno kept.
  for (uint64_t i = 0; i < 10; ++i) {
    LostSamples record = {};
    record.samples = i;
    errno = EDOM;
    ASSERT_TRUE(AppendFixed(writer, RecordType::kLostSamples, record, 1));
    EXPECT_EQ(errno, EDOM);
  }
  EXPECT_EQ(AllocatedBytes(path), header + kReserveChunkBytes);

  // A lap and a half of ring 0: all of ring 0, the newest 1024 read back.
  for (uint64_t i = 0; i < 1536; ++i) {
    LostSamples record = {};
    record.samples = 1000 + i;
    ASSERT_TRUE(AppendFixed(writer, RecordType::kLostSamples, record, 0));
  }
  EXPECT_EQ(AllocatedBytes(path), header + (1 << 20) + kReserveChunkBytes);
  PollStats stats;
  absl::StatusOr<std::vector<OwnedRecord>> records =
      ReadAllRecords(path, &stats);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(records->size(), 1024u + 10u);
  EXPECT_EQ(stats.lost, 512u);
  uint64_t sum = 0;
  for (const OwnedRecord& record : *records) {
    absl::StatusOr<LostSamples> decoded = DecodeLostSamples(record.view());
    ASSERT_TRUE(decoded.ok());
    sum += decoded->samples;
  }
  // 0..9 from ring 1, 1512..2535 from ring 0.
  EXPECT_EQ(sum, 45u + (1512u + 2535u) * 1024u / 2);
  writer.Close();
  unlink(path.c_str());
}

// Pages of the file at `path` in the page cache (mincore on a mapping of
// it), or -1.
int64_t CachedPages(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  int64_t cached = -1;
  if (fstat(fd, &st) == 0) {
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    const size_t page = static_cast<size_t>(getpagesize());
    std::vector<unsigned char> resident((size + page - 1) / page);
    if (map != MAP_FAILED && mincore(map, size, resident.data()) == 0) {
      cached = 0;
      for (unsigned char r : resident) cached += r & 1;
    }
    if (map != MAP_FAILED) munmap(map, size);
  }
  close(fd);
  return cached;
}

// On a disk filesystem the kernel reads around each fault on a file
// mapping (the device's read_ahead_kb, up to MiBs), holes included: a
// lazily reserved ring brings into memory only the header and the chunks
// its appends reached, not the rest of the file.
TEST(WriterCreateTest, ReserveAsWrittenDoesNotReadAroundOnADiskFilesystem) {
  const std::string path = TempRingPath("read-around");
  const std::string dir = path.substr(0, path.rfind('/'));
  struct statfs fs;
  ASSERT_EQ(statfs(dir.c_str(), &fs), 0);
  constexpr int64_t kTmpfsMagic = 0x01021994;  // no read-around there
  if (static_cast<int64_t>(fs.f_type) == kTmpfsMagic) {
    GTEST_SKIP() << dir << " is tmpfs";
  }
  WriterOptions options = TestWriterOptions(path);
  options.populate = false;
  options.reserve_as_written = true;
  options.ring_count = 4;
  options.slots_per_ring = 1024;
  options.slot_size = 2048;  // 8 MiB of slots, as the emitter's default
  RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  for (uint64_t i = 0; i < 10; ++i) {
    LostSamples record = {};
    record.samples = i;
    ASSERT_TRUE(AppendFixed(writer, RecordType::kLostSamples, record, 1));
  }
  const int64_t page = getpagesize();
  const int64_t touched =
      (static_cast<int64_t>(SlotsOffsetFor(options.ring_count)) +
       static_cast<int64_t>(kReserveChunkBytes) + page - 1) /
      page;
  const int64_t cached = CachedPages(path);
  ASSERT_GE(cached, 0);
  EXPECT_LE(cached, touched + 2)
      << "of " << FileSizeFor(4, 1024, 2048) / page << " pages";
  writer.Close();
  unlink(path.c_str());
}

TEST(WriterCreateTest, SlotsPerRingIsRoundedUpToAPowerOfTwo) {
  const std::string path = TempRingPath("round");
  WriterOptions options = TestWriterOptions(path);
  options.slots_per_ring = 100;
  RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().slots_per_ring, 128u);
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
