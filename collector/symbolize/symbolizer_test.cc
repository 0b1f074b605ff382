#include "collector/symbolize/symbolizer.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <link.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

namespace fs = std::filesystem;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kDataDir[] = "collector/symbolize/testdata/symbolizer/";
constexpr char kSourceFile[] = "symbolizer_test_program.cc";
constexpr char kLlvmSymbolizer[] = "/usr/lib/llvm-14/bin/llvm-symbolizer";

std::string DataPath(const std::string& name) {
  return fs::absolute(fs::path(kDataDir) / name).string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// What the test program printed about itself in one run: runtime
// addresses, its load bias and the source lines of the inlined calls.
struct ProgramFacts {
  uint64_t load_bias = 0;
  uint64_t outer_return_address = 0;
  uint64_t leaf = 0;
  uint64_t c_function = 0;
  int64_t inner_call_line = 0;
  int64_t middle_call_line = 0;
  int64_t outer_call_line = 0;
};

ProgramFacts RunProgram() {
  std::map<std::string, std::string> values;
  FILE* out = popen(DataPath("symbolizer_test_program").c_str(), "r");
  EXPECT_NE(out, nullptr);
  if (out == nullptr) return {};
  char key[64];
  char value[64];
  while (fscanf(out, "%63s %63s", key, value) == 2) values[key] = value;
  EXPECT_EQ(pclose(out), 0);
  auto number = [&](const char* name) -> uint64_t {
    EXPECT_EQ(values.count(name), 1u) << name;
    return std::strtoull(values[name].c_str(), nullptr, 0);
  };
  ProgramFacts facts;
  facts.load_bias = number("load_bias");
  facts.outer_return_address = number("outer_return_address");
  facts.leaf = number("leaf");
  facts.c_function = number("c_function");
  facts.inner_call_line = static_cast<int64_t>(number("inner_call_line"));
  facts.middle_call_line = static_cast<int64_t>(number("middle_call_line"));
  facts.outer_call_line = static_cast<int64_t>(number("outer_call_line"));
  return facts;
}

class SymbolizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Debian's profile.d may set it; only the debuginfod tests want one.
    unsetenv("DEBUGINFOD_URLS");
    facts_ = RunProgram();
    build_id_ = ReadFile(DataPath("symbolizer_test_program.build_id"));
    while (!build_id_.empty() && build_id_.back() == '\n') build_id_.pop_back();
    ASSERT_GT(build_id_.size(), 2u);
    std::string pattern =
        (fs::path(getenv("TEST_TMPDIR")) / "symbolizer.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    scratch_ = pattern;
  }

  void TearDown() override {
    unsetenv("DEBUGINFOD_URLS");
    fs::remove_all(scratch_);
  }

  ModuleInfo Module(const std::string& path) const {
    ModuleInfo module;
    module.path = path;
    module.build_id_hex = build_id_;
    module.load_bias = facts_.load_bias;
    // Paths resolve inside /proc/<pid>/root: this process's own root.
    module.pid = static_cast<uint32_t>(getpid());
    return module;
  }

  // A symbols dir holding `file` as .build-id/xx/yyy.debug for `build_id`.
  std::string SymbolsDirWith(const std::string& file,
                             const std::string& build_id) {
    fs::path dir = scratch_ / "symbols";
    fs::path debug = dir / ".build-id" / build_id.substr(0, 2) /
                     (build_id.substr(2) + ".debug");
    fs::create_directories(debug.parent_path());
    fs::copy_file(file, debug, fs::copy_options::overwrite_existing);
    return dir.string();
  }

  // The inline chain at the return address inside Outer: Inner<long> at the
  // call of CaptureReturnAddress, inlined into Middle at its call of Inner,
  // inlined into Outer at its call of Middle.
  void ExpectOuterChain(const std::vector<SymbolizedFrame>& frames) const {
    ASSERT_THAT(frames, SizeIs(3));
    EXPECT_THAT(frames[0].function, HasSubstr("ringprof_test::Inner<long>"));
    EXPECT_THAT(frames[0].file, EndsWith(kSourceFile));
    EXPECT_EQ(frames[0].line, facts_.inner_call_line);
    EXPECT_EQ(frames[1].function, "ringprof_test::Middle(int)");
    EXPECT_THAT(frames[1].file, EndsWith(kSourceFile));
    EXPECT_EQ(frames[1].line, facts_.middle_call_line);
    EXPECT_EQ(frames[2].function, "ringprof_test::Outer(int)");
    EXPECT_THAT(frames[2].file, EndsWith(kSourceFile));
    EXPECT_EQ(frames[2].line, facts_.outer_call_line);
  }

  // What a stripped binary without debug info gives: one frame naming the
  // start of the function, no inlining, no file.
  static void ExpectFunctionStartOnly(
      const std::vector<SymbolizedFrame>& frames) {
    ASSERT_THAT(frames, SizeIs(1));
    // "[<module file name>] 0x<start>"
    EXPECT_THAT(frames[0].function,
                ::testing::MatchesRegex("\\[[a-z_]+\\] 0x[0-9a-f]+"));
    EXPECT_THAT(frames[0].file, IsEmpty());
  }

  ProgramFacts facts_;
  std::string build_id_;
  fs::path scratch_;
};

TEST_F(SymbolizerTest, ResolvesInlineChainWithDemangledNamesAndLines) {
  auto symbolizer = Symbolizer::Create({});
  ExpectOuterChain(symbolizer->Symbolize(
      Module(DataPath("symbolizer_test_program")), facts_.outer_return_address,
      AddressKind::kReturnAddress));
}

