#include "collector/profile/stack_table.h"

#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

ModuleInfo Module(const std::string& path, uint64_t start, uint64_t size) {
  ModuleInfo m;
  m.path = path;
  m.start = start;
  m.size = size;
  return m;
}

TEST(StackTableTest, InternsByFramesLeafKindTruncationAndLabels) {
  ProcessMemory memory(1 << 20, nullptr);
  StackTable table(7, &memory);
  const std::vector<uint64_t> frames = {0x1010, 0x1020};
  const uint32_t a = table.Intern(frames, false, false, 0);
  EXPECT_EQ(table.Intern(frames, false, false, 0), a);
  EXPECT_NE(table.Intern(frames, /*exact_leaf=*/true, false, 0), a);
  EXPECT_NE(table.Intern(frames, false, /*truncated=*/true, 0), a);
  EXPECT_NE(table.Intern(frames, false, false, /*labels=*/3), a);
  EXPECT_EQ(table.size(), 4u);
  EXPECT_TRUE(table.IsReal(a));
  EXPECT_FALSE(table.IsReal(StackTable::kBudgetStack));
  ASSERT_EQ(table.stack(a).locations.size(), 2u);
  EXPECT_EQ(table.location(table.stack(a).locations[0]).address, 0x1010u);
  // The same address as an exact PC is another location.
  const uint32_t exact = table.Intern(frames, true, false, 0);
  EXPECT_NE(table.stack(exact).locations[0], table.stack(a).locations[0]);
  EXPECT_EQ(table.stack(exact).locations[1], table.stack(a).locations[1]);
  EXPECT_GT(memory.bytes(), 0u);
}

TEST(StackTableTest, ModulesResolveLateAndEmitterFramesAreTrimmed) {
  ProcessMemory memory(1 << 20, nullptr);
  StackTable table(7, &memory);
  ASSERT_TRUE(table.MapModule(Module("/opt/libringprof.so", 0x9000, 0x1000)));
  const std::vector<uint64_t> frames = {0x9010, 0x9020, 0x5010};
  const uint32_t stack = table.Intern(frames, false, false, 0);
  // 0x5010's module is not known yet.
  EXPECT_EQ(table.ModuleOf(table.stack(stack).locations[2]), nullptr);
  ASSERT_TRUE(table.MapModule(Module("/bin/app", 0x5000, 0x1000)));
  const ModuleInfo* app = table.ModuleOf(table.stack(stack).locations[2]);
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->path, "/bin/app");
  EXPECT_EQ(app->pid, 7u);
  const absl::Span<const uint32_t> program = table.ProgramFrames(stack);
  ASSERT_EQ(program.size(), 1u);
  EXPECT_EQ(table.location(program[0]).address, 0x5010u);
  EXPECT_EQ(table.FindModuleByPath("/bin/app"), app);
  EXPECT_EQ(table.ActiveModules().size(), 2u);
  table.UnmapModule(0x9000);
  ASSERT_EQ(table.ActiveModules().size(), 1u);
  EXPECT_EQ(table.ActiveModules()[0].path, "/bin/app");
}

TEST(StackTableTest, PastTheBudgetNewStacksFoldAndModulesAreDropped) {
  ProcessMemory memory(450, nullptr);
  StackTable table(1, &memory);
  const std::vector<uint64_t> first = {0x1000, 0x2000};
  const uint32_t kept = table.Intern(first, false, false, 0);
  EXPECT_TRUE(table.IsReal(kept));
  uint32_t last = kept;
  for (uint64_t i = 1; i < 10 && last != StackTable::kBudgetStack; ++i) {
    const std::vector<uint64_t> frames = {0x1000 + i * 16, 0x3000 + i * 16};
    last = table.Intern(frames, false, false, 0);
  }
  EXPECT_EQ(last, StackTable::kBudgetStack);
  EXPECT_EQ(memory.folded(), 1u);
  // A stack already known is still found.
  EXPECT_EQ(table.Intern(first, false, false, 0), kept);
  EXPECT_FALSE(table.MapModule(Module("/bin/app", 0x1000, 0x1000)));
  EXPECT_EQ(memory.folded(), 2u);
  EXPECT_LE(memory.bytes(), 450u);
}

TEST(StackTableTest, SymbolsAreKeptAndChargedEvenPastTheBudget) {
  ProcessMemory memory(1 << 20, nullptr);
  StackTable table(1, &memory);
  ASSERT_TRUE(table.MapModule(Module("/bin/app", 0x1000, 0x1000)));
  const std::vector<uint64_t> frames = {0x1010};
  const uint32_t location =
      table.stack(table.Intern(frames, false, false, 0)).locations[0];
  const uint64_t before = memory.bytes();
  table.SetSymbols(location, {{"main", "main.cc", 3}});
  EXPECT_TRUE(table.location(location).symbolized);
  ASSERT_EQ(table.location(location).frames.size(), 1u);
  EXPECT_EQ(table.location(location).frames[0].function, "main");
  EXPECT_GT(memory.bytes(), before);
}

TEST(ProcessMemoryTest, SharedBudgetBindsAndIsReturned) {
  MemoryBudget shared;
  shared.limit_bytes = 100;
  {
    ProcessMemory a(1000, &shared);
    ProcessMemory b(1000, &shared);
    EXPECT_TRUE(a.Charge(60));
    EXPECT_FALSE(b.Charge(60));
    EXPECT_FALSE(b.ChargeOrFold(60));
    EXPECT_EQ(b.folded(), 1u);
    EXPECT_TRUE(b.Charge(40));
    EXPECT_EQ(shared.used_bytes, 100u);
  }
  EXPECT_EQ(shared.used_bytes, 0u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
