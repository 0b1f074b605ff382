// Ring file costs (tools/bench ring):
//   BM_Append/threads:N         append of a 32-frame AllocSample (296 bytes),
//                               thread i on ring i % 4, as tid % rings does
//   BM_AppendSameRing/threads:N all threads on one ring: worst-case contention
//   BM_CopyBaseline             memcpy of the same 296 bytes: the floor
//   BM_ReadAllocSamples         reader throughput: Poll + DecodeAllocSample
//   BM_ReadCopyBaseline         memcpy of the same slots: the reader's floor
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace {

constexpr int kFrames = 32;
// The emitter's default geometry (WriterOptions): 4 rings x 2048 slots x
// 1152 bytes, 9 MiB.
constexpr uint32_t kRings = WriterOptions().ring_count;
constexpr uint32_t kSlotsPerRing = WriterOptions().slots_per_ring;
constexpr uint32_t kSlotSize = WriterOptions().slot_size;

// tmpfs, as in deployment (an emptyDir or /dev/shm shared with the
// collector): a disk-backed file would add writeback to the numbers.
std::string BenchPath(const char* name) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return absl::StrCat(dir, "/ring_benchmark.", getpid(), ".", name);
}

struct Sample {
  AllocSample head = {};
  uint64_t frames[kFrames];
  Sample() {
    head.tid = 1234;
    head.frame_count = kFrames;
    head.requested_size = 48;
    head.weight_bytes = 524288;
    head.address = 0x7f0012345678;
    for (int i = 0; i < kFrames; ++i) frames[i] = 0x400000 + 0x40 * i;
  }
};

// Fills every slot once: page faults of a fresh mapping are a one-time cost,
// not part of the steady-state append.
void FillOneLap(RingWriter& writer) {
  Sample sample;
  for (uint32_t i = 0; i < kRings * kSlotsPerRing; ++i) {
    sample.head.monotonic_ns = i;
    if (!writer.TryAppend(RecordType::kAllocSample, &sample.head,
                          sizeof(sample.head), sample.frames,
                          sizeof(sample.frames), i % kRings)) {
      abort();
    }
  }
}

RingWriter* CreateWriter(const std::string& path) {
  unlink(path.c_str());
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = kRings;
  options.slots_per_ring = kSlotsPerRing;
  options.slot_size = kSlotSize;
  auto* writer = new RingWriter();
  if (writer->Create(options) != 0) abort();
  FillOneLap(*writer);
  return writer;
}

// One writer shared by all benchmark threads, as in a profiled process.
RingWriter& SharedWriter() {
  static RingWriter* const writer = [] {
    const std::string path = BenchPath("append");
    RingWriter* w = CreateWriter(path);
    unlink(path.c_str());  // the mapping stays valid
    return w;
  }();
  return *writer;
}

void RunAppend(benchmark::State& state, uint32_t shard) {
  RingWriter& writer = SharedWriter();
  Sample sample;
  uint64_t committed = 0;
  for (auto _ : state) {
    sample.head.monotonic_ns++;
    committed += writer.TryAppend(RecordType::kAllocSample, &sample.head,
                                  sizeof(sample.head), sample.frames,
                                  sizeof(sample.frames), shard);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["committed_share"] =
      benchmark::Counter(static_cast<double>(committed) / state.iterations(),
                         benchmark::Counter::kAvgThreads);
}

void BM_Append(benchmark::State& state) {
  RunAppend(state, static_cast<uint32_t>(state.thread_index()) % kRings);
}
BENCHMARK(BM_Append)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

void BM_AppendSameRing(benchmark::State& state) { RunAppend(state, 0); }
BENCHMARK(BM_AppendSameRing)->Threads(2)->Threads(8)->UseRealTime();

void BM_CopyBaseline(benchmark::State& state) {
  Sample sample;
  std::vector<uint8_t> slot(kSlotSize);
  for (auto _ : state) {
    sample.head.monotonic_ns++;
    memcpy(slot.data() + 16, &sample.head, sizeof(sample.head));
    memcpy(slot.data() + 16 + sizeof(sample.head), sample.frames,
           sizeof(sample.frames));
    benchmark::DoNotOptimize(slot.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CopyBaseline);

class DecodingVisitor : public RecordVisitor {
 public:
  void OnRecord(const RecordView& record) override {
    absl::StatusOr<AllocSampleView> sample = DecodeAllocSample(record);
    if (!sample.ok()) abort();
    frames_ += sample->frames.size();
    leaf_sum_ += sample->frames[0];
  }
  uint64_t frames_ = 0, leaf_sum_ = 0;
};

// The collector's steady state: one long-lived reader draining a full lap of
// 32-frame samples per iteration (refilled, untimed, between iterations).
void BM_ReadAllocSamples(benchmark::State& state) {
  const std::string path = BenchPath("read");
  std::unique_ptr<RingWriter> writer(CreateWriter(path));
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  if (!reader.ok()) abort();
  unlink(path.c_str());
  DecodingVisitor visitor;
  PollStats stats;
  PollOptions options;
  options.now_ns = 1;
  options.max_records = kRings * kSlotsPerRing;
  // Read the warm-up lap, so that every page is mapped in the reader too.
  if (!(*reader)->Poll(options, visitor, stats).ok()) abort();
  uint64_t records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    FillOneLap(*writer);
    const uint64_t before = stats.delivered;
    state.ResumeTiming();
    if (!(*reader)->Poll(options, visitor, stats).ok()) abort();
    benchmark::DoNotOptimize(visitor.leaf_sum_);
    if (stats.delivered - before != kRings * kSlotsPerRing) abort();
    records += stats.delivered - before;
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_ReadAllocSamples)->Unit(benchmark::kMillisecond);

void BM_ReadCopyBaseline(benchmark::State& state) {
  std::vector<uint8_t> slots(uint64_t{kRings} * kSlotsPerRing * kSlotSize, 1);
  std::vector<uint8_t> buffer(kSlotSize);
  uint64_t records = 0;
  const size_t record_bytes = 16 + sizeof(AllocSample) + kFrames * 8;
  for (auto _ : state) {
    for (size_t offset = 0; offset < slots.size(); offset += kSlotSize) {
      memcpy(buffer.data(), slots.data() + offset, record_bytes);
      benchmark::DoNotOptimize(buffer.data());
    }
    records += kRings * kSlotsPerRing;
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_ReadCopyBaseline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ringfile
}  // namespace ringprof

BENCHMARK_MAIN();
