#include "collector/profile/window_encoder.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/pprof/pprof_validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// Names 0x1100 (a return address: looked up at 0x10ff) in /bin/app.
class FakeSymbolizer : public Symbolizer {
 public:
  std::vector<SymbolizedFrame> Symbolize(const ModuleInfo& module,
                                         uint64_t address,
                                         AddressKind kind) override {
    ++calls;
    if (module.path == "/bin/app" && address == 0x1100 &&
        kind == AddressKind::kReturnAddress) {
      return {{"inlined", "a.h", 2}, {"main", "main.cc", 5}};
    }
    if (module.path == "/bin/app" && address == 0x1300) {
      return {{"[app] 0x1300", "", 0, /*unnamed=*/true}};
    }
    return {};
  }
  std::string UnnamedReason(const ModuleInfo& module) const override {
    return "stripped, says the fake";
  }
  uint64_t misses() const override { return 0; }
  SymbolizerStats stats() const override { return {}; }
  int calls = 0;
};

class WindowEncoderTest : public ::testing::Test {
 protected:
  WindowEncoderTest()
      : memory_(1 << 20, nullptr),
        stacks_(1, &memory_),
        labeler_(1, 100, {}, &memory_) {
    ModuleInfo app;
    app.path = "/bin/app";
    app.start = 0x1000;
    app.size = 0x1000;
    stacks_.MapModule(app);
    options_.executable = "/bin/app";
  }

  // "leaf;...;root" -> value of sample type `index`, as folded stacks.
  static std::map<std::string, int64_t> Folded(
      const perftools::profiles::Profile& p, int index) {
    std::map<uint64_t, std::string> names;
    std::map<uint64_t, const perftools::profiles::Location*> locations;
    for (const auto& f : p.function()) names[f.id()] = p.string_table(f.name());
    for (const auto& l : p.location()) locations[l.id()] = &l;
    std::map<std::string, int64_t> out;
    for (const auto& s : p.sample()) {
      std::vector<std::string> frames;
      for (uint64_t id : s.location_id()) {
        for (const auto& line : locations[id]->line()) {
          frames.push_back(names[line.function_id()]);
        }
      }
      out[absl::StrJoin(frames, ";")] += s.value(index);
    }
    return out;
  }

  ProcessMemory memory_;
  StackTable stacks_;
  TagLabeler labeler_;
  FakeSymbolizer symbolizer_;
  WindowEncoderOptions options_;
};

TEST_F(WindowEncoderTest, CpuFromTheTimerSymbolizedOnceWithLabels) {
  using Tags = std::vector<std::pair<absl::string_view, absl::string_view>>;
  ASSERT_TRUE(labeler_.Define(1, Tags{{"route", "/x"}}));
  const std::vector<uint64_t> frames = {0x1100, 0x1200};
  const uint32_t stack =
      stacks_.Intern(frames, false, false, labeler_.LabelsFor(1, 0));
  WindowAggregates window;
  window.timer_cpu_ns[stack] = 30;
  window.timer_cpu_ns[StackTable::kNotSampledStack] = 5;
  window.tick_cpu_ns[stack] = 1000;  // not this window's CPU source
  WindowEncoder encoder(options_, &stacks_, &labeler_, &symbolizer_);
  std::vector<WindowProfile> out =
      encoder.Encode(window, {}, CpuSource{true, 10}, {}, 100, 200);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, ProfileKind::kCpu);
  EXPECT_THAT(out[0].labels,
              UnorderedElementsAre(Pair("ringprof_cpu_source", "timer")));
  const perftools::profiles::Profile& p = *out[0].profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  EXPECT_EQ(p.time_nanos(), 100);
  EXPECT_EQ(p.duration_nanos(), 100);
  EXPECT_EQ(p.period(), 10);
  EXPECT_EQ(p.string_table(p.mapping(0).filename()), "/bin/app");
  EXPECT_THAT(Folded(p, 0),
              UnorderedElementsAre(Pair("inlined;main;app+0x11ff", 30),
                                   Pair("[thread not sampled]", 5)));
  int labelled = 0;
  for (const auto& s : p.sample()) labelled += s.label_size();
  EXPECT_EQ(labelled, 1);
  // Symbolized once per location, kept for the next window.
  EXPECT_EQ(symbolizer_.calls, 2);
  encoder.Encode(window, {}, CpuSource{true, 10}, {}, 200, 300);
  EXPECT_EQ(symbolizer_.calls, 2);
}

