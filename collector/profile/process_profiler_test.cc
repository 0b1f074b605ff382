// Golden tests: synthetic ring files written with the real RingWriter, read
// back with the real RingReader, fed to ProcessProfiler; the windows it
// emits are checked value by value.
#include "collector/profile/process_profiler.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/pprof/pprof_validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;
using ringfile::AllocSample;
using ringfile::CpuSample;
using ringfile::RecordType;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
namespace rt = ringfile::testing;

constexpr uint64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
// Wall clock at monotonic 0: a 10 s window boundary.
constexpr int64_t kEpochUnixNs = 1'700'000'000 * kSec;

// Addresses of a fake executable module.
constexpr uint64_t kModuleStart = 0x400000;
constexpr uint64_t kMain = 0x401010;
constexpr uint64_t kHot = 0x402020;
constexpr uint64_t kCold = 0x403030;
constexpr uint64_t kUnknownInModule = 0x404040;
// In a second module whose map record comes late.
constexpr uint64_t kLateModuleStart = 0x800000;
constexpr uint64_t kLate = 0x800100;

class CapturingSink : public ProfileSink {
 public:
  void Submit(WindowProfile profile) override {
    profiles.push_back(std::move(profile));
  }
  absl::Status Flush(int64_t) override { return absl::OkStatus(); }
  std::vector<WindowProfile> profiles;
};

// Resolves the three known functions of /bin/app (return addresses point
// one past); nothing in other objects.
class FakeSymbolizer : public Symbolizer {
 public:
  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t raw_address,
                                         AddressKind kind) override {
    if (module.path != "/bin/app") return {};
    const uint64_t address =
        kind == AddressKind::kReturnAddress ? raw_address - 1 : raw_address;
    ++calls;
    if (address == kMain - 1) return {{"main", "main.cc", 5}};
    if (address == kHot - 1) {
      return {{"inlined_leaf", "hot.h", 7}, {"Hot()", "hot.cc", 12}};
    }
    if (address == kCold - 1 || address == kCold) {
      return {{"Cold()", "cold.cc", 3}};
    }
    if (address == kLate - 1) return {{"Late()", "late.cc", 9}};
    ++misses_;
    return {};
  }
  uint64_t misses() const override { return misses_; }
  SymbolizerStats stats() const override { return {}; }
  int calls = 0;

 private:
  uint64_t misses_ = 0;
};

// Leaf-to-root function names of a sample's first Line entries, joined.
std::string StackOf(const Profile& p, const perftools::profiles::Sample& s) {
  std::string out;
  for (uint64_t id : s.location_id()) {
    const auto& loc = p.location(id - 1);
    EXPECT_EQ(loc.id(), id);
    for (int i = 0; i < loc.line_size(); ++i) {  // innermost first
      const auto& fn = p.function(loc.line(i).function_id() - 1);
      out =
          absl::StrCat(p.string_table(fn.name()), out.empty() ? "" : ";", out);
    }
  }
  return out;
}

// stack -> value[index] for one profile.
std::map<std::string, int64_t> Values(const WindowProfile& w, int index) {
  const Profile& p = *w.profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  std::map<std::string, int64_t> out;
  for (const auto& s : p.sample()) out[StackOf(p, s)] += s.value(index);
  return out;
}

// "k=v,k2=v2" of a sample's string labels (in order) -> value[index].
std::map<std::string, int64_t> ByLabels(const WindowProfile& w, int index) {
  const Profile& p = *w.profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  std::map<std::string, int64_t> out;
  for (const auto& s : p.sample()) {
    std::string key;
    for (const auto& label : s.label()) {
      absl::StrAppend(&key, key.empty() ? "" : ",", p.string_table(label.key()),
                      "=", p.string_table(label.str()));
    }
    out[key] += s.value(index);
  }
  return out;
}

std::string Label(const WindowProfile& w, const std::string& key) {
  for (const auto& [k, v] : w.labels) {
    if (k == key) return v;
  }
  return "<unset>";
}

class ProcessProfilerTest : public ::testing::Test {
 protected:
  ProcessProfilerTest() {
    path_ = rt::TempRingPath("profiler");
    ringfile::WriterOptions options = rt::TestWriterOptions(path_);
    options.slots_per_ring = 4096;
    EXPECT_EQ(writer_.Create(options), 0);
    ringfile::ModuleMap module = {};
    module.start = kModuleStart;
    module.size = 0x10000;
    module.load_bias = 0;
    const uint8_t build_id[] = {0xab, 0xcd, 0x01};
    rt::AppendModuleMap(writer_, module, "/bin/app", build_id);
  }