TEST_F(SymbolizerTest, CompressedDwarfResolvesAsUncompressed) {
  auto symbolizer = Symbolizer::Create({});
  ExpectOuterChain(symbolizer->Symbolize(
      Module(DataPath("compressed/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
}

TEST_F(SymbolizerTest, CorruptCompressedDwarfStillNamesFunctions) {
  auto symbolizer = Symbolizer::Create({});
  std::vector<SymbolizedFrame> leaf = symbolizer->Symbolize(
      Module(DataPath("compressed_corrupt/symbolizer_test_program")),
      facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, Not(IsEmpty()));
  EXPECT_EQ(leaf.back().function, "ringprof_test::Leaf(int)");
}

TEST_F(SymbolizerTest, ResolvesFunctionEntriesIncludingExternC) {
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  std::vector<SymbolizedFrame> leaf =
      symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, SizeIs(1));
  EXPECT_EQ(leaf[0].function, "ringprof_test::Leaf(int)");
  EXPECT_THAT(leaf[0].file, EndsWith(kSourceFile));
  EXPECT_GT(leaf[0].line, facts_.outer_call_line);

  std::vector<SymbolizedFrame> c_function = symbolizer->Symbolize(
      module, facts_.c_function, AddressKind::kInstruction);
  ASSERT_THAT(c_function, SizeIs(1));
  EXPECT_EQ(c_function[0].function, "ringprof_test_c_function");
}

TEST_F(SymbolizerTest, ReturnAddressIsLookedUpAtTheCallInstruction) {
  // The return address itself is the instruction after the call; once the
  // call returns, Outer continues on its own line (sink_pointer = ...), so
  // an exact lookup must not claim the inlined frames' call lines.
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  std::vector<SymbolizedFrame> as_call = symbolizer->Symbolize(
      module, facts_.outer_return_address, AddressKind::kReturnAddress);
  std::vector<SymbolizedFrame> as_pc = symbolizer->Symbolize(
      module, facts_.outer_return_address, AddressKind::kInstruction);
  ASSERT_FALSE(as_pc.empty());
  EXPECT_EQ(as_pc.back().function, "ringprof_test::Outer(int)");
  EXPECT_FALSE(as_pc.size() == as_call.size() &&
               as_pc.front().line == as_call.front().line)
      << "the two lookups should differ at the call boundary";
  EXPECT_EQ(symbolizer->stats().cache_hits, 0u);
}

TEST_F(SymbolizerTest, StrippedBinaryAloneNamesTheFunctionStart) {
  // Stripped to .dynsym, which names none of the program's functions:
  // .eh_frame still knows where each function starts, so every address of
  // Leaf shows as Leaf's start.
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("stripped/symbolizer_test_program"));
  const std::string leaf_start = absl::StrFormat(
      "[symbolizer_test_program] 0x%x", facts_.leaf - facts_.load_bias);
  for (uint64_t address : {facts_.leaf, facts_.leaf + 1, facts_.leaf + 4}) {
    std::vector<SymbolizedFrame> frames =
        symbolizer->Symbolize(module, address, AddressKind::kInstruction);
    ASSERT_THAT(frames, SizeIs(1));
    EXPECT_EQ(frames[0].function, leaf_start);
    EXPECT_THAT(frames[0].file, IsEmpty());
  }
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      module, facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->misses(), 0u);
  EXPECT_EQ(symbolizer->stats().modules_opened, 1u);
}

TEST_F(SymbolizerTest, MiniDebugInfoNamesAStrippedBinarysFunctions) {
  // Stripped the Fedora way: .symtab and DWARF gone, the functions that
  // .dynsym lacks kept in .gnu_debugdata.
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("minidebuginfo/symbolizer_test_program"));
  for (uint64_t address : {facts_.leaf, facts_.leaf + 4}) {
    std::vector<SymbolizedFrame> leaf =
        symbolizer->Symbolize(module, address, AddressKind::kInstruction);
    ASSERT_THAT(leaf, SizeIs(1));
    EXPECT_EQ(leaf[0].function, "ringprof_test::Leaf(int)");
    EXPECT_THAT(leaf[0].file, IsEmpty());  // symbols only, no lines
  }
  std::vector<SymbolizedFrame> outer = symbolizer->Symbolize(
      module, facts_.outer_return_address, AddressKind::kReturnAddress);
  ASSERT_THAT(outer, SizeIs(1));
  EXPECT_EQ(outer[0].function, "ringprof_test::Outer(int)");
  std::vector<SymbolizedFrame> c_function = symbolizer->Symbolize(
      module, facts_.c_function, AddressKind::kInstruction);
  ASSERT_THAT(c_function, SizeIs(1));
  EXPECT_EQ(c_function[0].function, "ringprof_test_c_function");
  EXPECT_EQ(symbolizer->stats().minidebuginfo_read, 1u);
  EXPECT_EQ(symbolizer->stats().minidebuginfo_rejected, 0u);
}

TEST_F(SymbolizerTest, MiniDebugInfoIsNotReadInsideMiniDebugInfo) {
  // Leaf is named only by a MiniDebugInfo nested in the MiniDebugInfo:
  // never read, so Leaf is not named (the closest label before it,
  // frame_dummy, covers it, as it would in libdwfl); Outer, in the outer
  // one, is named.
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module =
      Module(DataPath("minidebuginfo_nested/symbolizer_test_program"));
  std::vector<SymbolizedFrame> outer = symbolizer->Symbolize(
      module, facts_.outer_return_address, AddressKind::kReturnAddress);
  ASSERT_THAT(outer, SizeIs(1));
  EXPECT_EQ(outer[0].function, "ringprof_test::Outer(int)");
  std::vector<SymbolizedFrame> leaf =
      symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, SizeIs(1));
  EXPECT_THAT(leaf[0].function, Not(HasSubstr("Leaf")));
  EXPECT_EQ(symbolizer->stats().minidebuginfo_read, 1u);
}

TEST_F(SymbolizerTest, HostileMiniDebugInfoIsRefusedCountedAndSaidOnce) {
  // Not xz, truncated xz, xz of something not an ELF, and a bomb (136 MiB
  // of zeros, past the 128 MiB limit): each refused, the binary still
  // symbolized as a stripped one (function starts), one warning for all.
  auto symbolizer = Symbolizer::Create({});
  testing::internal::CaptureStderr();
  for (const char* variant : {"minidebuginfo_not_xz", "minidebuginfo_truncated",
                              "minidebuginfo_not_elf", "minidebuginfo_bomb"}) {
    ModuleInfo module =
        Module(DataPath(absl::StrCat(variant, "/symbolizer_test_program")));
    module.build_id_hex.clear();  // one index per file, not per build-id
    ExpectFunctionStartOnly(symbolizer->Symbolize(
        module, facts_.outer_return_address, AddressKind::kReturnAddress));
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(symbolizer->stats().minidebuginfo_rejected, 4u);
  EXPECT_EQ(symbolizer->stats().minidebuginfo_read, 0u);
  EXPECT_EQ(symbolizer->misses(), 0u);
  std::vector<std::string> said =
      absl::StrSplit(log, "MiniDebugInfo refused", absl::SkipEmpty());
  EXPECT_EQ(said.size(), 2u) << log;  // before and after the one mention
  EXPECT_THAT(log, HasSubstr("not xz data")) << log;
  EXPECT_THAT(log,
              HasSubstr("ringprof_symbolizer_minidebuginfo_rejected_total"));
}

TEST_F(SymbolizerTest, AnXzBombCostsTheLimitNotItsSize) {
  // The bomb alone, to see its reason: decompression stopped at the limit.
  auto symbolizer = Symbolizer::Create({});
  testing::internal::CaptureStderr();
  symbolizer->Symbolize(
      Module(DataPath("minidebuginfo_bomb/symbolizer_test_program")),
      facts_.leaf, AddressKind::kInstruction);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("decompresses to more than 134217728 bytes"))
      << log;
  EXPECT_EQ(symbolizer->stats().minidebuginfo_rejected, 1u);
}

