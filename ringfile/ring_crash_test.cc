// Crash: a child process with 8 writer threads is SIGKILLed at a random
// moment (from before the file exists to after the last append), over many
// iterations. The reader, tailing concurrently and then draining with
// writer_dead, must recover every record whose TryAppend had returned, lose
// at most the one in-flight record per thread, never deliver a torn or
// duplicate record, and never hang.
//
// The rings are large enough that no record is ever overwritten, so
// "committed" is exact: a thread publishes seq + 1 in shared memory after
// each TryAppend returns true.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "ringfile/clock.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/stress_record.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace {

using ::ringprof::ringfile::testing::AppendStressRecord;
using ::ringprof::ringfile::testing::CheckStressRecord;
using ::ringprof::ringfile::testing::TempRingPath;

constexpr uint32_t kThreads = 8;
constexpr uint32_t kRings = 4;
constexpr uint32_t kSlotsPerRing = 4096;
constexpr uint32_t kSlotSize = 256;
constexpr uint32_t kMaxFrames = 20;
// Two threads per ring: 2 * 1500 < 4096 slots, so nothing is overwritten.
constexpr uint64_t kRecordsPerThread = 1500;
constexpr int kIterations = 30;
constexpr uint64_t kIterationDeadlineNs = 20'000'000'000;

uint64_t NowNs() { return ringfile::ClockNs(CLOCK_MONOTONIC); }

// Shared (MAP_SHARED | MAP_ANONYMOUS) between the test and its child.
struct Progress {
  std::atomic<uint64_t> committed[kThreads];  // seqs < this are committed
  std::atomic<uint64_t> failed_appends;       // must stay 0: no laps
};

[[noreturn]] void RunWriterProcess(const std::string& path,
                                   Progress* progress) {
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = kRings;
  options.slots_per_ring = kSlotsPerRing;
  options.slot_size = kSlotSize;
  RingWriter writer;
  if (writer.Create(options) != 0) _exit(2);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t seq = 0; seq < kRecordsPerThread; ++seq) {
        if (AppendStressRecord(writer, t, seq, kMaxFrames)) {
          progress->committed[t].store(seq + 1, std::memory_order_release);
        } else {
          progress->failed_appends.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Stay alive until killed, so every iteration ends with SIGKILL.
  for (;;) pause();
}

class RecoveringVisitor : public RecordVisitor {
 public:
  RecoveringVisitor() {
    for (auto& seen : delivered) seen.assign(kRecordsPerThread, false);
  }
  void OnRecord(const RecordView& record) override {
    uint32_t thread;
    uint64_t seq;
    if (!CheckStressRecord(record, &thread, &seq) || thread >= kThreads ||
        seq >= kRecordsPerThread) {
      ++corrupt;
      return;
    }
    if (delivered[thread][seq]) ++duplicates;
    delivered[thread][seq] = true;
  }
  std::vector<bool> delivered[kThreads];
  uint64_t corrupt = 0, duplicates = 0;
};

TEST(RingCrashTest, ReaderRecoversEveryCommittedRecordAfterSigkill) {
  auto* progress = static_cast<Progress*>(
      mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(progress, MAP_FAILED);
  // A fresh seed each run (printed on failure): kill points differ run to
  // run, and a failing one can be replayed.
  const uint64_t seed = std::random_device()();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  uint64_t total_delivered = 0, total_lost = 0, not_ready = 0;

  for (int iteration = 0; iteration < kIterations; ++iteration) {
    SCOPED_TRACE(iteration);
    new (progress) Progress();
    const std::string path = TempRingPath("crash");
    // The kill point, in committed records; a few iterations kill at once
    // (before or during Create).
    const uint64_t total = kThreads * kRecordsPerThread;
    const uint64_t kill_after =
        iteration % 6 == 0 ? 0 : rng() % (total + total / 4);

    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) RunWriterProcess(path, progress);
    const uint64_t deadline = NowNs() + kIterationDeadlineNs;

    RecoveringVisitor visitor;
    PollStats stats;
    PollOptions options;
    std::unique_ptr<RingReader> reader;
    // Tail while the writer runs, until its progress reaches the kill point.
    for (;;) {
      uint64_t committed = 0;
      for (auto& c : progress->committed) committed += c.load();
      if (committed >= std::min(kill_after, total)) break;
      ASSERT_LT(NowNs(), deadline) << "writer made no progress";
      if (reader == nullptr) {
        absl::StatusOr<std::unique_ptr<RingReader>> opened =
            RingReader::Open(path);
        if (opened.ok()) reader = std::move(*opened);
      } else {
        ASSERT_TRUE(reader->Poll(options, visitor, stats).ok());
      }
      sched_yield();
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    ASSERT_EQ(progress->failed_appends.load(), 0u);

    uint64_t committed_total = 0;
    for (auto& c : progress->committed) committed_total += c.load();
    if (reader == nullptr) {
      absl::StatusOr<std::unique_ptr<RingReader>> opened =
          RingReader::Open(path);
      if (!opened.ok()) {
        // Killed before the header was published: nothing was committed.
        ASSERT_TRUE(opened.status().code() == absl::StatusCode::kNotFound ||
                    opened.status().code() ==
                        absl::StatusCode::kFailedPrecondition)
            << opened.status();
        ASSERT_EQ(committed_total, 0u);
        ++not_ready;
        continue;
      }
      reader = std::move(*opened);
    }
    options.writer_dead = true;
    for (int poll = 0;; ++poll) {
      ASSERT_LT(poll, 1000) << "drain did not converge";
      const uint64_t before = stats.delivered + stats.lost;
      ASSERT_TRUE(reader->Poll(options, visitor, stats).ok());
      if (stats.delivered + stats.lost == before) break;
    }

    EXPECT_EQ(visitor.corrupt, 0u);
    EXPECT_EQ(visitor.duplicates, 0u);
    for (uint32_t t = 0; t < kThreads; ++t) {
      const uint64_t committed = progress->committed[t].load();
      for (uint64_t seq = 0; seq < committed; ++seq) {
        ASSERT_TRUE(visitor.delivered[t][seq])
            << "committed record lost: thread " << t << " seq " << seq;
      }
    }
    // Only records in flight at the kill can be lost: one per thread.
    EXPECT_LE(stats.lost, kThreads);
    EXPECT_EQ(stats.writer_dropped, 0u);
    EXPECT_GE(stats.delivered, committed_total);
    total_delivered += stats.delivered;
    total_lost += stats.lost;
    unlink(path.c_str());
  }
  printf(
      "iterations=%d delivered=%lu lost_in_flight=%lu "
      "killed_before_ready=%lu\n",
      kIterations, total_delivered, total_lost, not_ready);
  munmap(progress, sizeof(Progress));
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