  void Alloc(uint32_t tid, uint64_t t, std::vector<uint64_t> frames,
             uint64_t weight, uint64_t size, uint16_t flags = 0,
             uint32_t tag_set = 0, uint64_t span_id = 0) {
    AllocSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.flags = flags;
    s.weight_bytes = weight;
    s.requested_size = size;
    s.tag_set = tag_set;
    s.span_id = span_id;
    ASSERT_TRUE(rt::AppendAllocSample(writer_, s, frames, tid));
  }
  void AllocAt(uint64_t t, uint64_t address, std::vector<uint64_t> frames,
               uint64_t weight) {
    AllocSample s = {};
    s.monotonic_ns = t;
    s.tid = 1;
    s.weight_bytes = weight;
    s.requested_size = weight;
    s.address = address;
    ASSERT_TRUE(rt::AppendAllocSample(writer_, s, frames, 1));
  }
  void Free(uint64_t t, uint64_t address) {
    ringfile::FreeSampled f = {};
    f.monotonic_ns = t;
    f.address = address;
    ASSERT_TRUE(rt::AppendFixed(writer_, RecordType::kFreeSampled, f, 2));
  }
  void Live(uint64_t t, uint64_t sweep, uint64_t alloc_ns, uint64_t address,
            std::vector<uint64_t> frames, uint64_t weight) {
    ringfile::LiveSample s = {};
    s.monotonic_ns = t;
    s.alloc_ns = alloc_ns;
    s.sweep_id = sweep;
    s.frame_count = static_cast<uint16_t>(frames.size());
    s.requested_size = weight;
    s.weight_bytes = weight;
    s.address = address;
    ASSERT_TRUE(writer_.TryAppend(RecordType::kLiveSample, &s, sizeof(s),
                                  frames.data(), 8 * frames.size(), 3));
  }
  void SweepEnd(uint64_t t, uint64_t sweep, uint64_t begin, uint64_t entries) {
    ringfile::LiveSweepEnd e = {};
    e.monotonic_ns = t;
    e.sweep_id = sweep;
    e.begin_ns = begin;
    e.entries = entries;
    ASSERT_TRUE(rt::AppendFixed(writer_, RecordType::kLiveSweepEnd, e, 0));
  }
  void Cpu(uint32_t tid, uint64_t t, std::vector<uint64_t> frames,
           uint32_t tag_set = 0, uint64_t span_id = 0, uint16_t flags = 0,
           uint64_t period_ns = 10 * kMs) {
    CpuSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.flags = flags;
    s.cpu_period_ns = period_ns;
    s.tag_set = tag_set;
    s.span_id = span_id;
    ASSERT_TRUE(rt::AppendCpuSample(writer_, s, frames, tid));
  }
  void Wait(uint32_t tid, uint64_t t, ringfile::WaitKind kind, uint64_t wait_ns,
            uint64_t sample_ns, std::vector<uint64_t> frames,
            uint32_t tag_set = 0) {
    ringfile::WaitSample s = {};
    s.monotonic_ns = t;
    s.tid = tid;
    s.frame_count = static_cast<uint16_t>(frames.size());
    s.wait_ns = wait_ns;
    s.sample_ns = sample_ns;
    s.kind = static_cast<uint16_t>(kind);
    s.tag_set = tag_set;
    ASSERT_TRUE(
        writer_.TryAppend(RecordType::kWaitSample, &s, sizeof(s), frames.data(),
                          static_cast<uint32_t>(8 * frames.size()), tid));
  }
  // A TagSet record defining `id`.
  void Tags(uint32_t tid, uint32_t id,
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
                                  static_cast<uint32_t>(tail.size()), tid));
  }

  // Reads the ring and runs a profiler over it; Finish() at the end.
  // With `advance_at_type`: Advance(watermark_ns) right after the first
  // record of that type.
  void Run(ProcessProfilerOptions options = {}, uint32_t advance_at_type = 0,
           uint64_t watermark_ns = 0) {
    // The samples' clock starts at kEpochUnixNs.
    if (options.now_unix_ns == nullptr) {
      options.now_unix_ns = [] { return kEpochUnixNs + 60 * kSec; };
    }
    writer_.Close();
    auto records = rt::ReadAllRecords(path_);
    ASSERT_TRUE(records.ok()) << records.status();
    ringfile::FileInfo info;
    info.pid = 4242;
    info.service_name = "test-service";
    // The same clock mapping, whenever the ring was created.
    info.created_monotonic_ns = static_cast<uint64_t>(ring_created_ns_);
    info.created_realtime_ns = kEpochUnixNs + ring_created_ns_;
    ProcessProfiler profiler(info, options, &symbolizer_, &sink_);
    bool advanced = false;
    for (const auto& r : *records) {
      profiler.OnRecord(r.view());
      if (!advanced &&
          static_cast<uint32_t>(r.view().type) == advance_at_type) {
        advanced = true;
        profiler.Advance(watermark_ns);
      }
    }
    profiler.Finish();
    stats_ = profiler.stats();
  }

  std::vector<const WindowProfile*> Named(const std::string& name) const {
    std::vector<const WindowProfile*> out;
    for (const auto& w : sink_.profiles) {
      if (KindName(w.kind) == name) out.push_back(&w);
    }
    return out;
  }

  std::string path_;
  int64_t ring_created_ns_ = 0;  // on the samples' clock
  ringfile::RingWriter writer_;
  FakeSymbolizer symbolizer_;
  CapturingSink sink_;
  ProcessStats stats_;
};

TEST_F(ProcessProfilerTest, AllocationWeightsBecomeAllocSpaceAndObjects) {
  Alloc(1, 100 * kMs, {kHot, kMain}, /*weight=*/1000, /*size=*/100);
  Alloc(1, 200 * kMs, {kHot, kMain}, 1000, 300);  // 3.33 -> 3 objects
  Alloc(2, 300 * kMs, {kCold, kMain}, 512, 0);    // size unknown: 1 object
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 2000),
                                   Pair("main;Cold()", 512)));
  EXPECT_THAT(Values(*memory[0], 0),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 13),
                                   Pair("main;Cold()", 1)));
  EXPECT_EQ(memory[0]->service_name, "test-service");
  // No pid label (one series per process exhausts Pyroscope's series
  // limit); the process is told apart by a stable session id instead.
  EXPECT_EQ(Label(*memory[0], "pid"), "<unset>");
  EXPECT_EQ(memory[0]->pid, 4242u);
  EXPECT_THAT(memory[0]->session_id, MatchesRegex("[0-9a-f]{16}"));
  auto cpu = Named("process_cpu");
  ASSERT_FALSE(cpu.empty());
  EXPECT_EQ(cpu[0]->session_id, memory[0]->session_id);
}

// Memory profile columns: 0 alloc_objects, 1 alloc_space, 2 inuse_objects,
// 3 inuse_space.
TEST_F(ProcessProfilerTest, InUseIsASnapshotPerWindow) {
  AllocAt(1 * kSec, 0x1000, {kHot, kMain}, 4096);
  AllocAt(2 * kSec, 0x2000, {kCold, kMain}, 8192);
  Free(12 * kSec, 0x1000);
  Free(13 * kSec, 0x9990);  // not a known sample: ignored
  AllocAt(25 * kSec, 0x3000, {kHot, kMain}, 100);
  Run();
  auto memory = Named("memory");
  // The idle window [10 s, 20 s) still has its snapshot.
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_THAT(Values(*memory[0], 3),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 4096),
                                   Pair("main;Cold()", 8192)));
  EXPECT_THAT(Values(*memory[0], 2),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 1),
                                   Pair("main;Cold()", 1)));
  EXPECT_EQ(memory[1]->from_unix_ns, kEpochUnixNs + 10 * kSec);
  EXPECT_THAT(Values(*memory[1], 3), ElementsAre(Pair("main;Cold()", 8192)));
  EXPECT_THAT(Values(*memory[1], 1), ElementsAre(Pair("main;Cold()", 0)));
  EXPECT_THAT(Values(*memory[2], 3),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 100),
                                   Pair("main;Cold()", 8192)));
  EXPECT_EQ(Values(*memory[2], 1)["main;Hot();inlined_leaf"], 100);
}