TEST_F(SymbolizerTest, StrippedBinaryResolvesThroughSymbolsDir) {
  SymbolizerOptions options;
  options.symbol_dirs = {
      SymbolsDirWith(DataPath("symbolizer_test_program.debug"), build_id_)};
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module = Module(DataPath("stripped/symbolizer_test_program"));
  ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  std::vector<SymbolizedFrame> leaf =
      symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, SizeIs(1));
  EXPECT_EQ(leaf[0].function, "ringprof_test::Leaf(int)");
}

TEST_F(SymbolizerTest, DebugFileStandsInForAMissingBinary) {
  SymbolizerOptions options;
  options.symbol_dirs = {
      SymbolsDirWith(DataPath("symbolizer_test_program.debug"), build_id_)};
  auto symbolizer = Symbolizer::Create(options);
  ExpectOuterChain(symbolizer->Symbolize(
      Module("/nonexistent/ringprof/symbolizer_test_program"),
      facts_.outer_return_address, AddressKind::kReturnAddress));
}

TEST_F(SymbolizerTest, FindsBinaryUnderTheProcessRoot) {
  // As if the workload ran in another mount namespace: the path it reported
  // exists only under <proc_root>/<pid>/root.
  const std::string reported = "/opt/workload/bin/program";
  fs::path proc_root = scratch_ / "proc";
  fs::path inside = proc_root / "4242" / "root" / "opt/workload/bin/program";
  fs::create_directories(inside.parent_path());
  fs::copy_file(DataPath("symbolizer_test_program"), inside);
  SymbolizerOptions options;
  options.proc_root = proc_root.string();
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module = Module(reported);
  module.pid = 4242;
  ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
}

TEST_F(SymbolizerTest, FindsDebugPackagesInsideTheWorkloadRootThenOnTheHost) {
  const std::string build_id_path = ".build-id/" + build_id_.substr(0, 2) +
                                    "/" + build_id_.substr(2) + ".debug";
  fs::path proc_root = scratch_ / "proc";
  fs::path in_container =
      proc_root / "4242" / "root" / "opt/debug" / build_id_path;
  fs::create_directories(in_container.parent_path());
  fs::copy_file(DataPath("symbolizer_test_program.debug"), in_container);
  // The stripped binary, where the workload sees it.
  const std::string reported = "/opt/workload/bin/program";
  fs::path binary = proc_root / "4242" / "root" / "opt/workload/bin/program";
  fs::create_directories(binary.parent_path());
  fs::copy_file(DataPath("stripped/symbolizer_test_program"), binary);

  SymbolizerOptions options;
  options.proc_root = proc_root.string();
  options.system_debug_dir = "/opt/debug";  // absent on the host
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module = Module(reported);
  module.pid = 4242;
  ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));

  // On the host: a system debug dir that exists here.
  fs::path host_dir = scratch_ / "host-debug";
  fs::create_directories((host_dir / build_id_path).parent_path());
  fs::copy_file(DataPath("symbolizer_test_program.debug"),
                host_dir / build_id_path);
  options.system_debug_dir = host_dir.string();
  options.proc_root = "/proc";  // this process, where DataPath exists
  symbolizer = Symbolizer::Create(options);
  ExpectOuterChain(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));

  options.system_debug_dir.clear();
  symbolizer = Symbolizer::Create(options);
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
}

TEST_F(SymbolizerTest, RejectsFilesWithAnotherBuildId) {
  // The right path, the wrong expected id: the binary must not be used.
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  module.build_id_hex = "00112233445566778899aabbccddeeff00112233";
  EXPECT_THAT(symbolizer->Symbolize(module, facts_.outer_return_address,
                                    AddressKind::kReturnAddress),
              IsEmpty());
  EXPECT_GE(symbolizer->stats().build_id_mismatches, 1u);
  EXPECT_EQ(symbolizer->stats().modules_not_found, 1u);
}

TEST_F(SymbolizerTest, RejectsDebugFileWithAnotherBuildId) {
  // A debug file at the right .build-id path that belongs to another binary
  // (this test itself) must not lend the stripped binary its DWARF.
  SymbolizerOptions options;
  options.symbol_dirs = {SymbolsDirWith("/proc/self/exe", build_id_)};
  auto symbolizer = Symbolizer::Create(options);
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_GE(symbolizer->stats().build_id_mismatches, 1u);
}

TEST_F(SymbolizerTest, UnknownAddressResolvesToNothing) {
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  EXPECT_THAT(symbolizer->Symbolize(module, facts_.load_bias + 0x40000000,
                                    AddressKind::kInstruction),
              IsEmpty());
  EXPECT_EQ(symbolizer->misses(), 1u);
}

TEST_F(SymbolizerTest, EachAddressIsResolvedOncePerBuildId) {
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo first = Module(DataPath("symbolizer_test_program"));
  ModuleInfo second_process = first;
  second_process.pid = 2;
  second_process.load_bias = first.load_bias + 0x100000;  // ASLR elsewhere
  const uint64_t offset = facts_.outer_return_address - first.load_bias;

  for (int i = 0; i < 3; ++i) {
    ExpectOuterChain(symbolizer->Symbolize(first, first.load_bias + offset,
                                           AddressKind::kReturnAddress));
  }
  ExpectOuterChain(symbolizer->Symbolize(second_process,
                                         second_process.load_bias + offset,
                                         AddressKind::kReturnAddress));
  symbolizer->Symbolize(first, facts_.leaf, AddressKind::kInstruction);

  SymbolizerStats stats = symbolizer->stats();
  EXPECT_EQ(stats.lookups, 5u);
  EXPECT_EQ(stats.cache_hits, 3u);
  EXPECT_EQ(stats.addresses_resolved, 2u);
  EXPECT_EQ(stats.addresses_unresolved, 0u);
  EXPECT_EQ(stats.modules_opened, 1u);
}

TEST_F(SymbolizerTest, ModulesWithoutBuildIdAreKeyedByPath) {
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  module.build_id_hex.clear();
  ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  ModuleInfo other = Module(DataPath("stripped/symbolizer_test_program"));
  other.build_id_hex.clear();
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      other, facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().modules_opened, 2u);
}

// Counts the lines of `log` that say a module's functions have no name.
int UnnamedWarnings(const std::string& log) {
  int count = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    count += absl::StrContains(line, "functions without a name") ? 1 : 0;
  }
  return count;
}

