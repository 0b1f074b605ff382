// The bytes the collector produces for a fixed input, against golden files:
// two processes' ring records (allocations with tags and span ids, CPU-timer
// samples, lock and blocking waits, losses, frees, an in-use heap; one
// process without a CPU timer, whose CPU comes from picked ticks) through
// ProcessProfiler, then the local sink's merged profiles of every kind. Every
// window's serialized pprof and series labels, and every merged profile, must
// equal testdata/golden/ byte for byte: a change of the data path that changes
// what is shipped or written shows here, with the file that differs.
//
// To regenerate after a deliberate change (and review the diff of
// labels.txt and the sizes):
//   bazel test //collector:pprof_golden_test \
//     --test_env=RINGPROF_GOLDEN_UPDATE=$PWD/collector/testdata/golden
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/base/file.h"
#include "collector/pprof/pprof_io.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/pprof/profile_kinds.h"
#include "collector/profile/process_profiler.h"
#include "collector/sink/local_sink.h"
#include "gtest/gtest.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace collector {
namespace {

namespace rt = ringfile::testing;
using ringfile::RecordType;

constexpr uint64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kEpochUnixNs = 1'700'000'000 * kSec;

constexpr uint64_t kModuleStart = 0x400000;
constexpr uint64_t kMain = 0x401010;
constexpr uint64_t kHot = 0x402020;
constexpr uint64_t kCold = 0x403030;
constexpr uint64_t kLock = 0x404040;
constexpr uint64_t kRead = 0x405050;

class FakeSymbolizer : public Symbolizer {
 public:
  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t address,
                                         AddressKind kind) override {
    if (module.path != "/bin/app") return {};
    if (kind == AddressKind::kReturnAddress) --address;
    switch (address + 1) {
      case kMain:
        return {{"main", "main.cc", 5}};
      case kHot:
        return {{"std::vector<int, std::allocator<int> >::push_back(int&&)",
                 "vector.h", 7},
                {"Hot()", "hot.cc", 12}};
      case kCold:
        return {{"Cold()", "cold.cc", 3}};
      case kLock:
        return {{"pthread_mutex_lock", "", 0}};
      default:
        return {};
    }
  }
  uint64_t misses() const override { return 0; }
  SymbolizerStats stats() const override { return {}; }
};

// Forwards to the local sink and keeps a copy of every window.
class RecordingSink : public ProfileSink {
 public:
  explicit RecordingSink(ProfileSink* next) : next_(next) {}
  void Submit(WindowProfile profile) override {
    windows.push_back(profile);
    next_->Submit(std::move(profile));
  }
  absl::Status Flush(int64_t deadline) override {
    return next_->Flush(deadline);
  }
  std::vector<WindowProfile> windows;

 private:
  ProfileSink* next_;
};

class Ring {
 public:
  explicit Ring(const std::string& name) : path_(rt::TempRingPath(name)) {
    ringfile::WriterOptions options = rt::TestWriterOptions(path_);
    options.slots_per_ring = 4096;
    EXPECT_EQ(writer_.Create(options), 0);
    ringfile::ModuleMap module = {};
    module.start = kModuleStart;
    module.size = 0x10000;
    const uint8_t build_id[] = {0xab, 0xcd, 0x01};
    rt::AppendModuleMap(writer_, module, "/bin/app", build_id);
  }

