// Reads of a mapping whose file is truncated under it: the guard turns the
// SIGBUS into a failed read (guarded_memory.h), faults outside the guard stay
// fatal, and the ring reader survives a writer that truncates and rewrites
// its file in a loop.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "ringfile/format.h"
#include "ringfile/guarded_memory.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace {

using ::ringprof::ringfile::testing::AppendFixed;
using ::ringprof::ringfile::testing::TempRingPath;
using ::ringprof::ringfile::testing::TestWriterOptions;

constexpr size_t kPage = 4096;

// A two-page file mapped shared, then truncated to `keep` bytes.
struct TruncatedMapping {
  explicit TruncatedMapping(size_t keep) {
    path = TempRingPath("truncated");
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, 2 * kPage), 0);
    base = static_cast<uint8_t*>(
        mmap(nullptr, 2 * kPage, PROT_READ, MAP_SHARED, fd, 0));
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(ftruncate(fd, keep), 0);
  }
  ~TruncatedMapping() {
    munmap(base, 2 * kPage);
    close(fd);
    unlink(path.c_str());
  }
  std::string path;
  int fd = -1;
  uint8_t* base = nullptr;
};

TEST(GuardedMemoryTest, TruncatedPagesFailInsteadOfKilling) {
  TruncatedMapping mapping(kPage);  // second page gone
  const uint64_t faults = GuardedFaults();
  uint8_t out[64];
  EXPECT_TRUE(GuardedCopy(out, mapping.base, sizeof(out)));
  EXPECT_FALSE(GuardedCopy(out, mapping.base + kPage, sizeof(out)));
  // A copy straddling the end fails too.
  EXPECT_FALSE(GuardedCopy(out, mapping.base + kPage - 32, sizeof(out)));
  uint64_t word = 1;
  EXPECT_FALSE(GuardedLoadAcquire(
      reinterpret_cast<const uint64_t*>(mapping.base + kPage), &word));
  EXPECT_EQ(word, 1u);  // untouched on failure
  EXPECT_TRUE(GuardedLoadAcquire(
      reinterpret_cast<const uint64_t*>(mapping.base), &word));
  EXPECT_EQ(GuardedFaults(), faults + 3);
  // Still works after recovering (SIGBUS not left blocked).
  EXPECT_FALSE(GuardedCopy(out, mapping.base + kPage, 8));
  EXPECT_EQ(GuardedFaults(), faults + 4);
}

TEST(GuardedMemoryDeathTest, FaultsOutsideTheGuardStayFatal) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  TruncatedMapping mapping(0);
  uint8_t out[8];
  ASSERT_FALSE(GuardedCopy(out, mapping.base, sizeof(out)));  // installed
  // Unguarded read.
  EXPECT_DEATH(
      {
        volatile uint8_t v = mapping.base[0];
        (void)v;
      },
      "");
  // Guarded, but the fault is outside the guarded range.
  TruncatedMapping other(0);
  struct Args {
    const uint8_t* p;
  } args{other.base};
  EXPECT_DEATH(
      {
        GuardedCall(
            mapping.base, kPage,
            [](void* a) {
              volatile uint8_t v = static_cast<Args*>(a)->p[0];
              (void)v;
            },
            &args);
      },
      "");
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + ts.tv_nsec;
}

class CountingVisitor : public RecordVisitor {
 public:
  void OnRecord(const RecordView&) override { ++count; }
  uint64_t count = 0;
};

// A hostile writer truncates its ring file and writes it back, in a loop,
// while we open and poll it: every outcome is a Status, never a SIGBUS.
TEST(TruncationTest, ReaderSurvivesATruncateAndRewriteLoop) {
  const std::string path = TempRingPath("truncate_loop");
  RingWriter writer;
  ASSERT_EQ(writer.Create(TestWriterOptions(path)), 0);
  ThreadExit record = {};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(AppendFixed(writer, RecordType::kThreadExit, record, i));
  }
  writer.Close();
  std::vector<uint8_t> content;
  {
    const int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    content.resize(static_cast<size_t>(lseek(fd, 0, SEEK_END)));
    ASSERT_EQ(pread(fd, content.data(), content.size(), 0),
              static_cast<ssize_t>(content.size()));
    close(fd);
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = open(path.c_str(), O_RDWR);
    for (;;) {
      if (ftruncate(fd, 0) != 0) _exit(2);
      if (ftruncate(fd, content.size()) != 0) _exit(2);
      if (pwrite(fd, content.data(), content.size(), 0) < 0) _exit(2);
    }
  }
  const uint64_t faults = GuardedFaults();
  const uint64_t until = NowNs() + 2'000'000'000u;
  int opened = 0, errors = 0, polls_ok = 0;
  CountingVisitor visitor;
  while (NowNs() < until) {
    absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
    if (!reader.ok()) {
      ++errors;
      continue;
    }
    ++opened;
    PollOptions options;
    options.writer_dead = true;
    for (int i = 0; i < 50; ++i) {
      PollStats stats;
      if (!(*reader)->Poll(options, visitor, stats).ok()) {
        ++errors;
        break;
      }
      ++polls_ok;
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the truncating child failed";
  RecordProperty("opened", opened);
  RecordProperty("errors", errors);
  RecordProperty("guarded_faults", GuardedFaults() - faults);
  EXPECT_GT(opened + errors, 0);
  unlink(path.c_str());
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