TEST_F(WindowEncoderTest, MemoryHasAllocationsAndTheInUseSnapshot) {
  const std::vector<uint64_t> frames = {0x1100};
  const uint32_t stack = stacks_.Intern(frames, false, false, 0);
  WindowAggregates window;
  window.alloc[stack] = {2, 4096};
  window.alloc[StackTable::kLostStack] = {1, 100};
  InUseByStack inuse;
  inuse[stack] = {1, 2048};
  WindowEncoder encoder(options_, &stacks_, &labeler_, nullptr);
  std::vector<WindowProfile> out =
      encoder.Encode(window, inuse, CpuSource{}, {}, 0, 10);
  ASSERT_EQ(out.size(), 1u);  // no CPU: no ticks in the window
  EXPECT_EQ(out[0].kind, ProfileKind::kMemory);
  EXPECT_TRUE(out[0].labels.empty());
  const perftools::profiles::Profile& p = *out[0].profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  // Without a symbolizer a frame is module+offset (of the call).
  EXPECT_THAT(Folded(p, 1), UnorderedElementsAre(Pair("app+0x10ff", 4096),
                                                 Pair("[lost]", 100)));
  EXPECT_THAT(Folded(p, 3), UnorderedElementsAre(Pair("app+0x10ff", 2048),
                                                 Pair("[lost]", 0)));
}

TEST_F(WindowEncoderTest, CountsTheValueOfLeavesWithoutAFunctionName) {
  // Leaves: named (0x1100), a function start only (0x1300), nothing found
  // (0x1400), in no module (0x9000); [lost] has no leaf to name.
  const uint32_t named = stacks_.Intern({0x1100, 0x1300}, false, false, 0);
  const uint32_t start_only = stacks_.Intern({0x1300}, false, false, 0);
  const uint32_t unresolved = stacks_.Intern({0x1400, 0x1100}, false, false, 0);
  const uint32_t no_module = stacks_.Intern({0x9000}, false, false, 0);
  WindowAggregates window;
  window.timer_cpu_ns[named] = 600;
  window.timer_cpu_ns[start_only] = 200;
  window.timer_cpu_ns[unresolved] = 100;
  window.timer_cpu_ns[no_module] = 50;
  window.timer_cpu_ns[StackTable::kLostStack] = 1000;
  window.alloc[start_only] = {1, 4096};
  InUseByStack inuse;  // not the memory profile's default sample type
  inuse[start_only] = {1, 1 << 20};
  WindowEncoder encoder(options_, &stacks_, &labeler_, &symbolizer_);
  encoder.Encode(window, inuse, CpuSource{true, 10}, {}, 0, 10);
  encoder.Encode(window, inuse, CpuSource{true, 10}, {}, 10, 20);

  const LeafNamesByKind& leaves = encoder.leaf_names();
  const LeafNames& cpu = leaves.at(ProfileKind::kCpu);
  EXPECT_EQ(cpu.total, 2 * 950);
  EXPECT_EQ(cpu.unnamed, 2 * 350);
  ASSERT_EQ(cpu.modules.size(), 2u);
  EXPECT_EQ(cpu.modules.at("/bin/app").value, 2 * 300);
  EXPECT_EQ(cpu.modules.at("/bin/app").reason, "stripped, says the fake");
  EXPECT_EQ(cpu.modules.at("").value, 2 * 50);
  EXPECT_EQ(cpu.modules.at("").reason,
            "in no module the process reported mapping");
  const LeafNames& memory = leaves.at(ProfileKind::kMemory);
  EXPECT_EQ(memory.total, 2 * 4096);
  EXPECT_EQ(memory.unnamed, 2 * 4096);
}

TEST_F(WindowEncoderTest, WithoutASymbolizerNoLeafHasAName) {
  const uint32_t stack = stacks_.Intern({0x1100, 0x1200}, false, false, 0);
  WindowAggregates window;
  window.timer_cpu_ns[stack] = 30;
  WindowEncoder encoder(options_, &stacks_, &labeler_, nullptr);
  encoder.Encode(window, {}, CpuSource{true, 10}, {}, 0, 10);
  const LeafNames& cpu = encoder.leaf_names().at(ProfileKind::kCpu);
  EXPECT_EQ(cpu.total, 30);
  EXPECT_EQ(cpu.unnamed, 30);
  EXPECT_EQ(cpu.modules.at("/bin/app").reason,
            "not symbolized by the collector (--symbolize=false)");
}