TEST_F(SymbolizerTest, AStrippedBinarysReasonIsKeptAndSaidOnce) {
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module = Module(DataPath("stripped/symbolizer_test_program"));
  EXPECT_EQ(symbolizer->UnnamedReason(module), "");  // nothing looked up
  testing::internal::CaptureStderr();
  for (uint64_t address :
       {facts_.leaf, facts_.outer_return_address, facts_.leaf + 4}) {
    std::vector<SymbolizedFrame> frames =
        symbolizer->Symbolize(module, address, AddressKind::kInstruction);
    ASSERT_THAT(frames, SizeIs(1));
    EXPECT_TRUE(frames[0].unnamed) << frames[0].function;
  }
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string reason = symbolizer->UnnamedReason(module);
  EXPECT_EQ(reason,
            "stripped (no .symtab) without MiniDebugInfo; no debug file found "
            "(by build-id under /usr/lib/debug; debuginfod not configured "
            "(DEBUGINFOD_URLS); no .gnu_debuglink)");
  EXPECT_EQ(UnnamedWarnings(log), 1) << log;
  EXPECT_THAT(log, HasSubstr(module.path + ": functions without a name"));
  EXPECT_THAT(log, HasSubstr(reason));
  EXPECT_EQ(symbolizer->stats().modules_unnamed, 1u);
  // Another process mapping the same build-id: the same module, not said
  // again.
  ModuleInfo again = module;
  again.pid = 1;
  testing::internal::CaptureStderr();
  symbolizer->Symbolize(again, facts_.leaf + 8, AddressKind::kInstruction);
  EXPECT_EQ(UnnamedWarnings(testing::internal::GetCapturedStderr()), 0);
  EXPECT_EQ(symbolizer->UnnamedReason(again), reason);
}

TEST_F(SymbolizerTest, NamedFunctionsHaveNoReason) {
  // Full symbols, and MiniDebugInfo: every function named, nothing said.
  auto symbolizer = Symbolizer::Create({});
  testing::internal::CaptureStderr();
  for (const char* path :
       {"symbolizer_test_program", "minidebuginfo/symbolizer_test_program"}) {
    ModuleInfo module = Module(DataPath(path));
    module.build_id_hex.clear();  // one index per file, not per build-id
    for (uint64_t address : {facts_.leaf, facts_.c_function}) {
      std::vector<SymbolizedFrame> frames =
          symbolizer->Symbolize(module, address, AddressKind::kInstruction);
      ASSERT_THAT(frames, Not(IsEmpty()));
      EXPECT_FALSE(frames[0].unnamed) << path;
    }
    EXPECT_EQ(symbolizer->UnnamedReason(module), "") << path;
  }
  EXPECT_EQ(UnnamedWarnings(testing::internal::GetCapturedStderr()), 0);
  EXPECT_EQ(symbolizer->stats().modules_unnamed, 0u);

  // An address in no function of a binary with every symbol.
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  EXPECT_THAT(symbolizer->Symbolize(module, facts_.load_bias + 0x40000000,
                                    AddressKind::kInstruction),
              IsEmpty());
  EXPECT_THAT(symbolizer->UnnamedReason(module),
              HasSubstr("an address in no function of its symbol table"));
}

TEST_F(SymbolizerTest, AMissingBinarysReasonSaysWhereItWasLookedFor) {
  SymbolizerOptions options;
  options.symbol_dirs = {(scratch_ / "empty-symbols").string()};
  options.system_debug_dir = (scratch_ / "no-debug").string();
  options.use_debuginfod = false;
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module = Module("/nonexistent/ringprof/program");
  EXPECT_THAT(
      symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction),
      IsEmpty());
  EXPECT_EQ(symbolizer->UnnamedReason(module),
            absl::StrCat("/nonexistent/ringprof/program: file not found; not "
                         "found by build-id either (by build-id under ",
                         options.symbol_dirs[0], ", ", options.system_debug_dir,
                         "; debuginfod off (--debuginfod=false))"));
  ModuleInfo anonymous = Module("");
  anonymous.build_id_hex.clear();
  EXPECT_THAT(
      symbolizer->Symbolize(anonymous, facts_.leaf, AddressKind::kInstruction),
      IsEmpty());
  EXPECT_THAT(symbolizer->UnnamedReason(anonymous),
              ::testing::StartsWith("no file (anonymous memory"));
}

// LLVM's symbolizer, an independent DWARF reader, as referee over addresses
// spread across this test's executable (gtest, gmock and libstdc++
// templates: deep inlining). (elfutils' eu-addr2line is no referee: its
// dwarf_getscopes drops inline chains that both LLVM and we report.)
struct RefereeFrame {
  std::string function;
  int64_t line = 0;
};

std::map<uint64_t, std::vector<RefereeFrame>> RunLlvmSymbolizer(
    const std::string& binary, const std::vector<uint64_t>& pcs,
    const fs::path& scratch) {
  fs::path input = scratch / "addresses.txt";
  {
    std::ofstream out(input);
    for (uint64_t pc : pcs) out << "0x" << std::hex << pc << "\n";
  }
  std::string command = std::string(kLlvmSymbolizer) + " --obj='" + binary +
                        "' --addresses --inlining --demangle < '" +
                        input.string() + "'";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::map<uint64_t, std::vector<RefereeFrame>> results;
  if (pipe == nullptr) return results;
  std::vector<std::string> lines;
  std::string line;
  char buffer[8192];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    line += buffer;
    if (line.back() != '\n') continue;  // a name longer than the buffer
    line.pop_back();
    lines.push_back(line);
    line.clear();
  }
  EXPECT_EQ(pclose(pipe), 0) << command;
  std::vector<RefereeFrame>* current = nullptr;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (lines[i].rfind("0x", 0) == 0) {
      current = &results[std::strtoull(lines[i].c_str(), nullptr, 16)];
      continue;
    }
    if (current == nullptr || i + 1 >= lines.size()) break;
    RefereeFrame frame;
    frame.function = lines[i] == "??" ? "" : lines[i];
    // "file:line:column" or "??:0:0"
    std::vector<std::string> parts = absl::StrSplit(lines[++i], ':');
    if (parts.size() >= 3) {
      frame.line = std::strtoll(parts[parts.size() - 2].c_str(), nullptr, 10);
    }
    if (!frame.function.empty() || frame.line != 0) current->push_back(frame);
  }
  return results;
}

