// The off-CPU sample source in a real session of the test process: waits
// handed to SampleWait from several threads at once (the thread sanitizer
// configuration checks its races) become WaitSample records whose weights
// add up to the waits, with the caller's stack and kind; descriptor kinds
// are learned and forgotten.
#include "emitter/wait_sampler.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "emitter/fd_class.h"
#include "emitter/session.h"
#include "gtest/gtest.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr uint64_t kRateNs = 50'000;

// A wait of `wait_ns` that "began" that long ago, as an interposer would
// report it. The sampler reads the clock itself, so the wait it measures
// is `wait_ns` plus the time until that read (a preempted thread, a slow
// sanitizer build); returned is an upper bound of it, the time from the
// wait's start to the sampler's return.
__attribute__((noinline)) uint64_t WaitedInThisFunction(ringfile::WaitKind kind,
                                                        uint64_t wait_ns) {
  const uint64_t start = MonotonicNowNs() - wait_ns;
  SampleWait(kind, start);
  return MonotonicNowNs() - start;
}

TEST(WaitSamplerTest, ConcurrentWaitsSumToTheirTotals) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/waits";
  setenv("RINGPROF_DIR", dir.c_str(), 1);
  setenv("RINGPROF_RING_KIB", "65536", 1);
  setenv("RINGPROF_MIN_SAMPLES_PER_SEC", "0", 1);
  setenv("RINGPROF_CPU_HZ", "0", 1);
  StartSession();
  CreatePendingRing();
  ASSERT_TRUE(Enabled());
  StartWaitProfiles(kRateNs, kRateNs, true);
  ASSERT_TRUE(WaitProfileOn(ringfile::WaitKind::kLock));
  ASSERT_TRUE(WaitProfileOn(ringfile::WaitKind::kBlock));

  // Per thread: 2000 lock waits of 1..40 us (mostly below the rate) and
  // 50 block waits of 200 us (above it: always kept).
  constexpr int kThreads = 4;
  uint64_t true_lock_ns = 0;
  for (int i = 0; i < 2000; ++i) true_lock_ns += 1000 * (1 + i % 40);
  true_lock_ns *= kThreads;
  const uint64_t true_block_ns = uint64_t{kThreads} * 50 * 200'000;
  // What the sampler measured lies between the waits as given and these.
  std::atomic<uint64_t> upper_lock_ns{0}, upper_block_ns{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&upper_lock_ns, &upper_block_ns] {
      for (int i = 0; i < 2000; ++i) {
        upper_lock_ns += WaitedInThisFunction(ringfile::WaitKind::kLock,
                                              1000 * (1 + i % 40));
        if (i % 40 == 0) {
          upper_block_ns +=
              WaitedInThisFunction(ringfile::WaitKind::kBlock, 200'000);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  double lock_ns = 0, block_ns = 0;
  int block_samples = 0;
  auto records =
      ringfile::testing::ReadAllRecords(ringfile::testing::RingFileIn(dir));
  ASSERT_TRUE(records.ok()) << records.status();
  const uint64_t here = reinterpret_cast<uintptr_t>(&WaitedInThisFunction);
  for (const auto& record : *records) {
    if (record.type != ringfile::RecordType::kWaitSample) continue;
    auto sample = ringfile::DecodeWaitSample(record.view());
    ASSERT_TRUE(sample.ok()) << sample.status();
    ASSERT_GE(sample->frames.size(), 1u);
    EXPECT_EQ(sample->head.sample_ns, kRateNs);
    // The leaf is the function that reported the wait.
    EXPECT_GE(sample->frames[0], here);
    EXPECT_LT(sample->frames[0], here + 256);
    const double weight = static_cast<double>(
        std::max<uint64_t>(sample->head.wait_ns, sample->head.sample_ns));
    if (sample->head.kind == static_cast<uint16_t>(ringfile::WaitKind::kLock)) {
      lock_ns += weight;
    } else {
      block_ns += weight;
      ++block_samples;
      EXPECT_GE(sample->head.wait_ns, 200'000u);
    }
  }
  EXPECT_EQ(block_samples, kThreads * 50);
  // Block waits are all kept: their sum is what the sampler measured.
  EXPECT_GE(block_ns, true_block_ns);
  EXPECT_LE(block_ns, upper_block_ns.load());
  // 8000 waits, ~1/3 of them kept: the estimate is within a few percent
  // of what was measured (sampling error: sqrt(sum of d * (rate - d)) over
  // the sum of d, 1.2%).
  EXPECT_GE(lock_ns, 0.9 * true_lock_ns);
  EXPECT_LE(lock_ns, 1.1 * upper_lock_ns.load());
}

TEST(FdClassTest, KindsAreLearnedAndForgotten) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_TRUE(FdMayBlock(fds[0]));
  char path[] = "/tmp/ringprof-fdclass-XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  EXPECT_FALSE(FdMayBlock(file));
  // The number reused for a pipe once forgotten.
  ASSERT_EQ(dup2(fds[0], file), file);
  EXPECT_FALSE(FdMayBlock(file));  // cached: dup2 was not the interposer
  ForgetFd(file);
  EXPECT_TRUE(FdMayBlock(file));
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  EXPECT_FALSE(FdMayBlock(fds[1]));
  errno = 0;
  EXPECT_FALSE(FdMayBlock(1000));  // not open: not timed, errno kept
  EXPECT_EQ(errno, 0);
  EXPECT_FALSE(FdMayBlock(-1));
  EXPECT_FALSE(FdMayBlock(kFdClassSlots));
  close(fds[0]);
  close(fds[1]);
  close(file);
}

// A number that never waits keeps that answer however often it is called
// (until forgotten); pipes, sockets and terminals are re-read within
// kFdRecheckCalls calls, as fcntl changes O_NONBLOCK unseen.
TEST(FdClassTest, OnlyKindsThatCanChangeAreReread) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  char path[] = "/tmp/ringprof-fdclass-XXXXXX";
  const int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  for (int fd : {fds[0], fds[1], file}) ForgetFd(fd);  // as the interposers
  ASSERT_FALSE(FdMayBlock(file));
  ASSERT_EQ(dup2(fds[0], file), file);  // unseen: dup2 is not the interposer
  for (uint32_t i = 0; i <= 2 * kFdRecheckCalls; ++i) {
    ASSERT_FALSE(FdMayBlock(file)) << i;
  }

  ASSERT_TRUE(FdMayBlock(fds[0]));
  ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  uint32_t calls = 1;
  while (FdMayBlock(fds[0]) && calls <= kFdRecheckCalls) ++calls;
  EXPECT_LE(calls, kFdRecheckCalls);  // seen non-blocking

  ASSERT_EQ(fcntl(fds[0], F_SETFL, 0), 0);
  calls = 1;
  while (!FdMayBlock(fds[0]) && calls <= kFdRecheckCalls) ++calls;
  EXPECT_LE(calls, kFdRecheckCalls);  // seen blocking again
  close(fds[0]);
  close(fds[1]);
  close(file);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
