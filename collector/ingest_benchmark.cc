// Collector ingest throughput: reading a ring file, decoding, tick picking,
// allocation aggregation and building the window profiles, with symbols
// cached (a symbolizer that answers from a table, as the real one does
// after the first lookup of an address). The baseline is reading the same
// records out of the ring into a batch, the drainer's share of the work.
//
// Data: 16 threads, 128 distinct 24-frame stacks, one sample per thread
// every 2 ms (several samples per tick per process), 10 s windows.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "collector/ingest/drained_batch.h"
#include "collector/profile/process_profiler.h"
#include "ringfile/clock.h"
#include "ringfile/reader.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace collector {
namespace {

constexpr int kThreads = 16;
constexpr int kStacks = 128;
constexpr int kDepth = 24;
constexpr uint64_t kModuleStart = 0x400000;

class TableSymbolizer : public Symbolizer {
 public:
  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo&, uint64_t address,
                                         AddressKind) override {
    return {{absl::StrCat("function_", address % 4096), "file.cc", 1}};
  }
  uint64_t misses() const override { return 0; }
  SymbolizerStats stats() const override { return {}; }
};

class NullSink : public ProfileSink {
 public:
  void Submit(WindowProfile profile) override {
    bytes += profile.profile->ByteSizeLong();
  }
  absl::Status Flush(int64_t) override { return absl::OkStatus(); }
  uint64_t bytes = 0;
};

// A ring file with `samples` allocation samples; returns its path.
const std::string& RingFile(int samples) {
  static std::string* path = [samples] {
    const char* tmp = std::getenv("TMPDIR");
    auto* p =
        new std::string(absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                     "/ingest_benchmark.", getpid(), ".ring"));
    ringfile::RingWriter writer;
    ringfile::WriterOptions options;
    options.path = p->c_str();
    options.ring_count = 4;
    options.slots_per_ring = 1u << 16;
    // A 24-frame sample with its header: 16 + 56 + 192 bytes.
    options.slot_size = 320;
    options.pid = 1;
    if (writer.Create(options) != 0) std::abort();
    ringfile::ModuleMap module = {};
    module.start = kModuleStart;
    module.size = 1 << 20;
    const char kPath[] = "/bin/app";
    writer.TryAppend(ringfile::RecordType::kModuleMap, &module, sizeof(module),
                     kPath, sizeof(kPath) - 1, 0);
    uint64_t frames[kDepth];
    // The data covers 25 s ending now: within what the collector accepts
    // (--max-past, --max-future).
    const uint64_t start =
        ringfile::ClockNs(CLOCK_MONOTONIC) - 30'000'000'000ull;
    for (int i = 0; i < samples; ++i) {
      const uint32_t tid = 1 + i % kThreads;
      const int stack = (i * 7919) % kStacks;
      for (int d = 0; d < kDepth; ++d) {
        frames[d] = kModuleStart + 0x1000 + (stack * kDepth + d) * 16 + 5;
      }
      ringfile::AllocSample s = {};
      s.monotonic_ns = start + (i / kThreads) * 2'000'000ull + tid;
      s.tid = tid;
      s.frame_count = kDepth;
      s.weight_bytes = 512 * 1024;
      s.requested_size = 64;
      if (!writer.TryAppend(ringfile::RecordType::kAllocSample, &s, sizeof(s),
                            frames, sizeof(frames), tid)) {
        std::abort();
      }
    }
    writer.Close();
    std::atexit([] { ::unlink(RingFile(0).c_str()); });
    return p;
  }();
  return *path;
}

constexpr int kSamples = 200'000;

// Reads every record into batches, as the drain thread does.
std::vector<DrainedBatch> ReadBatches(ringfile::RingReader& reader) {
  struct Appender : ringfile::RecordVisitor {
    DrainedBatch* batch;
    void OnRecord(const ringfile::RecordView& r) override { batch->Append(r); }
  } appender;
  std::vector<DrainedBatch> batches;
  ringfile::PollOptions poll;
  poll.max_records = 4096;
  poll.writer_dead = true;
  while (true) {
    batches.emplace_back();
    appender.batch = &batches.back();
    ringfile::PollStats stats;
    if (!reader.Poll(poll, appender, stats).ok()) std::abort();
    if (stats.delivered == 0) break;
  }
  return batches;
}

void BM_ReadOnly(benchmark::State& state) {
  const std::string& path = RingFile(kSamples);
  for (auto _ : state) {
    auto reader = ringfile::RingReader::Open(path);
    if (!reader.ok()) std::abort();
    std::vector<DrainedBatch> batches = ReadBatches(**reader);
    benchmark::DoNotOptimize(batches.data());
  }
  state.SetItemsProcessed(state.iterations() * kSamples);
}
BENCHMARK(BM_ReadOnly)->Unit(benchmark::kMillisecond);

void BM_Ingest(benchmark::State& state) {
  const std::string& path = RingFile(kSamples);
  TableSymbolizer symbolizer;
  NullSink sink;
  for (auto _ : state) {
    auto reader = ringfile::RingReader::Open(path);
    if (!reader.ok()) std::abort();
    std::vector<DrainedBatch> batches = ReadBatches(**reader);
    ProcessProfiler profiler((*reader)->info(), {}, &symbolizer, &sink);
    for (const DrainedBatch& batch : batches) {
      uint64_t newest = 0;
      for (const DrainedBatch::Record& record : batch.records) {
        const ringfile::RecordView view = batch.view(record);
        profiler.OnRecord(view);
        if (record.type == ringfile::RecordType::kAllocSample) {
          uint64_t t;
          std::memcpy(&t, view.payload.data(), sizeof(t));
          newest = std::max(newest, t);
        }
      }
      if (newest > 100'000'000) profiler.Advance(newest - 100'000'000);
    }
    profiler.Finish();
  }
  state.SetItemsProcessed(state.iterations() * kSamples);
  state.counters["pprof_bytes_per_iteration"] =
      static_cast<double>(sink.bytes) / state.iterations();
}
BENCHMARK(BM_Ingest)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace collector
}  // namespace ringprof

BENCHMARK_MAIN();
