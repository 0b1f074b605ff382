#include "collector/base/file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

TEST(FileTest, WritesAtomicallyAndReadsBack) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/atomic";
  ASSERT_TRUE(MakeDirs(dir + "/a/b", 0700).ok());
  const std::string path = dir + "/a/b/file";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  WriteOptions durable;
  durable.mode = 0600;
  durable.durable = true;
  ASSERT_TRUE(WriteFileAtomically(path, "second", durable).ok());
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "second");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file is left behind.
  EXPECT_EQ(List(dir + "/a/b"), std::vector<std::string>{"file"});
  EXPECT_TRUE(absl::IsDataLoss(ReadFile(path, 3).status()));
}

TEST(FileTest, FailuresNameThePathAndLeaveNothing) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/fail";
  ASSERT_TRUE(MakeDirs(dir, 0700).ok());
  // The target is a directory: the rename fails.
  ASSERT_TRUE(MakeDirs(dir + "/target/inside", 0700).ok());
  absl::Status status = WriteFileAtomically(dir + "/target", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(dir + "/target"), absl::string_view::npos)
      << status;
  EXPECT_EQ(List(dir), std::vector<std::string>{"target"});
  absl::StatusOr<std::string> missing = ReadFile(dir + "/missing");
  EXPECT_NE(missing.status().message().find("missing"),
            absl::string_view::npos);
}

TEST(FileTest, ReadRegularFileRefusesWhatIsNotARegularFileOfItsSize) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/regular";
  ASSERT_TRUE(MakeDirs(dir, 0700).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/small", "12345").ok());
  EXPECT_EQ(ReadRegularFile(dir + "/small", 5).value(), "12345");
  EXPECT_TRUE(absl::IsDataLoss(ReadRegularFile(dir + "/small", 4).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadRegularFile(dir + "/none", 4).status()));
  // A FIFO without a writer: refused at once, never waited on.
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_TRUE(
      absl::IsFailedPrecondition(ReadRegularFile(dir + "/fifo", 4).status()));
  EXPECT_TRUE(
      absl::IsFailedPrecondition(ReadRegularFile("/dev/zero", 4).status()));
  ASSERT_EQ(symlink((dir + "/small").c_str(), (dir + "/link").c_str()), 0);
  EXPECT_EQ(ReadRegularFile(dir + "/link", 5).value(), "12345");
  EXPECT_FALSE(
      ReadRegularFile(dir + "/link", 5, /*follow_symlinks=*/false).ok());
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
