#include "collector/symbolize/symbol_table.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "collector/symbolize/module_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

namespace fs = std::filesystem;

// libdwfl's answer (what the collector used before it had SymbolTable) as
// the referee: dwfl_module_addrinfo scans the whole table per address.
class DwflReferee {
 public:
  explicit DwflReferee(const std::string& path) {
    static char* debuginfo_path = nullptr;
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = [](Dwfl_Module*, void**, const char*,
                                   Dwarf_Addr, const char*, const char*,
                                   GElf_Word, char**) { return -1; };
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &debuginfo_path;
    dwfl_ = dwfl_begin(&callbacks_);
    module_ = dwfl_report_elf(dwfl_, path.c_str(), path.c_str(), -1, 0, false);
    dwfl_report_end(dwfl_, nullptr, nullptr);
  }
  ~DwflReferee() { dwfl_end(dwfl_); }
  bool ok() const { return module_ != nullptr; }
  std::string Name(uint64_t address) {
    GElf_Off offset;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(module_, address, &offset, &sym,
                                            nullptr, nullptr, nullptr);
    return name != nullptr ? name : "";
  }

 private:
  Dwfl_Callbacks callbacks_ = {};
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
};

// Executable sections' ranges of `elf`.
std::vector<std::pair<uint64_t, uint64_t>> TextRanges(Elf* elf) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) != nullptr && (shdr.sh_flags & SHF_ALLOC) &&
        (shdr.sh_flags & SHF_EXECINSTR) && shdr.sh_size > 0) {
      ranges.emplace_back(shdr.sh_addr, shdr.sh_addr + shdr.sh_size);
    }
  }
  return ranges;
}

// Real binaries of different shapes: full .symtab (this test), .dynsym only
// (Debian's libc), a huge .dynsym (libLLVM), an executable exporting its
// API (python3).
class AgreesWithLibdwflTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AgreesWithLibdwflTest, OnAddressesSpreadOverTheText) {
  std::string path = GetParam();
  if (path == "self") path = fs::read_symlink("/proc/self/exe").string();
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  absl::StatusOr<UniqueFd> fd = OpenRegularFile(path);
  ASSERT_TRUE(fd.ok()) << fd.status();
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::Open(std::move(*fd), uint64_t{4} << 30);
  ASSERT_TRUE(file.ok()) << file.status();
  SymbolTable table;
  if (!table.AddSymbols((*file)->elf(), SHT_SYMTAB)) {
    ASSERT_TRUE(table.AddSymbols((*file)->elf(), SHT_DYNSYM));
  }
  table.Finish();
  ASSERT_GT(table.symbols(), 0u);
  DwflReferee referee(path);
  ASSERT_TRUE(referee.ok());

  // 1,000 addresses over all executable sections, evenly (libdwfl takes
  // ~10 ms per address on libLLVM).
  const auto ranges = TextRanges((*file)->elf());
  uint64_t text_bytes = 0;
  for (const auto& [low, high] : ranges) text_bytes += high - low;
  int compared = 0, named = 0, mismatches = 0;
  for (const auto& [low, high] : ranges) {
    const uint64_t count = (high - low) * 1000 / text_bytes;
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t address = low + (high - low) * i / count;
      SymbolTable::Hit hit;
      const std::string ours =
          table.Lookup(address, &hit) && hit.name != nullptr ? hit.name : "";
      const std::string theirs = referee.Name(address);
      ++compared;
      named += !ours.empty();
      if (ours != theirs && ++mismatches <= 5) {
        ADD_FAILURE() << absl::StrFormat("%s at 0x%x: ours '%s', dwfl '%s'",
                                         path, address, ours, theirs);
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << compared;
  EXPECT_GT(named, compared / 10);
}

INSTANTIATE_TEST_SUITE_P(
    Binaries, AgreesWithLibdwflTest,
    ::testing::Values("self", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                      "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
                      "/usr/bin/python3.11"),
    [](const auto& info) {
      std::string name = fs::path(info.param).filename().string();
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(SymbolTableTest, FunctionStartsComeFromEhFrame) {
  // The same binary indexed twice: its full .symtab, and only .eh_frame.
  // Every symbol-table function with an FDE starts where .eh_frame says.
  const std::string path = fs::read_symlink("/proc/self/exe").string();
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::Open(*OpenRegularFile(path), uint64_t{4} << 30);
  ASSERT_TRUE(file.ok());
  SymbolTable symbols, starts;
  ASSERT_TRUE(symbols.AddSymbols((*file)->elf(), SHT_SYMTAB));
  ASSERT_TRUE(starts.AddFunctionStarts((*file)->elf()));
  symbols.Finish();
  starts.Finish();
  ASSERT_GT(starts.function_starts(), 500u);
  int agree = 0, compared = 0;
  for (const auto& [low, high] : TextRanges((*file)->elf())) {
    for (uint64_t address = low; address < high; address += 97) {
      SymbolTable::Hit by_symbol, by_fde;
      if (!symbols.Lookup(address, &by_symbol) ||
          !starts.Lookup(address, &by_fde)) {
        continue;
      }
      EXPECT_EQ(by_fde.name, nullptr);
      ++compared;
      agree += by_symbol.start == by_fde.start;
    }
  }
  // Cold parts (".cold" clones) have FDEs and symbols of their own; a few
  // symbols cover code whose FDE starts elsewhere (aliases, thunks).
  EXPECT_GT(compared, 500);
  EXPECT_GT(agree, compared * 95 / 100) << agree << " of " << compared;
}

// .eh_frame_hdr's search table gives the functions the walk over every FDE
// of .eh_frame gives, on binaries of different linkers and sizes.
class EhFrameHdrTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EhFrameHdrTest, AgreesWithTheWalkOverEhFrame) {
  std::string path = GetParam();
  if (path == "self") path = fs::read_symlink("/proc/self/exe").string();
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::Open(*OpenRegularFile(path), uint64_t{4} << 30);
  ASSERT_TRUE(file.ok()) << file.status();
  SymbolTable by_table, by_walk;
  ASSERT_TRUE(by_table.AddFunctionStarts((*file)->elf()));
  ASSERT_TRUE(
      by_walk.AddFunctionStarts((*file)->elf(), /*use_eh_frame_hdr=*/false));
  by_table.Finish();
  by_walk.Finish();
  ASSERT_GT(by_table.function_starts(), 100u);
  int compared = 0, mismatches = 0;
  for (const auto& [low, high] : TextRanges((*file)->elf())) {
    const uint64_t step = std::max<uint64_t>(1, (high - low) / 20000);
    for (uint64_t address = low; address < high; address += step) {
      SymbolTable::Hit a, b;
      const bool found_a = by_table.Lookup(address, &a);
      const bool found_b = by_walk.Lookup(address, &b);
      ++compared;
      if ((found_a != found_b || a.start != b.start) && ++mismatches <= 5) {
        ADD_FAILURE() << absl::StrFormat(
            "%s at 0x%x: table %d 0x%x, walk %d 0x%x", path, address, found_a,
            a.start, found_b, b.start);
      }
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_EQ(mismatches, 0) << "of " << compared;
}

INSTANTIATE_TEST_SUITE_P(
    Binaries, EhFrameHdrTest,
    ::testing::Values("self", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                      "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
                      "/usr/bin/python3.11"),
    [](const auto& info) {
      std::string name = fs::path(info.param).filename().string();
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace collector
}  // namespace ringprof