TEST_F(ProcessProfilerTest, SweepRebuildsInUseAfterLostRecords) {
  // The collector saw A and B allocated but missed A's free (overwritten),
  // and never saw C's allocation (started late, say).
  AllocAt(1 * kSec, 0x1000, {kHot, kMain}, 4096);
  AllocAt(2 * kSec, 0x2000, {kCold, kMain}, 8192);
  Live(15 * kSec, 1, 2 * kSec, 0x2000, {kCold, kMain}, 8192);
  Live(15 * kSec, 1, 3 * kSec, 0x3000, {kHot, kMain}, 512);
  SweepEnd(15 * kSec + 1, 1, 15 * kSec, 2);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_THAT(Values(*memory[0], 3),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 4096),
                                   Pair("main;Cold()", 8192)));
  EXPECT_THAT(Values(*memory[1], 3),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 512),
                                   Pair("main;Cold()", 8192)));
}

TEST_F(ProcessProfilerTest, InUseStackResolvesWhenItsModuleComesLate) {
  // The allocation's module map was lost; windows up to 20 s are emitted
  // without it; the emitter's re-emission then brings it.
  AllocAt(1 * kSec, 0x1000, {kLate, kMain}, 4096);
  ringfile::ModuleMap module = {};
  module.monotonic_ns = 25 * kSec;
  module.start = kLateModuleStart;
  module.size = 0x1000;
  const uint8_t build_id[] = {0x01};
  // In the allocations' ring, so that it is read after the first one.
  rt::AppendModuleMap(writer_, module, "/bin/app", build_id, /*shard=*/1);
  AllocAt(26 * kSec, 0x2000, {kHot, kMain}, 100);
  Run({}, static_cast<uint32_t>(RecordType::kAllocSample), 21 * kSec);
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_THAT(Values(*memory[0], 3), ElementsAre(Pair("main;0x8000ff", 4096)));
  EXPECT_EQ(Values(*memory[2], 3)["main;Late()"], 4096);
}

TEST_F(ProcessProfilerTest, UntrackedSamplesAreAllocatedNotInUse) {
  AllocSample s = {};
  s.monotonic_ns = kSec;
  s.weight_bytes = 1000;
  s.requested_size = 1000;
  s.address = 0x1000;
  s.flags = ringfile::kSampleUntracked;
  ASSERT_TRUE(rt::AppendAllocSample(writer_, s, {kHot, kMain}, 1));
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(Values(*memory[0], 1)["main;Hot();inlined_leaf"], 1000);
  EXPECT_EQ(Values(*memory[0], 3)["main;Hot();inlined_leaf"], 0);
}

TEST_F(ProcessProfilerTest, TickPicksBecomeCpuTime) {
  // Thread 1: hot samples every 5 ms for 100 ms; thread 2: one cold
  // sample exactly on tick 50 ms.
  for (uint64_t t = 1000; t <= 1100; t += 5) {
    Alloc(1, t * kMs + 1, {kHot, kMain}, 100, 10);
  }
  Alloc(2, 1050 * kMs, {kCold, kMain}, 100, 10);
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(Label(*cpu[0], "ringprof_cpu_source"), "alloc_ticks");
  // Thread 1 wins ticks 1000..1100 (11) and 1110 (its last sample is
  // 10 ms - 1 ns away) but not 990 (10 ms + 1 ns); thread 2 wins ticks
  // 1040, 1050 and 1060 of its own.
  EXPECT_THAT(
      Values(*cpu[0], 0),
      UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 12 * 10 * kMs),
                           Pair("main;Cold()", 3 * 10 * kMs)));
  EXPECT_EQ(stats_.ticks_picked, 15u);
}

TEST_F(ProcessProfilerTest, TimerSamplesReplaceTickEstimate) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10);
  Cpu(1, 105 * kMs, {kCold, kMain});
  Cpu(1, 115 * kMs, {kCold, kMain});
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(Label(*cpu[0], "ringprof_cpu_source"), "timer");
  // Leaf of a CPU sample is an exact PC: symbolized at kCold itself.
  EXPECT_THAT(Values(*cpu[0], 0), ElementsAre(Pair("main;Cold()", 20 * kMs)));
  // The allocation still counts for memory.
  EXPECT_EQ(Named("memory").size(), 1u);
}

TEST_F(ProcessProfilerTest, CpuOfUnsampledThreadsAndSamplesAtAllocations) {
  Cpu(1, 105 * kMs, {kCold, kMain});
  // A thread the emitter could not sample: its CPU time, no frames.
  Cpu(2, 110 * kMs, {}, 0, 0, ringfile::kSampleThreadNotSampled, 70 * kMs);
  // Taken at an allocation sample (rings of earlier emitters): return
  // addresses only.
  Cpu(1, 115 * kMs, {kCold + 1, kMain}, 0, 0, ringfile::kSampleAtAllocation);
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_THAT(Values(*cpu[0], 0),
              UnorderedElementsAre(Pair("main;Cold()", 20 * kMs),
                                   Pair("[thread not sampled]", 70 * kMs)));
}

