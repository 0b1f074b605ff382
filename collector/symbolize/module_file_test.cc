#include "collector/symbolize/module_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

namespace fs = std::filesystem;

// A directory standing for a workload's root, holding a few files, with a
// secret outside it that no path may reach.
class OpenInRootTest : public ::testing::TestWithParam<RootResolution> {
 protected:
  void SetUp() override {
    std::string pattern =
        (fs::path(getenv("TEST_TMPDIR")) / "root.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    scratch_ = pattern;
    root_ = scratch_ / "root";
    fs::create_directories(root_ / "usr/lib");
    fs::create_directories(root_ / "etc");
    Write(root_ / "usr/lib/libinside.so", "inside");
    Write(root_ / "etc/secret", "the workload's own");
    Write(scratch_ / "secret", "the collector's");
    root_fd_ = UniqueFd(open(root_.c_str(), O_PATH | O_DIRECTORY));
    ASSERT_TRUE(root_fd_.valid());
  }
  void TearDown() override { fs::remove_all(scratch_); }

  static void Write(const fs::path& path, const std::string& contents) {
    std::ofstream(path) << contents;
  }

  // The contents of what `path` opens to inside the root, or the error.
  std::string Read(const std::string& path) {
    absl::StatusOr<UniqueFd> fd = OpenInRoot(root_fd_.get(), path, GetParam());
    if (!fd.ok()) return "error: " + std::string(fd.status().message());
    char buffer[64] = {};
    ssize_t n = pread(fd->get(), buffer, sizeof(buffer) - 1, 0);
    return n < 0 ? "read error" : std::string(buffer, n);
  }

  fs::path scratch_;
  fs::path root_;
  UniqueFd root_fd_;
};

TEST_P(OpenInRootTest, OpensAPathInsideTheRoot) {
  EXPECT_EQ(Read("/usr/lib/libinside.so"), "inside");
  EXPECT_EQ(Read("usr//lib/./libinside.so"), "inside");
}

TEST_P(OpenInRootTest, DotDotStopsAtTheRoot) {
  // "/../secret" is the root's /secret (absent), never the one beside it.
  EXPECT_THAT(Read("/../secret"), ::testing::StartsWith("error"));
  EXPECT_EQ(Read("/../../etc/secret"), "the workload's own");
  EXPECT_EQ(Read("/usr/../usr/lib/../lib/libinside.so"), "inside");
}

TEST_P(OpenInRootTest, SymlinksResolveInsideTheRoot) {
  // Absolute: relative to the root. Relative: from the link's directory.
  fs::create_symlink("/etc/secret", root_ / "usr/lib/absolute");
  fs::create_symlink("../../etc/secret", root_ / "usr/lib/relative");
  fs::create_symlink("../../../../secret", root_ / "usr/lib/climbing");
  fs::create_symlink(scratch_ / "secret", root_ / "usr/lib/outside");
  fs::create_symlink("/usr", root_ / "usr_link");
  EXPECT_EQ(Read("/usr/lib/absolute"), "the workload's own");
  EXPECT_EQ(Read("/usr/lib/relative"), "the workload's own");
  EXPECT_THAT(Read("/usr/lib/climbing"), ::testing::StartsWith("error"));
  EXPECT_THAT(Read("/usr/lib/outside"), ::testing::StartsWith("error"));
  EXPECT_EQ(Read("/usr_link/lib/libinside.so"), "inside");
}

TEST_P(OpenInRootTest, SymlinkLoopsFail) {
  fs::create_symlink("/loop_b", root_ / "loop_a");
  fs::create_symlink("/loop_a", root_ / "loop_b");
  EXPECT_THAT(Read("/loop_a"), ::testing::StartsWith("error"));
}

TEST_P(OpenInRootTest, OnlyRegularFilesAndNeverBlocks) {
  // A FIFO with no writer would block a plain open() forever.
  ASSERT_EQ(mkfifo((root_ / "fifo").c_str(), 0600), 0);
  EXPECT_THAT(Read("/fifo"), ::testing::HasSubstr("not a regular file"));
  EXPECT_THAT(Read("/usr/lib"), ::testing::StartsWith("error"));
}

TEST_P(OpenInRootTest, MagicLinksAreNotFollowedOutOfTheRoot) {
  // /proc/self/root inside the workload's root is its own business; a
  // symlink to the collector's /proc would be a magic link out of it.
  fs::create_symlink("/proc/self/root/" + (scratch_ / "secret").string(),
                     root_ / "magic");
  EXPECT_THAT(Read("/magic"), ::testing::StartsWith("error"));
}

INSTANTIATE_TEST_SUITE_P(Resolutions, OpenInRootTest,
                         ::testing::Values(RootResolution::kAuto,
                                           RootResolution::kWalkOnly),
                         [](const auto& info) {
                           return info.param == RootResolution::kAuto
                                      ? std::string("Auto")
                                      : std::string("WalkOnly");
                         });

TEST(ElfFileTest, RejectsWhatIsNotASoundElf) {
  std::string pattern =
      (fs::path(getenv("TEST_TMPDIR")) / "elf.XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  auto open_elf = [](const fs::path& path, uint64_t max_bytes) {
    absl::StatusOr<UniqueFd> fd = OpenRegularFile(path.string());
    if (!fd.ok()) return fd.status();
    return ElfFile::Open(std::move(*fd), max_bytes).status();
  };
  // Text, a sparse 64 GiB file, the first half of a real ELF.
  std::ofstream(dir / "text") << "root:*:19000:0:99999:7:::\n";
  EXPECT_FALSE(open_elf(dir / "text", 1 << 30).ok());
  {
    UniqueFd sparse(open((dir / "sparse").c_str(), O_CREAT | O_WRONLY, 0600));
    ASSERT_EQ(ftruncate(sparse.get(), off_t{64} << 30), 0);
  }
  absl::Status sparse = open_elf(dir / "sparse", uint64_t{2} << 30);
  EXPECT_TRUE(absl::IsResourceExhausted(sparse)) << sparse;
  const uint64_t self_size = fs::file_size("/proc/self/exe");
  fs::copy_file("/proc/self/exe", dir / "half");
  fs::resize_file(dir / "half", self_size / 2);
  EXPECT_FALSE(open_elf(dir / "half", uint64_t{2} << 30).ok());
  // All but the last section header: libelf would report no sections at
  // all.
  fs::copy_file("/proc/self/exe", dir / "short");
  fs::resize_file(dir / "short", self_size - 1);
  absl::Status short_file = open_elf(dir / "short", uint64_t{2} << 30);
  EXPECT_THAT(short_file.message(),
              ::testing::HasSubstr("section headers outside the file"));
  EXPECT_TRUE(open_elf("/proc/self/exe", uint64_t{2} << 30).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(open_elf("/proc/self/exe", 4096)));
  // The same from memory.
  std::string image(self_size, '\0');
  std::ifstream("/proc/self/exe", std::ios::binary)
      .read(image.data(), static_cast<std::streamsize>(image.size()));
  EXPECT_TRUE(ElfFile::FromMemory(image).ok());
  image.pop_back();
  EXPECT_FALSE(ElfFile::FromMemory(image).ok());
  EXPECT_FALSE(ElfFile::FromMemory("").ok());
  EXPECT_FALSE(ElfFile::FromMemory("\x7f"
                                   "ELF")
                   .ok());
  // Devices are refused before libelf sees them.
  EXPECT_FALSE(OpenRegularFile("/dev/zero").ok());
  fs::remove_all(dir);
}

// The contents and header of `name` in the ELF at `path`, once detached.
struct DetachedSection {
  std::string bytes;
  GElf_Xword flags = 0;
};
DetachedSection DetachedSectionOf(const std::string& path,
                                  absl::string_view name) {
  absl::StatusOr<UniqueFd> fd = OpenRegularFile(path);
  EXPECT_TRUE(fd.ok()) << fd.status();
  if (!fd.ok()) return {};
  absl::StatusOr<std::unique_ptr<ElfFile>> file =
      ElfFile::Open(std::move(*fd), uint64_t{1} << 30);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return {};
  (*file)->DetachFile();
  Elf_Scn* scn = (*file)->Section(name);
  EXPECT_NE(scn, nullptr) << name;
  if (scn == nullptr) return {};
  GElf_Shdr shdr;
  EXPECT_NE(gelf_getshdr(scn, &shdr), nullptr);
  Elf_Data* data = elf_getdata(scn, nullptr);
  EXPECT_NE(data, nullptr);
  if (data == nullptr) return {};
  return {std::string(static_cast<const char*>(data->d_buf), data->d_size),
          shdr.sh_flags};
}

TEST(ElfFileTest, CompressedDwarfSectionsAreInflatedWhenDetached) {
  const std::string dir = "collector/symbolize/testdata/symbolizer/";
  for (absl::string_view name : {".debug_info", ".debug_line", ".debug_str"}) {
    const DetachedSection plain =
        DetachedSectionOf(dir + "symbolizer_test_program", name);
    const DetachedSection inflated =
        DetachedSectionOf(dir + "compressed/symbolizer_test_program", name);
    ASSERT_FALSE(plain.bytes.empty()) << name;
    EXPECT_EQ(inflated.flags & SHF_COMPRESSED, 0u) << name;
    EXPECT_TRUE(inflated.bytes == plain.bytes) << name;
  }
  // A stream that does not inflate to its declared size is left as it was
  // (compressed, for libdw to refuse).
  const DetachedSection corrupt = DetachedSectionOf(
      dir + "compressed_corrupt/symbolizer_test_program", ".debug_info");
  EXPECT_NE(corrupt.flags & SHF_COMPRESSED, 0u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