// The labels of each sample of `p`, as "name=value,..." -> summed value.
std::map<std::string, int64_t> ByLabels(const perftools::profiles::Profile& p) {
  std::map<std::string, int64_t> out;
  for (const auto& s : p.sample()) {
    std::vector<std::string> labels;
    for (const auto& l : s.label()) {
      labels.push_back(
          absl::StrCat(p.string_table(l.key()), "=", p.string_table(l.str())));
    }
    out[absl::StrJoin(labels, ",")] += s.value(0);
  }
  return out;
}

// Wall time per stack and thread: CPU and waits together, with the
// stack's tags, thread_id and (when recorded) thread_name; a workload's own
// thread_id tag gives way to the collector's in this profile.
TEST_F(WindowEncoderTest, WallPerThreadWithTagsAndNames) {
  using Tags = std::vector<std::pair<absl::string_view, absl::string_view>>;
  ASSERT_TRUE(labeler_.Define(1, Tags{{"route", "/x"}, {"thread_id", "me"}}));
  const std::vector<uint64_t> frames = {0x1100};
  const uint32_t tagged =
      stacks_.Intern(frames, false, false, labeler_.LabelsFor(1, 0xab));
  const uint32_t plain = stacks_.Intern(frames, true, false, 0);
  WindowAggregates window;
  window.timer_cpu_ns[plain] = 10;
  window.wall[{plain, 7}] = 10;     // CPU of thread 7
  window.wall[{tagged, 7}] = 25.4;  // a wait of thread 7, in a span
  window.wall[{plain, 8}] = 2.6;    // thread 8, unnamed
  ThreadNames names = {{7, "worker-7"}};
  WindowEncoder encoder(options_, &stacks_, &labeler_, &symbolizer_);
  std::vector<WindowProfile> out =
      encoder.Encode(window, {}, CpuSource{true, 10}, names, 0, 10);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].kind, ProfileKind::kWall);
  EXPECT_TRUE(out[1].labels.empty());
  const perftools::profiles::Profile& p = *out[1].profile;
  EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  ASSERT_EQ(p.sample_type_size(), 1);
  EXPECT_EQ(p.string_table(p.sample_type(0).type()), "wall");
  EXPECT_EQ(p.string_table(p.sample_type(0).unit()), "nanoseconds");
  EXPECT_EQ(p.string_table(p.period_type().type()), "wall");
  EXPECT_THAT(
      ByLabels(p),
      UnorderedElementsAre(Pair("thread_id=7,thread_name=worker-7", 10),
                           Pair("route=/x,span_id=00000000000000ab,thread_id=7,"
                                "thread_name=worker-7",
                                25),
                           Pair("thread_id=8", 3)));
}

// Past max_threads, the threads with the least wall time in the window
// share thread_id "other".
TEST_F(WindowEncoderTest, WallFoldsTheLeastBusyThreads) {
  const std::vector<uint64_t> frames = {0x1100};
  const uint32_t stack = stacks_.Intern(frames, true, false, 0);
  WindowAggregates window;
  window.wall[{stack, 1}] = 5;
  window.wall[{stack, 2}] = 50;
  window.wall[{stack, 3}] = 7;
  options_.max_threads = 1;
  WindowEncoder encoder(options_, &stacks_, &labeler_, nullptr);
  std::vector<WindowProfile> out =
      encoder.Encode(window, {}, CpuSource{true, 10}, {}, 0, 10);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(ByLabels(*out[0].profile),
              UnorderedElementsAre(Pair("thread_id=2", 50),
                                   Pair("thread_id=other", 12)));
}

// Without the CPU timer the CPU time is not per thread: no wall profile.
TEST_F(WindowEncoderTest, NoWallWithoutTheCpuTimer) {
  const std::vector<uint64_t> frames = {0x1100};
  const uint32_t stack = stacks_.Intern(frames, false, false, 0);
  WindowAggregates window;
  window.wall[{stack, 1}] = 5;
  WindowEncoder encoder(options_, &stacks_, &labeler_, nullptr);
  EXPECT_TRUE(encoder.Encode(window, {}, CpuSource{}, {}, 0, 10).empty());
}

TEST_F(WindowEncoderTest, EmptyWindowHasNoProfiles) {
  WindowEncoder encoder(options_, &stacks_, &labeler_, &symbolizer_);
  EXPECT_TRUE(encoder.Encode({}, {}, CpuSource{}, {}, 0, 10).empty());
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