// Whether two names denote the same function. The GNU and LLVM demanglers
// spell some things differently: "decltype(nullptr)" / "std::nullptr_t",
// "operator< <T>" / "operator<<T>", "decltype (((x)))" / "decltype(x)",
// lambdas, " [clone .cold]" / " (.cold)"; each gives up on a few names the
// other handles (leaving them mangled); more differ deep inside template
// arguments. Where DWARF has no linkage name we
// show the short DW_AT_name of inlined functions that LLVM qualifies.
bool SameFunction(std::string ours, std::string theirs) {
  if (ours == theirs) return true;
  if (ours.rfind("_Z", 0) == 0 || theirs.rfind("_Z", 0) == 0) return true;
  for (const char* spelled_differently : {"lambda", "decltype"}) {
    if (ours.find(spelled_differently) != std::string::npos &&
        theirs.find(spelled_differently) != std::string::npos) {
      return true;
    }
  }
  if (ours.find('(') == std::string::npos) {
    return theirs.find("::" + ours.substr(0, ours.find('<'))) !=
           std::string::npos;
  }
  auto normalize = [](std::string name) {
    size_t clone = std::min(name.find(" [clone "), name.find(" (."));
    if (clone != std::string::npos) name.resize(clone);
    name = absl::StrReplaceAll(name, {{"decltype(nullptr)", "std::nullptr_t"}});
    name.erase(
        std::remove_if(name.begin(), name.end(),
                       [](char c) { return c == ' ' || c == '(' || c == ')'; }),
        name.end());
    return name;
  };
  ours = normalize(ours);
  theirs = normalize(theirs);
  if (ours == theirs) return true;
  // A local class of a function template: LLVM spells the enclosing
  // function's return type ("void f<T>()::Local::~Local()"), GNU does not.
  for (const auto& [longer, shorter] :
       {std::make_pair(ours, theirs), std::make_pair(theirs, ours)}) {
    if (longer.size() > shorter.size() &&
        longer.compare(longer.size() - shorter.size(), shorter.size(),
                       shorter) == 0 &&
        longer.substr(0, longer.size() - shorter.size()).find("::") ==
            std::string::npos) {
      return true;
    }
  }
  // Deeper spelling differences (inheriting constructors, decltype
  // expressions) sit inside long template names: accept names that agree
  // on their first half. Frame counts and lines are still compared exactly,
  // and they catch a wrong frame (another call site has another line).
  size_t common = 0;
  while (common < ours.size() && common < theirs.size() &&
         ours[common] == theirs[common]) {
    ++common;
  }
  return common >= 20 && common * 2 >= std::min(ours.size(), theirs.size());
}

int FindExecutableSegment(struct dl_phdr_info* info, size_t, void* data) {
  auto* range = static_cast<std::pair<uint64_t, uint64_t>*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD && (phdr.p_flags & PF_X) != 0) {
      *range = {phdr.p_vaddr, phdr.p_vaddr + phdr.p_memsz};
      return 1;
    }
  }
  return 1;  // the main program is reported first
}