TEST_F(ProcessProfilerTest, WaitSamplesBecomeMutexAndBlockProfiles) {
  using ringfile::WaitKind;
  // Two short lock waits kept at a 1 ms rate: 1 ms and 4 waits each.
  Wait(1, 100 * kMs, WaitKind::kLock, 250'000, kMs, {kHot, kMain});
  Wait(2, 120 * kMs, WaitKind::kLock, 250'000, kMs, {kHot, kMain});
  // A long blocking wait: exactly itself; another stack and window.
  Wait(1, 130 * kMs, WaitKind::kBlock, 7 * kMs, kMs, {kCold + 1, kMain});
  Wait(1, 10 * kSec + kMs, WaitKind::kBlock, 3 * kMs, kMs, {kCold + 1, kMain});
  Run();
  auto mutex = Named("mutex");
  ASSERT_EQ(mutex.size(), 1u);
  EXPECT_THAT(Values(*mutex[0], 0),
              ElementsAre(Pair("main;Hot();inlined_leaf", 8)));
  EXPECT_THAT(Values(*mutex[0], 1),
              ElementsAre(Pair("main;Hot();inlined_leaf", 2 * kMs)));
  auto block = Named("block");
  ASSERT_EQ(block.size(), 2u);
  EXPECT_THAT(Values(*block[0], 0), ElementsAre(Pair("main;Cold()", 1)));
  EXPECT_THAT(Values(*block[0], 1), ElementsAre(Pair("main;Cold()", 7 * kMs)));
  EXPECT_THAT(Values(*block[1], 1), ElementsAre(Pair("main;Cold()", 3 * kMs)));
  const Profile& p = *mutex[0]->profile;
  EXPECT_EQ(p.string_table(p.sample_type(0).type()), "contentions");
  EXPECT_EQ(p.string_table(p.sample_type(1).type()), "delay");
  EXPECT_EQ(p.string_table(p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(p.string_table(p.period_type().type()), "contentions");
  EXPECT_EQ(p.string_table(p.default_sample_type()), "delay");
  EXPECT_EQ(stats_.wait_samples, 4u);
  // No CPU or memory profile came from them.
  EXPECT_TRUE(Named("process_cpu").empty());
  EXPECT_TRUE(Named("memory").empty());
}

// Wall time per thread: the CPU-timer samples' CPU time plus the waits'
// estimates, with thread_id and, from its ThreadName record, thread_name;
// the wait of a thread named after its first record keeps the name.
TEST_F(ProcessProfilerTest, WallIsCpuAndWaitsPerThread) {
  using ringfile::WaitKind;
  ringfile::ThreadName name = {};
  name.tid = 1;
  ASSERT_TRUE(rt::AppendThreadName(writer_, name, "worker", 1));
  Cpu(1, 105 * kMs, {kCold, kMain});
  Cpu(1, 115 * kMs, {kCold, kMain});
  // 0.25 ms kept at a 1 ms rate: 1 ms; 7 ms: itself.
  Wait(1, 120 * kMs, WaitKind::kLock, 250'000, kMs, {kHot, kMain});
  Wait(2, 130 * kMs, WaitKind::kBlock, 7 * kMs, kMs, {kCold + 1, kMain});
  Cpu(2, 140 * kMs, {kCold, kMain}, 0, 0, 0, 3 * kMs);
  Run();
  auto wall = Named("wall");
  ASSERT_EQ(wall.size(), 1u);
  EXPECT_THAT(
      ByLabels(*wall[0], 0),
      UnorderedElementsAre(Pair("thread_id=1,thread_name=worker", 21 * kMs),
                           Pair("thread_id=2", 10 * kMs)));
  EXPECT_THAT(Values(*wall[0], 0),
              UnorderedElementsAre(Pair("main;Cold()", 30 * kMs),
                                   Pair("main;Hot();inlined_leaf", kMs)));
}

// A CPU-timer sample taken inside a wait (the kernel's work in the call;
// in gVisor, a woken thread's wait for a CPU) is time the wait counts too:
// the CPU profile keeps it, the wall profile does not count it twice.
TEST_F(ProcessProfilerTest, WallLeavesOutCpuSamplesInsideWaits) {
  using ringfile::WaitKind;
  Cpu(1, 100 * kMs, {kCold, kMain});
  Cpu(1, 125 * kMs, {kCold, kMain});  // within the wait [120, 130] ms
  Wait(1, 130 * kMs, WaitKind::kBlock, 10 * kMs, kMs, {kCold + 1, kMain});
  Cpu(1, 135 * kMs, {kCold, kMain});
  Cpu(2, 125 * kMs, {kCold, kMain});  // another thread's
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_THAT(Values(*cpu[0], 0), ElementsAre(Pair("main;Cold()", 40 * kMs)));
  auto wall = Named("wall");
  ASSERT_EQ(wall.size(), 1u);
  EXPECT_THAT(ByLabels(*wall[0], 0),
              UnorderedElementsAre(Pair("thread_id=1", 30 * kMs),
                                   Pair("thread_id=2", 10 * kMs)));
}

// A thread's name lasts until its exit's window is emitted: a later thread
// with the same id is not named after it.
TEST_F(ProcessProfilerTest, WallForgetsTheNamesOfExitedThreads) {
  ringfile::ThreadName name = {};
  name.tid = 5;
  ASSERT_TRUE(rt::AppendThreadName(writer_, name, "short-lived", 1));
  Cpu(5, 105 * kMs, {kCold, kMain});
  ringfile::ThreadExit exit = {};
  exit.monotonic_ns = 110 * kMs;
  exit.tid = 5;
  ASSERT_TRUE(rt::AppendFixed(writer_, RecordType::kThreadExit, exit, 1));
  Cpu(5, 10 * kSec + kMs, {kCold, kMain});  // the id reused, unnamed
  Run();
  auto wall = Named("wall");
  ASSERT_EQ(wall.size(), 2u);
  EXPECT_THAT(
      ByLabels(*wall[0], 0),
      ElementsAre(Pair("thread_id=5,thread_name=short-lived", 10 * kMs)));
  EXPECT_THAT(ByLabels(*wall[1], 0),
              ElementsAre(Pair("thread_id=5", 10 * kMs)));
}

// Without the CPU timer (CPU from picked ticks) there is no wall profile.
TEST_F(ProcessProfilerTest, NoWallWithoutTheCpuTimer) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10);
  Wait(1, 120 * kMs, ringfile::WaitKind::kBlock, 7 * kMs, kMs, {kCold, kMain});
  Run();
  EXPECT_EQ(Named("block").size(), 1u);
  EXPECT_TRUE(Named("wall").empty());
}

TEST_F(ProcessProfilerTest, TimingOnlySamplesCountForTicksNotMemory) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 0, 0, ringfile::kSampleTimingOnly);
  Alloc(1, 200 * kMs, {kCold, kMain}, 64, 64);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1), ElementsAre(Pair("main;Cold()", 64)));
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(Values(*cpu[0], 0)["main;Hot();inlined_leaf"], 30 * kMs);
  EXPECT_EQ(stats_.timing_only_samples, 1u);
  EXPECT_EQ(stats_.alloc_samples, 1u);
}