  void Alloc(uint32_t tid, uint64_t t, std::vector<uint64_t> frames,
             uint64_t weight, uint64_t size, uint64_t address = 0,
             uint32_t tag_set = 0, uint64_t span_id = 0) {
    ringfile::AllocSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.weight_bytes = weight;
    s.requested_size = size;
    s.address = address;
    s.tag_set = tag_set;
    s.span_id = span_id;
    ASSERT_TRUE(rt::AppendAllocSample(writer_, s, frames, tid));
  }
  void Free(uint64_t t, uint64_t address) {
    ringfile::FreeSampled f = {};
    f.monotonic_ns = t;
    f.address = address;
    ASSERT_TRUE(rt::AppendFixed(writer_, RecordType::kFreeSampled, f, 1));
  }
  void Cpu(uint32_t tid, uint64_t t, std::vector<uint64_t> frames,
           uint32_t tag_set = 0, uint64_t span_id = 0, uint16_t flags = 0) {
    ringfile::CpuSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.flags = flags;
    s.cpu_period_ns = 10 * kMs;
    s.tag_set = tag_set;
    s.span_id = span_id;
    ASSERT_TRUE(rt::AppendCpuSample(writer_, s, frames, tid));
  }
  void Wait(uint32_t tid, uint64_t t, ringfile::WaitKind kind, uint64_t wait_ns,
            uint64_t sample_ns, std::vector<uint64_t> frames,
            uint32_t tag_set = 0, uint64_t span_id = 0) {
    ringfile::WaitSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.frame_count = static_cast<uint16_t>(frames.size());
    s.wait_ns = wait_ns;
    s.sample_ns = sample_ns;
    s.kind = static_cast<uint16_t>(kind);
    s.tag_set = tag_set;
    s.span_id = span_id;
    ASSERT_TRUE(
        writer_.TryAppend(RecordType::kWaitSample, &s, sizeof(s), frames.data(),
                          static_cast<uint32_t>(8 * frames.size()), tid));
  }
  void Tags(uint32_t id,
            std::vector<std::pair<std::string, std::string>> tags) {
    ringfile::TagSet head = {};
    head.id = id;
    head.count = static_cast<uint16_t>(tags.size());
    std::string tail;
    for (const auto& [key, value] : tags) {
      ringfile::TagSizes sizes = {static_cast<uint16_t>(key.size()),
                                  static_cast<uint16_t>(value.size())};
      tail.append(reinterpret_cast<const char*>(&sizes), sizeof(sizes));
    }
    for (const auto& [key, value] : tags) tail += key + value;
    ASSERT_TRUE(writer_.TryAppend(RecordType::kTagSet, &head, sizeof(head),
                                  tail.data(),
                                  static_cast<uint32_t>(tail.size()), 0));
  }
  void Label(const std::string& key, const std::string& value) {
    ringfile::Label head = {};
    ASSERT_TRUE(rt::AppendLabel(writer_, head, key, value));
  }
  void Lost(uint64_t t, uint64_t samples, uint64_t bytes) {
    ringfile::LostSamples lost = {};
    lost.monotonic_ns = t;
    lost.samples = samples;
    lost.weight_bytes = bytes;
    ASSERT_TRUE(rt::AppendFixed(writer_, RecordType::kLostSamples, lost));
  }

  // Runs a profiler over the ring, Advance at every record, Finish at the
  // end.
  void Profile(uint32_t pid, ProfileSink* sink, Symbolizer* symbolizer) {
    writer_.Close();
    auto records = rt::ReadAllRecords(path_);
    ASSERT_TRUE(records.ok()) << records.status();
    ringfile::FileInfo info;
    info.pid = pid;
    info.service_name = "golden";
    info.created_monotonic_ns = 0;
    info.created_realtime_ns = kEpochUnixNs;
    info.process_start_ticks = 77;
    ProcessProfilerOptions options;
    options.now_unix_ns = [] { return kEpochUnixNs + 60 * kSec; };
    options.extra_labels = {{"region", "eu"}};
    ProcessProfiler profiler(info, options, symbolizer, sink);
    for (const auto& r : *records) profiler.OnRecord(r.view());
    profiler.Finish();
  }

 private:
  std::string path_;
  ringfile::RingWriter writer_;
};