TEST_F(SymbolizerTest, AgreesWithLlvmSymbolizerAcrossABinary) {
  if (!fs::exists(kLlvmSymbolizer)) {
    GTEST_SKIP() << kLlvmSymbolizer << " missing (Debian llvm-14; tools/setup)";
  }
  const std::string binary = fs::read_symlink("/proc/self/exe").string();
  std::pair<uint64_t, uint64_t> text;
  dl_iterate_phdr(FindExecutableSegment, &text);
  ASSERT_LT(text.first, text.second);
  constexpr int kAddresses = 1500;
  std::vector<uint64_t> pcs;
  for (int i = 0; i < kAddresses; ++i) {
    pcs.push_back(text.first + (text.second - text.first) * i / kAddresses);
  }
  std::map<uint64_t, std::vector<RefereeFrame>> referee =
      RunLlvmSymbolizer(binary, pcs, scratch_);
  ASSERT_EQ(referee.size(), pcs.size());

  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module;
  module.path = binary;
  module.load_bias = 0;  // file addresses, as given to llvm-symbolizer
  module.pid = static_cast<uint32_t>(getpid());
  int compared = 0;
  int with_inlines = 0;
  int mismatches = 0;
  for (uint64_t pc : pcs) {
    std::vector<SymbolizedFrame> ours =
        symbolizer->Symbolize(module, pc, AddressKind::kInstruction);
    const std::vector<RefereeFrame>& theirs = referee[pc];
    // Without DWARF (PLT stubs, padding) LLVM names the nearest preceding
    // symbol whatever its size; we respect symbol sizes. Compare the rest.
    // Padding after a function has a line in the line table but no function
    // (LLVM prints "??" with the line); we report nothing there.
    if (theirs.size() == 1 &&
        (theirs[0].line == 0 || theirs[0].function.empty())) {
      continue;
    }
    ++compared;
    with_inlines += theirs.size() > 1;
    bool same = ours.size() == theirs.size();
    for (size_t i = 0; same && i < ours.size(); ++i) {
      same = ours[i].line == theirs[i].line &&
             SameFunction(ours[i].function, theirs[i].function);
    }
    if (!same && ++mismatches <= 5) {
      std::string detail;
      for (const RefereeFrame& frame : theirs) {
        detail +=
            "\n  llvm: " + frame.function + " :" + std::to_string(frame.line);
      }
      for (const SymbolizedFrame& frame : ours) {
        detail +=
            "\n  ours: " + frame.function + " :" + std::to_string(frame.line);
      }
      ADD_FAILURE() << "at 0x" << std::hex << pc << detail;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << compared;
  EXPECT_GT(compared, kAddresses / 3);
  EXPECT_GT(with_inlines, kAddresses / 20) << "the sweep should hit inlining";
}

// A shared library loaded at a random address in this process, found by its
// real path, with no DWARF (Debian's libc is stripped to .dynsym): the
// exported symbol names the function.
struct LoadedLibrary {
  std::string path;
  uint64_t load_bias = 0;
};

int FindLibc(struct dl_phdr_info* info, size_t, void* data) {
  auto* library = static_cast<LoadedLibrary*>(data);
  absl::string_view name = info->dlpi_name;
  if (name.find("/libc.so.6") == absl::string_view::npos) return 0;
  library->path = std::string(name);
  library->load_bias = info->dlpi_addr;
  return 1;
}

TEST_F(SymbolizerTest, ResolvesExportedFunctionOfALoadedSharedLibrary) {
  LoadedLibrary libc;
  dl_iterate_phdr(FindLibc, &libc);
  ASSERT_FALSE(libc.path.empty());
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  // libc's own symbol, not a sanitizer interceptor.
  auto address = reinterpret_cast<uint64_t>(dlsym(handle, "getpid"));
  dlclose(handle);
  ASSERT_NE(address, 0u);

  auto symbolizer = Symbolizer::Create({});
  ModuleInfo module;
  module.path = fs::canonical(libc.path).string();
  module.load_bias = libc.load_bias;
  module.pid = static_cast<uint32_t>(getpid());
  std::vector<SymbolizedFrame> frames =
      symbolizer->Symbolize(module, address, AddressKind::kInstruction);
  ASSERT_THAT(frames, SizeIs(::testing::Ge(1u)));
  EXPECT_THAT(frames.back().function, HasSubstr("getpid"));
}

// --- The workload is untrusted: what its module paths may and may not reach.

class SymbolizerRootTest : public SymbolizerTest {
 protected:
  static constexpr uint32_t kPid = 4242;
  static constexpr char kReported[] = "/opt/lib/program";

  // A fake /proc whose process kPid has an empty root directory.
  SymbolizerOptions Options() {
    proc_root_ = scratch_ / "proc";
    root_ = proc_root_ / std::to_string(kPid) / "root";
    fs::create_directories(root_ / "opt/lib");
    SymbolizerOptions options;
    options.proc_root = proc_root_.string();
    return options;
  }
  ModuleInfo Reported(const std::string& path = kReported) const {
    ModuleInfo module = Module(path);
    module.pid = kPid;
    return module;
  }
  fs::path Inside(const std::string& path = kReported) const {
    return root_ / path.substr(1);
  }

  fs::path proc_root_;
  fs::path root_;
};

// Without the capabilities that bypass file permissions (root has them), for
// the life of the object and on this thread only: what a non-root collector
// sees.
class WithoutDacOverride {
 public:
  WithoutDacOverride() {
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    ok_ = syscall(SYS_capget, &header, saved_) == 0;
    __user_cap_data_struct reduced[2] = {saved_[0], saved_[1]};
    reduced[0].effective &=
        ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    ok_ = ok_ && syscall(SYS_capset, &header, reduced) == 0;
  }
  ~WithoutDacOverride() {
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    syscall(SYS_capset, &header, saved_);
  }
  bool ok() const { return ok_; }

 private:
  __user_cap_data_struct saved_[2] = {};
  bool ok_ = false;
};

TEST_F(SymbolizerRootTest, ARefusedRootIsCountedNotSilent) {
  SymbolizerOptions options = Options();
  fs::copy_file(DataPath("symbolizer_test_program"), Inside());
  fs::permissions(proc_root_ / std::to_string(kPid), fs::perms::none);
  auto symbolizer = Symbolizer::Create(options);
  {
    WithoutDacOverride unprivileged;
    ASSERT_TRUE(unprivileged.ok());
    symbolizer->AttachProcess(kPid);
    EXPECT_TRUE(symbolizer
                    ->Symbolize(Reported(), facts_.outer_return_address,
                                AddressKind::kReturnAddress)
                    .empty());
  }
  fs::permissions(proc_root_ / std::to_string(kPid), fs::perms::owner_all);
  EXPECT_EQ(symbolizer->stats().roots_denied, 1u);
  EXPECT_EQ(symbolizer->stats().files_denied, 0u);
  EXPECT_THAT(symbolizer->UnnamedReason(Reported()),
              ::testing::StartsWith(
                  absl::StrCat("access denied to ", proc_root_.string(), "/",
                               kPid, "/root; not found by build-id either")));
  symbolizer->DetachProcess(kPid);
}

TEST_F(SymbolizerRootTest, ARefusedBinaryIsCountedNotSilent) {
  SymbolizerOptions options = Options();
  fs::copy_file(DataPath("symbolizer_test_program"), Inside());
  fs::permissions(Inside(), fs::perms::none);
  auto symbolizer = Symbolizer::Create(options);
  {
    WithoutDacOverride unprivileged;
    ASSERT_TRUE(unprivileged.ok());
    EXPECT_TRUE(symbolizer
                    ->Symbolize(Reported(), facts_.outer_return_address,
                                AddressKind::kReturnAddress)
                    .empty());
  }
  EXPECT_EQ(symbolizer->stats().files_denied, 1u);
  EXPECT_EQ(symbolizer->stats().roots_denied, 0u);
  EXPECT_THAT(
      symbolizer->UnnamedReason(Reported()),
      ::testing::StartsWith(absl::StrCat(kReported, ": access denied (")));
}

TEST_F(SymbolizerRootTest, ALibraryTruncatedAfterIndexingKeepsSymbolizing) {
  SymbolizerOptions options = Options();
  fs::copy_file(DataPath("symbolizer_test_program"), Inside());
  auto symbolizer = Symbolizer::Create(options);
  symbolizer->AttachProcess(kPid);
  ModuleInfo module = Reported();
  std::vector<SymbolizedFrame> leaf =
      symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, SizeIs(1));
  EXPECT_EQ(leaf[0].function, "ringprof_test::Leaf(int)");
  // A deploy's `cp` rewrites the file in place, then it shrinks to nothing:
  // a mapping of it would now fault (SIGBUS) on every page.
  {
    std::ofstream rewrite(Inside(), std::ios::in | std::ios::out);
    rewrite << std::string(4096, 'x');
  }
  fs::resize_file(Inside(), 0);
  ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  symbolizer->DetachProcess(kPid);
}

TEST_F(SymbolizerRootTest, ATruncatedLibraryIsRejectedNotMapped) {
  SymbolizerOptions options = Options();
  fs::copy_file(DataPath("symbolizer_test_program"), Inside());
  fs::resize_file(Inside(), fs::file_size(Inside()) / 2);
  auto symbolizer = Symbolizer::Create(options);
  EXPECT_THAT(
      symbolizer->Symbolize(Reported(), facts_.leaf, AddressKind::kInstruction),
      IsEmpty());
  EXPECT_EQ(symbolizer->stats().files_rejected, 1u);
}

TEST_F(SymbolizerRootTest, FollowsTheDebugLinkInsideTheWorkloadRoot) {
  // A stripped binary whose .gnu_debuglink names its debug file, found in
  // .debug/ beside it (GDB's place); checked by build-id, or by the link's
  // CRC-32 when the module reports no build-id.
  SymbolizerOptions options = Options();
  options.system_debug_dir.clear();
  fs::copy_file(DataPath("linked/symbolizer_test_program"), Inside());
  fs::create_directories(Inside("/opt/lib/.debug"));
  fs::copy_file(DataPath("symbolizer_test_program.debug"),
                Inside("/opt/lib/.debug/symbolizer_test_program.debug"));
  for (bool with_build_id : {true, false}) {
    auto symbolizer = Symbolizer::Create(options);
    ModuleInfo module = Reported();
    if (!with_build_id) module.build_id_hex.clear();
    ExpectOuterChain(symbolizer->Symbolize(module, facts_.outer_return_address,
                                           AddressKind::kReturnAddress));
  }
  // Another binary under that name (this test): wrong build-id, wrong CRC.
  fs::copy_file("/proc/self/exe",
                Inside("/opt/lib/.debug/symbolizer_test_program.debug"),
                fs::copy_options::overwrite_existing);
  for (bool with_build_id : {true, false}) {
    auto symbolizer = Symbolizer::Create(options);
    ModuleInfo module = Reported();
    if (!with_build_id) module.build_id_hex.clear();
    std::vector<SymbolizedFrame> frames = symbolizer->Symbolize(
        module, facts_.outer_return_address, AddressKind::kReturnAddress);
    ExpectFunctionStartOnly(frames);
    EXPECT_GE(symbolizer->stats().files_rejected, 1u);
  }
}

TEST_F(SymbolizerRootTest, FollowsTheDebugLinkToEachOfGdbsPlaces) {
  // GDB's places for a .gnu_debuglink name, in its order, each inside the
  // workload's root: beside the binary, in .debug/ there, and under the
  // system debug dir by the binary's directory. A file in an earlier place
  // with another build-id is skipped for the next place.
  SymbolizerOptions options = Options();
  options.system_debug_dir = "/usr/lib/debug";
  fs::copy_file(DataPath("linked/symbolizer_test_program"), Inside());
  const std::string name = "symbolizer_test_program.debug";
  for (const std::string& dir :
       {"/opt/lib/", "/opt/lib/.debug/", "/usr/lib/debug/opt/lib/"}) {
    SCOPED_TRACE(dir);
    fs::create_directories(Inside(dir));
    fs::copy_file(DataPath(name), Inside(dir + name));
    auto symbolizer = Symbolizer::Create(options);
    ExpectOuterChain(symbolizer->Symbolize(
        Reported(), facts_.outer_return_address, AddressKind::kReturnAddress));
    // Now another ELF in this place: the next place is where it is found.
    fs::copy_file("/proc/self/exe", Inside(dir + name),
                  fs::copy_options::overwrite_existing);
  }
  auto symbolizer = Symbolizer::Create(options);
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      Reported(), facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().build_id_mismatches, 3u);
}