TEST_F(ProcessProfilerTest, WindowsAreWallClockAlignedAndLastIsPartial) {
  Alloc(1, 9'000 * kMs, {kHot, kMain}, 100, 10);
  Alloc(1, 10'500 * kMs, {kCold, kMain}, 200, 10);
  Alloc(1, 23'000 * kMs, {kCold, kMain}, 300, 10);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_EQ(memory[0]->from_unix_ns, kEpochUnixNs);
  EXPECT_EQ(memory[0]->until_unix_ns, kEpochUnixNs + 10 * kSec);
  EXPECT_EQ(memory[1]->from_unix_ns, kEpochUnixNs + 10 * kSec);
  EXPECT_EQ(memory[1]->until_unix_ns, kEpochUnixNs + 20 * kSec);
  EXPECT_EQ(memory[2]->from_unix_ns, kEpochUnixNs + 20 * kSec);
  // Final window: ends one tick after its last event (the pick at tick
  // 23.01 s), not at the boundary.
  EXPECT_EQ(memory[2]->until_unix_ns, kEpochUnixNs + 23'020 * kMs);
  EXPECT_EQ(Values(*memory[0], 1)["main;Hot();inlined_leaf"], 100);
  EXPECT_EQ(Values(*memory[1], 1)["main;Cold()"], 200);
  EXPECT_EQ(Values(*memory[2], 1)["main;Cold()"], 300);
  const Profile& p = *memory[1]->profile;
  EXPECT_EQ(p.time_nanos(), kEpochUnixNs + 10 * kSec);
  EXPECT_EQ(p.duration_nanos(), 10 * kSec);
}

TEST_F(ProcessProfilerTest, FirstWindowStartsWhenTheProcessWasProfiled) {
  // A 1.4 s process whose ring appeared 3.5 s into a window: its profile
  // covers its own time, not the window's start.
  ring_created_ns_ = 3'500 * kMs;
  Alloc(1, 3'600 * kMs, {kHot, kMain}, 100, 10);
  Alloc(1, 4'900 * kMs, {kCold, kMain}, 200, 10);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory[0]->from_unix_ns, kEpochUnixNs + 3'500 * kMs);
  // Ends one tick after its last event (the pick at tick 4.91 s).
  EXPECT_EQ(memory[0]->until_unix_ns, kEpochUnixNs + 4'920 * kMs);
  const Profile& p = *memory[0]->profile;
  EXPECT_EQ(p.duration_nanos(), 1'420 * kMs);
}

TEST_F(ProcessProfilerTest, TickOnWindowBoundaryBelongsToLaterWindow) {
  // A sample 1 ns before the 10 s boundary wins ticks 9990 and 10000 ms
  // (10010 is 10 ms + 1 ns away): one tick in each window.
  Alloc(1, 10'000 * kMs - 1, {kHot, kMain}, 100, 10);
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(Values(*cpu[0], 0)["main;Hot();inlined_leaf"], 10 * kMs);
  EXPECT_EQ(Values(*cpu[1], 0)["main;Hot();inlined_leaf"], 10 * kMs);
}

// A collector stops after delivering the first window (its checkpoint
// saved); its successor resumes the reader at the checkpoint's positions and
// re-reads everything from there: every sample counts exactly once.
TEST_F(ProcessProfilerTest, ResumedFromACheckpointEverySampleCountsOnce) {
  int64_t total = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    // Two threads (two rings), 1 s apart: windows 0..3.
    Alloc(1 + i % 2, i * kSec / 2 + kSec / 4, {kHot, kMain}, 100 + i, 10);
    total += 100 + i;
    if (i == 24) {
      // Stamped in window 0 but committed after samples of window 1 (a
      // thread preempted between its clock read and its append).
      Alloc(1, 9 * kSec, {kHot, kMain}, 7, 7);
      total += 7;
    }
  }
  writer_.Close();
  auto records = rt::ReadAllRecords(path_);
  ASSERT_TRUE(records.ok());
  ringfile::FileInfo info;
  info.pid = 1;
  info.ring_count = 2;
  info.created_realtime_ns = kEpochUnixNs;
  ProcessProfilerOptions options;
  options.now_unix_ns = [] { return kEpochUnixNs + 60 * kSec; };

  // The first collector reads the records up to 13 s, then the watermark
  // passes the end of window 0 (10 s): window 0 is delivered.
  Checkpoint checkpoint;
  int64_t first_total = 0;
  {
    CapturingSink sink;
    ProcessProfiler first(info, options, &symbolizer_, &sink);
    std::vector<uint64_t> positions(2, 0);
    for (const auto& r : *records) {
      auto sample = ringfile::DecodeAllocSample(r.view());
      if (sample.ok() && sample->head.monotonic_ns > 13 * kSec) continue;
      first.OnRecord(r.view());
      positions[r.ring] = std::max(positions[r.ring], r.index + 1);
    }
    first.SetReadPositions(positions);
    EXPECT_FALSE(first.TakeCheckpoint(false).has_value());  // nothing sent
    first.Advance(10 * kSec + 20 * kMs);
    ASSERT_FALSE(sink.profiles.empty());
    std::optional<Checkpoint> taken = first.TakeCheckpoint(false);
    ASSERT_TRUE(taken.has_value());
    checkpoint = *taken;
    EXPECT_EQ(checkpoint.emitted_until_unix_ns, kEpochUnixNs + 10 * kSec);
    EXPECT_EQ(checkpoint.consumed, positions);
    for (size_t ring = 0; ring < 2; ++ring) {
      EXPECT_LT(checkpoint.positions[ring], positions[ring]);
    }
    ASSERT_EQ(checkpoint.modules.size(), 1u);
    for (const auto& w : sink.profiles) {
      if (w.kind == ProfileKind::kMemory)
        first_total += Values(w, 1)["main;Hot();inlined_leaf"];
    }
    // Killed here: its open windows are never delivered.
  }
  // The successor: every record from the resume positions on.
  CapturingSink sink;
  ProcessProfiler second(info, options, &symbolizer_, &sink);
  second.Resume(checkpoint);
  for (const auto& r : *records) {
    if (r.index >= checkpoint.positions[r.ring] &&
        r.type != RecordType::kModuleMap) {
      second.OnRecord(r.view());
    }
  }
  second.Finish();
  int64_t second_total = 0;
  for (const auto& w : sink.profiles) {
    EXPECT_GE(w.from_unix_ns, kEpochUnixNs + 10 * kSec);
    // Symbolized through the module the checkpoint carried.
    if (w.kind == ProfileKind::kMemory)
      second_total += Values(w, 1)["main;Hot();inlined_leaf"];
  }
  EXPECT_GT(first_total, 0);
  EXPECT_EQ(second.stats().replay_skipped, 1u);  // the 9 s sample
  EXPECT_EQ(first_total + second_total, total);
}

TEST_F(ProcessProfilerTest, AdvanceEmitsOnlyWindowsBehindTheWatermark) {
  writer_.Close();
  auto records = rt::ReadAllRecords(path_);
  ASSERT_TRUE(records.ok());
  ringfile::FileInfo info;
  info.pid = 1;
  info.created_realtime_ns = kEpochUnixNs;
  ProcessProfilerOptions options;
  options.now_unix_ns = [] { return kEpochUnixNs + 60 * kSec; };
  ProcessProfiler profiler(info, options, &symbolizer_, &sink_);
  for (const auto& r : *records) profiler.OnRecord(r.view());
  // Build the samples as records directly through a second ring.
  std::string second = rt::TempRingPath("advance");
  ringfile::RingWriter w;
  ASSERT_EQ(w.Create(rt::TestWriterOptions(second)), 0);
  AllocSample s = {};
  s.tid = 1;
  s.weight_bytes = 10;
  s.requested_size = 10;
  const uint64_t frames[] = {kHot, kMain};
  s.monotonic_ns = 5 * kSec;
  rt::AppendAllocSample(w, s, frames);
  s.monotonic_ns = 15 * kSec;
  rt::AppendAllocSample(w, s, frames);
  w.Close();
  auto more = rt::ReadAllRecords(second);
  ASSERT_TRUE(more.ok());
  for (const auto& r : *more) profiler.OnRecord(r.view());

  profiler.Advance(10 * kSec);  // window 0 needs watermark >= 10 s + 10 ms
  EXPECT_TRUE(sink_.profiles.empty());
  profiler.Advance(10 * kSec + 10 * kMs);
  ASSERT_EQ(sink_.profiles.size(), 2u);  // cpu + memory of window 0
  for (const auto& w : sink_.profiles) {
    EXPECT_EQ(w.from_unix_ns, kEpochUnixNs);
  }
  profiler.Finish();
  EXPECT_EQ(sink_.profiles.size(), 4u);
}

TEST_F(ProcessProfilerTest, AVdsoLinkedAtAKernelAddressIsNamedByFileOffset) {
  // Some kernels link the vDSO at 0xffffffffff700000: pc - load_bias would
  // read 0xffffffffff700a10. The name uses the offset into the image.
  constexpr uint64_t kVdsoStart = 0x7fff'f000'0000;
  ringfile::ModuleMap vdso = {};
  vdso.start = kVdsoStart;
  vdso.size = 0x2000;
  vdso.load_bias = kVdsoStart - 0xffff'ffff'ff70'0000;
  rt::AppendModuleMap(writer_, vdso, "linux-vdso.so.1", {});
  Alloc(1, 100 * kMs, {kVdsoStart + 0xa11, kMain}, 100, 10);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1),
              ElementsAre(Pair("main;linux-vdso.so.1+0xa10", 100)));
}

TEST_F(ProcessProfilerTest, UnresolvedFramesNameModuleOffsetAndKeepBuildId) {
  Alloc(1, 100 * kMs, {kUnknownInModule, 0x7000'0000, kMain}, 100, 10);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1),
              ElementsAre(Pair("main;0x6fffffff;app+0x40403f", 100)));
  const Profile& p = *memory[0]->profile;
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_EQ(p.string_table(p.mapping(0).build_id()), "abcd01");
  EXPECT_EQ(p.string_table(p.mapping(0).filename()), "/bin/app");
}

TEST_F(ProcessProfilerTest, UnresolvedWithoutLinesLeavesFramesToTheServer) {
  // --symbolize=false (or a frame the symbolizer could not resolve): the
  // location keeps address and mapping only, so a symbolizer on the server
  // (Pyroscope's) sees it as unsymbolized; resolved frames keep their lines.
  Alloc(1, 100 * kMs, {kUnknownInModule, 0x7000'0000, kMain}, 100, 10);
  ProcessProfilerOptions options;
  options.unresolved_without_lines = true;
  Run(options);
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  const Profile& p = *memory[0]->profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  ASSERT_EQ(p.sample_size(), 1);
  ASSERT_EQ(p.sample(0).location_id_size(), 3);
  const auto& unknown = p.location(p.sample(0).location_id(0) - 1);
  EXPECT_EQ(unknown.address(), kUnknownInModule);
  EXPECT_EQ(unknown.line_size(), 0);
  ASSERT_NE(unknown.mapping_id(), 0u);
  const auto& mapping = p.mapping(unknown.mapping_id() - 1);
  EXPECT_EQ(p.string_table(mapping.build_id()), "abcd01");
  // Outside every module: no mapping for a server to use, so it is named.
  EXPECT_EQ(p.location(p.sample(0).location_id(1) - 1).line_size(), 1);
  EXPECT_EQ(p.location(p.sample(0).location_id(2) - 1).line_size(), 1);
}

TEST_F(ProcessProfilerTest, EachAddressIsSymbolizedOnce) {
  for (int i = 0; i < 100; ++i) {
    Alloc(1 + i % 4, (100 + 7 * i) * kMs, {kHot, kMain}, 100, 10);
  }
  Run();
  // kHot and kMain, once each, although they appear in two profile kinds.
  EXPECT_EQ(symbolizer_.calls, 2);
}

TEST_F(ProcessProfilerTest, LostAndTruncatedShowAsSyntheticFrames) {
  ringfile::LostSamples lost = {};
  lost.monotonic_ns = 50 * kMs;
  lost.samples = 3;
  lost.weight_bytes = 3000;
  rt::AppendFixed(writer_, RecordType::kLostSamples, lost);
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10, ringfile::kSampleTruncated);
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(
      Values(*memory[0], 1),
      UnorderedElementsAre(Pair("[lost]", 3000),
                           Pair("[truncated];main;Hot();inlined_leaf", 100)));
  EXPECT_EQ(stats_.emitter_lost, 3u);
}

TEST_F(ProcessProfilerTest, SamplesFarAheadOrBehindAreDroppedAndCounted) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10);
  // The collector's clock says epoch + 60 s: 10 min ahead is beyond
  // max_future, and so is anything max_past behind it.
  Alloc(1, 600 * kSec + 100 * kMs, {kCold, kMain}, 7, 7);
  Cpu(2, 3600 * kSec, {kCold, kMain});
  ProcessProfilerOptions options;
  options.max_past_ns = 30 * kSec;  // the 100 ms sample is 60 s behind
  options.max_future_ns = 60 * kSec;
  Run(options);
  EXPECT_EQ(stats_.out_of_range, 3u);
  EXPECT_TRUE(sink_.profiles.empty());
}

TEST_F(ProcessProfilerTest, DefaultRangeDropsOnlyTheFarFuture) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10);
  Alloc(1, 600 * kSec, {kCold, kMain}, 7, 7);
  Cpu(2, 3600 * kSec, {kCold, kMain});
  Run();
  EXPECT_EQ(stats_.out_of_range, 2u);
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 100)));
}