// Process 4242: the CPU timer, every sample kind, two windows.
void WriteTimerProcess(Ring& ring) {
  ring.Label("env", "prod");
  ring.Tags(1, {{"endpoint", "/a"}});
  ring.Tags(2, {{"endpoint", "/b"}, {"tenant", "t1"}});
  ring.Alloc(1, 100 * kMs, {kHot, kMain}, 1000, 100, 0x1000, 1, 0x1111);
  ring.Alloc(2, 150 * kMs, {kCold, kMain}, 512, 0, 0x2000, 2);
  ring.Alloc(2, 180 * kMs, {kCold, kMain}, 4096, 4096, 0x3000);
  ring.Free(190 * kMs, 0x2000);
  for (int i = 0; i < 30; ++i) {
    const uint64_t t = (200 + 10 * i) * kMs;
    ring.Cpu(1, t, {kHot, kMain}, i % 3 == 0 ? 1 : 0, i % 3 == 0 ? 0x2222 : 0);
    if (i % 2 == 0) ring.Cpu(2, t + kMs, {kCold, kMain}, 2);
  }
  ring.Cpu(3, 600 * kMs, {}, 0, 0, ringfile::kSampleThreadNotSampled);
  ring.Wait(3, 700 * kMs, ringfile::WaitKind::kLock, 3 * kMs, 10 * kMs,
            {kLock, kHot, kMain}, 1, 0x3333);
  ring.Wait(3, 710 * kMs, ringfile::WaitKind::kLock, 25 * kMs, 10 * kMs,
            {kLock, kCold, kMain});
  ring.Wait(4, 720 * kMs, ringfile::WaitKind::kBlock, 40 * kMs, 10 * kMs,
            {kRead, kMain}, 2);
  ring.Lost(800 * kMs, 3, 3000);
  // The second window.
  ring.Alloc(1, 10'100 * kMs, {kHot, kMain}, 2048, 64, 0x4000);
  ring.Cpu(1, 10'200 * kMs, {kHot, kMain});
  ring.Wait(4, 10'300 * kMs, ringfile::WaitKind::kBlock, 2 * kMs, 10 * kMs,
            {kRead, kMain});
}

// Process 4343: no CPU timer; its CPU profile is picked ticks.
void WriteTickProcess(Ring& ring) {
  for (int i = 0; i < 20; ++i) {
    ring.Alloc(7, (100 + 10 * i) * kMs, {i % 4 == 0 ? kCold : kHot, kMain}, 256,
               32);
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PprofGoldenTest, WindowAndMergedProfilesAreByteForByteAsBefore) {
  const std::string out = absl::StrCat(std::getenv("TEST_TMPDIR"), "/out");
  auto local = LocalSink::Create(out);
  ASSERT_TRUE(local.ok()) << local.status();
  RecordingSink sink(local->get());
  FakeSymbolizer symbolizer;
  Ring timer("timer"), ticks("ticks");
  WriteTimerProcess(timer);
  WriteTickProcess(ticks);
  timer.Profile(4242, &sink, &symbolizer);
  ticks.Profile(4343, &sink, &symbolizer);
  ASSERT_TRUE((*local)->Finalize().ok());

  // name -> bytes of every output, and one line per window.
  std::map<std::string, std::string> files;
  std::string labels;
  std::map<std::string, int> seen;
  for (const WindowProfile& w : sink.windows) {
    const perftools::profiles::Profile& parsed =
        *w.profile;  // as sinks write it
    EXPECT_TRUE(ValidatePprof(parsed).ok()) << ValidatePprof(parsed);
    const std::string key = absl::StrCat(w.pid, ".", KindName(w.kind));
    const std::string file = absl::StrCat(key, ".", seen[key]++, ".pb");
    files[file] = parsed.SerializeAsString();
    absl::StrAppend(&labels, file, " [", w.from_unix_ns, ", ", w.until_unix_ns,
                    ") pid=", w.pid, " service=", w.service_name,
                    " session=", w.session_id);
    // The series labels: the service's, then the collector's.
    absl::StrAppend(&labels, " service_name=", w.service_name);
    for (const auto& [k, v] : w.labels)
      absl::StrAppend(&labels, " ", k, "=", v);
    for (const auto& [k, v] : w.workload_labels) {
      absl::StrAppend(&labels, " workload:", k, "=", v);
    }
    absl::StrAppend(&labels, "\n");
  }
  files["labels.txt"] = labels;
  for (const ProfileKindInfo& kind : ProfileKinds()) {
    const char* name = kind.name;
    auto merged = ReadProfileFile(absl::StrCat(out, "/", name, ".pb.gz"));
    ASSERT_TRUE(merged.ok()) << name << ": " << merged.status();
    files[absl::StrCat("merged.", name, ".pb")] = merged->SerializeAsString();
  }

  const char* update = std::getenv("RINGPROF_GOLDEN_UPDATE");
  if (update != nullptr && *update != '\0') {
    for (const auto& [name, bytes] : files) {
      ASSERT_TRUE(
          WriteFileAtomically(absl::StrCat(update, "/", name), bytes).ok());
    }
    GTEST_SKIP() << "golden files written to " << update;
  }
  const std::string golden = "collector/testdata/golden";
  for (const auto& [name, bytes] : files) {
    const std::string expected = ReadAll(absl::StrCat(golden, "/", name));
    EXPECT_FALSE(expected.empty()) << name << ": no golden file";
    EXPECT_TRUE(bytes == expected)
        << name << " differs from " << golden << "/" << name << " ("
        << bytes.size() << " bytes, golden " << expected.size() << ")";
  }
  EXPECT_EQ(labels, ReadAll(absl::StrCat(golden, "/labels.txt")));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