TEST_F(SymbolizerRootTest, PathsNeverReachTheCollectorsFiles) {
  // The test program exists here, in the collector's filesystem, at
  // DataPath(...); the workload names it, directly, with ../ and through
  // symlinks: none of it may lend the workload our symbols.
  SymbolizerOptions options = Options();
  const std::string ours = DataPath("symbolizer_test_program");
  fs::create_symlink(ours, Inside("/opt/lib/absolute"));
  fs::create_symlink("../../../../../../../../../../.." + ours,
                     Inside("/opt/lib/climbing"));
  for (bool walk_only : {false, true}) {
    options.walk_only = walk_only;
    auto symbolizer = Symbolizer::Create(options);
    for (const std::string& path :
         {ours, "/../../../../../../../.." + ours,
          std::string("/opt/lib/absolute"), std::string("/opt/lib/climbing")}) {
      EXPECT_THAT(symbolizer->Symbolize(Reported(path), facts_.leaf,
                                        AddressKind::kInstruction),
                  IsEmpty())
          << path << (walk_only ? " (walk)" : "");
      // Keyed by build-id: a second path must not find a cached success.
    }
    EXPECT_EQ(symbolizer->stats().modules_opened, 0u);
  }
}

TEST_F(SymbolizerRootTest, FifosDevicesAndHugeFilesAreRejectedAtOnce) {
  SymbolizerOptions options = Options();
  ASSERT_EQ(mkfifo(Inside("/opt/lib/fifo.so").c_str(), 0600), 0);
  { std::ofstream sparse(Inside("/opt/lib/sparse.so")); }
  fs::resize_file(Inside("/opt/lib/sparse.so"), uint64_t{64} << 30);
  fs::create_directories(root_ / "dev");
  ASSERT_EQ(symlink("/dev/zero", Inside("/opt/lib/zero.so").c_str()), 0);
  auto symbolizer = Symbolizer::Create(options);
  for (const char* path :
       {"/opt/lib/fifo.so", "/opt/lib/sparse.so", "/opt/lib/zero.so"}) {
    ModuleInfo module = Reported(path);
    // A build-id of its own each, so none is answered from another's cache.
    module.build_id_hex =
        absl::StrFormat("%08x", std::hash<std::string>()(path));
    EXPECT_THAT(
        symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction),
        IsEmpty())
        << path;
  }
  // The FIFO and the 64 GiB file are refused; /dev/zero does not exist in
  // the workload's root (an empty /dev), so it is simply not found.
  EXPECT_EQ(symbolizer->stats().files_rejected, 2u);

  // The collector's own /dev/zero, named by this process: not a file.
  SymbolizerOptions real;
  auto host = Symbolizer::Create(real);
  ModuleInfo zero = Module("/dev/zero");
  EXPECT_THAT(host->Symbolize(zero, facts_.leaf, AddressKind::kInstruction),
              IsEmpty());
  EXPECT_EQ(host->stats().files_rejected, 1u);
}

TEST_F(SymbolizerTest, ABuildIdThatIsNotHexNamesNoFile) {
  // The ring's build-id bytes are hex-encoded by the collector; a caller
  // passing anything else must not steer the .build-id/ paths.
  SymbolizerOptions options;
  options.symbol_dirs = {
      SymbolsDirWith(DataPath("symbolizer_test_program.debug"), build_id_)};
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  for (const std::string& id :
       {std::string("../../../etc/passwd"), build_id_ + "/..",
        std::string(200, 'a'), std::string("ABCDEF")}) {
    module.build_id_hex = id;
    EXPECT_THAT(
        symbolizer->Symbolize(module, facts_.leaf, AddressKind::kInstruction),
        IsEmpty())
        << id;
  }
  EXPECT_EQ(symbolizer->stats().modules_opened, 0u);
}

TEST_F(SymbolizerTest, AnExitedProcessIsSymbolizedThroughItsHeldRoot) {
  // A process that shares our root, attached while alive, symbolized after
  // it was reaped (its /proc entry gone).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto attached = Symbolizer::Create({});
  attached->AttachProcess(static_cast<uint32_t>(child));
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  ModuleInfo module = Module(DataPath("symbolizer_test_program"));
  module.pid = static_cast<uint32_t>(child);
  ExpectOuterChain(attached->Symbolize(module, facts_.outer_return_address,
                                       AddressKind::kReturnAddress));
  attached->DetachProcess(static_cast<uint32_t>(child));

  auto not_attached = Symbolizer::Create({});
  EXPECT_THAT(not_attached->Symbolize(module, facts_.outer_return_address,
                                      AddressKind::kReturnAddress),
              IsEmpty());
}