TEST_F(ProcessProfilerTest, StacksBeyondTheBudgetFoldIntoTruncated) {
  // 200 distinct stacks of 20 random frames, far more than 16 KiB holds.
  uint64_t total = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    std::vector<uint64_t> frames;
    for (uint64_t f = 0; f < 20; ++f) frames.push_back(0x10000000 + i * 64 + f);
    frames.push_back(kMain);
    Alloc(1, 100 * kMs + i * kMs, frames, 1000 + i, 10);
    total += 1000 + i;
  }
  ProcessProfilerOptions options;
  options.max_memory_bytes = 16 << 10;
  Run(options);
  EXPECT_GT(stats_.budget_folded, 100u);
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  const std::map<std::string, int64_t> values = Values(*memory[0], 1);
  ASSERT_TRUE(values.count("[truncated]"));
  int64_t sum = 0;
  for (const auto& [stack, bytes] : values) sum += bytes;
  EXPECT_EQ(sum, static_cast<int64_t>(total));  // nothing lost, only folded
  EXPECT_LT(values.size(), 40u);
}

// A window's aggregates are given back to the budget when it is emitted: a
// long-lived process whose every window fits keeps its stacks, however many
// windows it lives.
TEST_F(ProcessProfilerTest, EmittedWindowsGiveTheirAggregatesBack) {
  constexpr int kWindows = 300;  // ~100 bytes of aggregates each (CPU, wall)
  for (int i = 0; i < kWindows; ++i)
    Cpu(1, i * 10 * kSec + kMs, {kCold, kMain});
  writer_.Close();
  auto records = rt::ReadAllRecords(path_);
  ASSERT_TRUE(records.ok()) << records.status();
  ringfile::FileInfo info;
  info.pid = 4242;
  info.created_realtime_ns = kEpochUnixNs;
  ProcessProfilerOptions options;
  options.max_memory_bytes = 16 << 10;  // far less than kWindows * 100
  options.now_unix_ns = [] { return kEpochUnixNs + kWindows * 10 * kSec; };
  ProcessProfiler profiler(info, options, &symbolizer_, &sink_);
  uint64_t samples = 0;  // the i-th CPU sample is at i * 10 s + 1 ms
  for (const auto& r : *records) {
    profiler.OnRecord(r.view());
    if (r.view().type != RecordType::kCpuSample) continue;
    profiler.Advance(samples++ * 10 * kSec + 2 * kSec);
  }
  profiler.Finish();
  EXPECT_EQ(profiler.stats().budget_folded, 0u);
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), static_cast<size_t>(kWindows));
  EXPECT_THAT(Values(*cpu.back(), 0),
              ElementsAre(Pair("main;Cold()", 10 * kMs)));
}

