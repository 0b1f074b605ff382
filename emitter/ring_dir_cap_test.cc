// The ring directory cap: what is deleted, in which order, and what never is.
#include "emitter/ring_dir_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr uint64_t kFileSize = 64 * 1024;

// A pid that is certainly gone: a child that was reaped.
uint32_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return static_cast<uint32_t>(pid);
}

class RingDirCapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(getenv("TEST_TMPDIR")) + "/cap_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  }

  // A complete ring file header (the rest zero), fully allocated, or
  // `sparse` (sized, its slots' blocks not reserved yet, as the emitter's
  // rings start natively).
  void WriteRing(const std::string& name, uint32_t pid, uint64_t start_ticks,
                 bool ended, uint64_t created_ns, bool ready = true,
                 bool sparse = false) {
    ringfile::FileHeader header;
    memset(static_cast<void*>(&header), 0, sizeof(header));
    memcpy(header.magic, ringfile::kMagic, sizeof(header.magic));
    header.pid = pid;
    header.process_start_ticks = start_ticks;
    header.flags.store(ended ? ringfile::kFlagProcessEnded : 0);
    header.created_realtime_ns = created_ns;
    header.ready.store(ready ? ringfile::kReadyMagic : 0);
    const std::string path = dir_ + "/" + name;
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    if (sparse) {
      ASSERT_EQ(ftruncate(fd, kFileSize), 0);
    } else {
      ASSERT_EQ(posix_fallocate(fd, 0, kFileSize), 0);
    }
    ASSERT_EQ(pwrite(fd, &header, sizeof(header), 0),
              static_cast<ssize_t>(sizeof(header)));
    close(fd);
  }

  bool Exists(const std::string& name) {
    return access((dir_ + "/" + name).c_str(), F_OK) == 0;
  }

  std::string dir_;
};

TEST_F(RingDirCapTest, UnderTheCapNothingIsDeleted) {
  WriteRing("a.1.1.ring", DeadPid(), 1, true, 1);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 10 * kFileSize, kFileSize), 0);
  EXPECT_TRUE(Exists("a.1.1.ring"));
}

TEST_F(RingDirCapTest, NoCapMeansNoLimit) {
  WriteRing("a.1.1.ring", DeadPid(), 1, true, 1);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 0, uint64_t{1} << 40), 0);
  EXPECT_TRUE(Exists("a.1.1.ring"));
}

TEST_F(RingDirCapTest, EndedRingsOfGoneProcessesGoFirstOldestFirst) {
  const uint32_t dead = DeadPid();
  WriteRing("crashed.ring", dead, 7, /*ended=*/false, /*created=*/1);
  WriteRing("ended_old.ring", dead, 7, true, 2);
  WriteRing("ended_new.ring", dead, 7, true, 3);
  // Room for one more next to two: exactly one ring must go.
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 3 * kFileSize, kFileSize), 0);
  EXPECT_FALSE(Exists("ended_old.ring"));
  EXPECT_TRUE(Exists("ended_new.ring"));
  EXPECT_TRUE(Exists("crashed.ring"));
  // Two must go: the other ended one, then the crashed one.
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 1 * kFileSize, kFileSize), 0);
  EXPECT_FALSE(Exists("ended_new.ring"));
  EXPECT_FALSE(Exists("crashed.ring"));
}

// A ring whose slots are not reserved yet will be: it counts at its size.
TEST_F(RingDirCapTest, ASparseRingCountsAtItsFullSize) {
  const uint32_t self = static_cast<uint32_t>(getpid());
  const uint64_t ticks = ProcessStartTicks(0);
  WriteRing("live_sparse.ring", self, ticks, false, 1, true, /*sparse=*/true);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/live_sparse.ring").c_str(), &st), 0);
  ASSERT_LT(static_cast<uint64_t>(st.st_blocks) * 512, kFileSize);
  // Counted at its blocks, two would fit under a cap of two files.
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 2 * kFileSize - 1, kFileSize),
            EDQUOT);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 2 * kFileSize, kFileSize), 0);
  EXPECT_TRUE(Exists("live_sparse.ring"));
}

TEST_F(RingDirCapTest, LiveRingsAreNeverDeleted) {
  const uint32_t self = static_cast<uint32_t>(getpid());
  const uint64_t ticks = ProcessStartTicks(0);
  ASSERT_NE(ticks, 0u);
  EXPECT_EQ(ProcessStartTicks(self), ticks);
  WriteRing("live_ended.ring", self, ticks, true, 1);
  WriteRing("live.ring", self, ticks, false, 2);
  WriteRing("half_made.ring", DeadPid(), 7, true, 0, /*ready=*/false);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 2 * kFileSize, kFileSize), EDQUOT);
  EXPECT_TRUE(Exists("live_ended.ring"));
  EXPECT_TRUE(Exists("live.ring"));
  EXPECT_TRUE(Exists("half_made.ring"));
}

TEST_F(RingDirCapTest, AReusedPidCountsAsGone) {
  const uint32_t self = static_cast<uint32_t>(getpid());
  WriteRing("reused.ring", self, ProcessStartTicks(0) + 12345, true, 1);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), kFileSize, kFileSize), 0);
  EXPECT_FALSE(Exists("reused.ring"));
}

TEST_F(RingDirCapTest, OtherFilesAreNeitherCountedNorDeleted) {
  const std::string other = dir_ + "/notes.txt";
  const int fd = open(other.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(posix_fallocate(fd, 0, 4 * kFileSize), 0);
  close(fd);
  EXPECT_EQ(MakeRoomInRingDir(dir_.c_str(), 2 * kFileSize, kFileSize), 0);
  EXPECT_EQ(access(other.c_str(), F_OK), 0);
}

TEST_F(RingDirCapTest, AMissingDirectoryIsLeftToCreation) {
  EXPECT_EQ(
      MakeRoomInRingDir((dir_ + "/missing").c_str(), kFileSize, 2 * kFileSize),
      0);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