TEST_F(SymbolizerTest, AProcessGoneUnreadLeavesOthersMappingItsBuildIdNamed) {
  // A process reaped before the collector saw it: its root is gone, so its
  // modules are not found, which must not leave the same build-id unnamed
  // in a live process (a short-lived shell's libc, python3's libc).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  auto symbolizer = Symbolizer::Create({});
  ModuleInfo gone = Module(DataPath("symbolizer_test_program"));
  gone.pid = static_cast<uint32_t>(child);
  EXPECT_THAT(symbolizer->Symbolize(gone, facts_.outer_return_address,
                                    AddressKind::kReturnAddress),
              IsEmpty());
  const std::string reason = symbolizer->UnnamedReason(gone);
  EXPECT_THAT(reason, ::testing::StartsWith(absl::StrCat(
                          "the process had exited before its files were "
                          "read (/proc/",
                          child, "/root gone)")));
  ModuleInfo live = Module(DataPath("symbolizer_test_program"));
  ExpectOuterChain(symbolizer->Symbolize(live, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->UnnamedReason(live), "");
  EXPECT_EQ(symbolizer->UnnamedReason(gone), reason);
  // Found once, by any process: the gone one's next addresses too.
  std::vector<SymbolizedFrame> leaf =
      symbolizer->Symbolize(gone, facts_.leaf, AddressKind::kInstruction);
  ASSERT_THAT(leaf, SizeIs(1));
  EXPECT_EQ(leaf[0].function, "ringprof_test::Leaf(int)");
}

TEST_F(SymbolizerTest, EvictsLeastRecentlyUsedModulesBeyondTheBudget) {
  LoadedLibrary libc;
  dl_iterate_phdr(FindLibc, &libc);
  ASSERT_FALSE(libc.path.empty());
  ModuleInfo libc_module;
  libc_module.path = fs::canonical(libc.path).string();
  libc_module.load_bias = libc.load_bias;
  libc_module.pid = static_cast<uint32_t>(getpid());
  const uint64_t getpid_address = reinterpret_cast<uint64_t>(&getpid);

  SymbolizerOptions options;
  options.cache_bytes = 1;  // every module is over it: keep only the last
  auto symbolizer = Symbolizer::Create(options);
  ModuleInfo program = Module(DataPath("symbolizer_test_program"));
  ExpectOuterChain(symbolizer->Symbolize(program, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().modules_cached, 1u);
  EXPECT_EQ(symbolizer->stats().modules_evicted, 0u);
  symbolizer->Symbolize(libc_module, getpid_address, AddressKind::kInstruction);
  EXPECT_EQ(symbolizer->stats().modules_cached, 1u);
  EXPECT_EQ(symbolizer->stats().modules_evicted, 1u);
  // Back again: indexed anew, same answer.
  ExpectOuterChain(symbolizer->Symbolize(program, facts_.outer_return_address,
                                         AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().modules_opened, 3u);
  EXPECT_EQ(symbolizer->stats().modules_evicted, 2u);

  // A roomy budget keeps both, and says what they cost.
  options.cache_bytes = uint64_t{1} << 30;
  symbolizer = Symbolizer::Create(options);
  symbolizer->Symbolize(program, facts_.leaf, AddressKind::kInstruction);
  const uint64_t one = symbolizer->stats().cache_bytes;
  symbolizer->Symbolize(libc_module, getpid_address, AddressKind::kInstruction);
  EXPECT_EQ(symbolizer->stats().modules_cached, 2u);
  EXPECT_GT(one, 0u);
  EXPECT_GT(symbolizer->stats().cache_bytes, one);
}

// A minimal debuginfod: serves GET /buildid/<id>/<kind> from a map of
// paths to files, one connection at a time, and records what was asked.
class FakeDebuginfod {
 public:
  // URL path ("/buildid/<id>/debuginfo") -> file to serve.
  using Files = std::map<std::string, std::string>;

  explicit FakeDebuginfod(Files files) : files_(std::move(files)) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        listen(listener_, 8) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) !=
            0) {
      ADD_FAILURE() << "cannot listen on loopback: " << strerror(errno);
      return;
    }
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    server_ = std::thread([this] { Serve(); });
  }

  FakeDebuginfod(const FakeDebuginfod&) = delete;
  FakeDebuginfod& operator=(const FakeDebuginfod&) = delete;

  ~FakeDebuginfod() {
    shutdown(listener_, SHUT_RDWR);
    if (server_.joinable()) server_.join();
    close(listener_);
  }

  const std::string& url() const { return url_; }

  std::vector<std::string> requests() {
    absl::MutexLock lock(&mutex_);
    return requests_;
  }

 private:
  void Serve() {
    for (;;) {
      int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) return;  // shut down
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(connection, buffer, sizeof(buffer));
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      std::istringstream line(request);
      std::string method, path;
      line >> method >> path;
      {
        absl::MutexLock lock(&mutex_);
        requests_.push_back(method + " " + path);
      }
      auto file = files_.find(path);
      std::string body =
          file != files_.end() ? ReadFile(file->second) : std::string();
      std::string head =
          file != files_.end()
              ? "HTTP/1.1 200 OK\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n"
              : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n";
      head += "Connection: close\r\n\r\n";
      if (method == "HEAD") body.clear();
      std::string response = head + body;
      for (size_t sent = 0; sent < response.size();) {
        ssize_t n =
            write(connection, response.data() + sent, response.size() - sent);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      close(connection);
    }
  }

  const std::map<std::string, std::string> files_;
  int listener_ = -1;
  std::string url_;
  std::thread server_;
  absl::Mutex mutex_;
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mutex_);
};

class SymbolizerDebuginfodTest : public SymbolizerTest {
 protected:
  void UseServer(const FakeDebuginfod& server) {
    setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);
    setenv("DEBUGINFOD_CACHE_PATH", (scratch_ / "debuginfod").c_str(), 1);
    setenv("DEBUGINFOD_TIMEOUT", "10", 1);
  }
  std::string DebuginfoPath() const {
    return "/buildid/" + build_id_ + "/debuginfo";
  }
};

TEST_F(SymbolizerDebuginfodTest, FetchesDebugInfoForAStrippedBinary) {
  FakeDebuginfod server(FakeDebuginfod::Files{
      {DebuginfoPath(), DataPath("symbolizer_test_program.debug")}});
  UseServer(server);
  auto symbolizer = Symbolizer::Create({});
  ExpectOuterChain(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().debuginfod_fetches, 1u);
  EXPECT_THAT(server.requests(), ::testing::Contains("GET " + DebuginfoPath()));
}

TEST_F(SymbolizerDebuginfodTest, FetchesAMissingBinary) {
  // Nothing on disk: the executable comes from the server.
  FakeDebuginfod server(
      FakeDebuginfod::Files{{"/buildid/" + build_id_ + "/executable",
                             DataPath("symbolizer_test_program")}});
  UseServer(server);
  auto symbolizer = Symbolizer::Create({});
  ExpectOuterChain(symbolizer->Symbolize(
      Module("/nonexistent/ringprof/symbolizer_test_program"),
      facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().debuginfod_fetches, 1u);
}

TEST_F(SymbolizerDebuginfodTest, RejectsAServedFileWithAnotherBuildId) {
  FakeDebuginfod server(
      FakeDebuginfod::Files{{DebuginfoPath(), "/proc/self/exe"}});
  UseServer(server);
  auto symbolizer = Symbolizer::Create({});
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_EQ(symbolizer->stats().debuginfod_fetches, 0u);
  EXPECT_GE(symbolizer->stats().build_id_mismatches, 1u);
}

TEST_F(SymbolizerDebuginfodTest, DisabledMeansNoRequests) {
  FakeDebuginfod server(FakeDebuginfod::Files{
      {DebuginfoPath(), DataPath("symbolizer_test_program.debug")}});
  UseServer(server);
  SymbolizerOptions options;
  options.use_debuginfod = false;
  auto symbolizer = Symbolizer::Create(options);
  ExpectFunctionStartOnly(symbolizer->Symbolize(
      Module(DataPath("stripped/symbolizer_test_program")),
      facts_.outer_return_address, AddressKind::kReturnAddress));
  EXPECT_THAT(server.requests(), IsEmpty());
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