TEST_F(ProcessProfilerTest, TheSharedBudgetBindsAcrossProcessesAndIsReturned) {
  MemoryBudget budget;
  budget.limit_bytes = 8 << 10;
  ringfile::FileInfo info;
  info.pid = 1;
  info.created_realtime_ns = kEpochUnixNs;
  ProcessProfilerOptions options;
  options.now_unix_ns = [] { return kEpochUnixNs + 60 * kSec; };
  CapturingSink sink;
  auto first =
      std::make_unique<ProcessProfiler>(info, options, nullptr, &sink, &budget);
  ProcessProfiler second(info, options, nullptr, &sink, &budget);
  auto feed = [](ProcessProfiler& p, uint64_t base) {
    for (uint64_t i = 0; i < 100; ++i) {
      std::vector<uint64_t> record(7 + 4, 0);  // AllocSample + 4 frames
      AllocSample head = {};
      head.monotonic_ns = 100 * kMs;
      head.frame_count = 4;
      head.weight_bytes = 1;
      memcpy(record.data(), &head, sizeof(head));
      for (int f = 0; f < 4; ++f) record[7 + f] = base + i * 16 + f;
      ringfile::RecordView view;
      view.type = RecordType::kAllocSample;
      view.payload = absl::MakeConstSpan(
          reinterpret_cast<const uint8_t*>(record.data()), record.size() * 8);
      p.OnRecord(view);
    }
  };
  feed(*first, 0x100000);
  EXPECT_GT(budget.used_bytes, 0u);
  EXPECT_LE(budget.used_bytes, budget.limit_bytes);
  EXPECT_GT(first->stats().budget_folded, 0u);
  feed(second, 0x900000);
  EXPECT_EQ(second.stats().budget_folded, 100u);  // nothing left for it
  const uint64_t second_bytes = second.memory_bytes();
  first.reset();
  EXPECT_EQ(budget.used_bytes, second_bytes);
}

TEST_F(ProcessProfilerTest, IdleFrameRecordsTicksWithoutSamples) {
  Alloc(1, 100 * kMs, {kHot, kMain}, 100, 10);
  Alloc(1, 200 * kMs, {kHot, kMain}, 100, 10);
  ProcessProfilerOptions options;
  options.max_distance_ns = 5 * kMs;
  options.idle_frame = true;
  Run(options);
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_THAT(Values(*cpu[0], 0),
              UnorderedElementsAre(Pair("main;Hot();inlined_leaf", 20 * kMs),
                                   Pair("[no sample]", 90 * kMs)));
}

TEST_F(ProcessProfilerTest, EmitterFramesAreTrimmedAndLateModuleMapsResolve) {
  // The emitter's module is announced only after a sample that uses it
  // (module maps and samples of different threads travel in different
  // rings).
  constexpr uint64_t kEmitterStart = 0x7f0000000000;
  Alloc(1, 100 * kMs,
        {kEmitterStart + 0x100, kEmitterStart + 0x200, kHot, kMain}, 100, 10);
  ringfile::ModuleMap emitter = {};
  emitter.start = kEmitterStart;
  emitter.size = 0x10000;
  rt::AppendModuleMap(writer_, emitter, "/opt/ringprof/libringprof.so", {});
  Run();
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(Values(*memory[0], 1),
              ElementsAre(Pair("main;Hot();inlined_leaf", 100)));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof

namespace ringprof {
namespace collector {
namespace {

TEST_F(ProcessProfilerTest, TagsAndSpansBecomeSampleLabels) {
  Tags(1, 1, {{"endpoint", "/checkout"}});
  Tags(1, 2, {{"endpoint", "/checkout"}, {"tenant", "42"}});
  Cpu(1, 10 * kMs, {kHot, kMain}, 1);
  Cpu(1, 20 * kMs, {kHot, kMain}, 2);
  Cpu(1, 30 * kMs, {kHot, kMain}, 2, 0x00f1e2d3c4b5a697);
  Cpu(1, 40 * kMs, {kHot, kMain});
  Alloc(1, 50 * kMs, {kCold, kMain}, 1000, 100, 0, 1);
  Run();
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_THAT(ByLabels(*cpu[0], 0),
              UnorderedElementsAre(
                  Pair("endpoint=/checkout", 10 * kMs),
                  Pair("endpoint=/checkout,tenant=42", 10 * kMs),
                  Pair("endpoint=/checkout,span_id=00f1e2d3c4b5a697,tenant=42",
                       10 * kMs),
                  Pair("", 10 * kMs)));
  auto memory = Named("memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(ByLabels(*memory[0], 1),
              UnorderedElementsAre(Pair("endpoint=/checkout", 1000)));
}

TEST_F(ProcessProfilerTest, TickPickedCpuCarriesThePickedSamplesTags) {
  Tags(1, 1, {{"kind", "a"}});
  Tags(1, 2, {{"kind", "b"}});
  // One sample per tick: 3 ticks of kind a, 1 of kind b.
  for (int i = 0; i < 4; ++i) {
    Alloc(1, (10 + 10 * i) * kMs, {kHot, kMain}, 0, 16,
          ringfile::kSampleTimingOnly, i == 2 ? 2 : 1);
  }
  ProcessProfilerOptions options;
  options.max_distance_ns = 4 * kMs;  // only the tick at each sample
  Run(options);
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(Label(*cpu[0], "ringprof_cpu_source"), "alloc_ticks");
  EXPECT_THAT(
      ByLabels(*cpu[0], 0),
      UnorderedElementsAre(Pair("kind=a", 30 * kMs), Pair("kind=b", 10 * kMs)));
}

TEST_F(ProcessProfilerTest, TagNamesOwnedByTheCollectorAreDropped) {
  Tags(1, 1,
       {{"service_name", "evil"},
        {"__name__", "x"},
        {"span_id", "forged"},
        {"env", "prod"},  // an operator's --tags name
        {"9lives", "x"},
        {"my.key", "v\xff"},
        {"my_key", "clash"},
        {"ok", "yes"}});
  Cpu(1, 10 * kMs, {kHot, kMain}, 1, 0xab);
  ProcessProfilerOptions options;
  options.extra_labels = {{"env", "staging"}};
  Run(options);
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0]->service_name, "test-service");
  EXPECT_EQ(stats_.tag_labels_dropped, 6u);
  EXPECT_THAT(
      ByLabels(*cpu[0], 0),
      UnorderedElementsAre(Pair(
          "my.key=v\xef\xbf\xbd,ok=yes,span_id=00000000000000ab", 10 * kMs)));
}

TEST_F(ProcessProfilerTest, ValuesPastTheBudgetFoldIntoOther) {
  for (uint32_t i = 1; i <= 5; ++i) {
    Tags(1, i, {{"user", absl::StrCat("u", i)}});
    Cpu(1, i * 10 * kMs, {kHot, kMain}, i);
  }
  Cpu(1, 60 * kMs, {kHot, kMain}, 77);  // never defined
  ProcessProfilerOptions options;
  options.max_tag_values = 3;
  Run(options);
  auto cpu = Named("process_cpu");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_THAT(
      ByLabels(*cpu[0], 0),
      UnorderedElementsAre(Pair("user=u1", 10 * kMs), Pair("user=u2", 10 * kMs),
                           Pair("user=u3", 10 * kMs),
                           Pair("user=other", 20 * kMs), Pair("", 10 * kMs)));
  EXPECT_EQ(stats_.tag_values_folded, 2u);
  EXPECT_EQ(stats_.unknown_tag_sets, 1u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
