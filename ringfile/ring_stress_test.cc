// Stress: 8 writer threads in a child process append checksummed records of
// varying size for a bounded time, into small rings so they lap the reader;
// the reader in this (parent) process tails the file concurrently. Every
// attempt must end up delivered intact, lost, or writer-dropped, exactly
// once: delivered + lost + writer_dropped == attempts.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
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
constexpr uint32_t kRings = 4;  // two writer threads contend on each ring
constexpr uint32_t kSlotsPerRing = 256;
constexpr uint32_t kSlotSize = 1152;
constexpr uint32_t kMaxFrames = 100;       // payloads of 40..840 bytes
constexpr uint64_t kOversizedEvery = 997;  // these must be writer-dropped
constexpr uint64_t kWriteDurationNs = 1'000'000'000;
constexpr uint64_t kTestDeadlineNs = 40'000'000'000;

uint64_t NowNs() { return ringfile::ClockNs(CLOCK_MONOTONIC); }

struct WriterTotals {
  uint64_t attempts = 0;
  uint64_t committed = 0;
  uint64_t oversized = 0;
};

// How the writer threads pace themselves: flat out (the reader is lapped
// constantly: exercises overwrite, torn-copy and lap accounting), or in
// bursts with pauses (the reader keeps up: exercises delivery).
struct Pacing {
  const char* name;
  uint64_t burst;  // records between pauses; 0 = never pause
  uint32_t pause_us;
};
constexpr Pacing kFlatOut = {"flat_out", 0, 0};
constexpr Pacing kBursts = {"bursts", 32, 2000};

// The child: never returns.
[[noreturn]] void RunWriterProcess(const std::string& path, Pacing pacing,
                                   int report_fd) {
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = kRings;
  options.slots_per_ring = kSlotsPerRing;
  options.slot_size = kSlotSize;
  RingWriter writer;
  if (writer.Create(options) != 0) _exit(2);

  std::atomic<uint64_t> attempts{0}, committed{0}, oversized{0};
  const uint64_t stop_ns = NowNs() + kWriteDurationNs;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> big(kSlotSize);
      uint64_t local_attempts = 0, local_committed = 0, local_oversized = 0;
      for (uint64_t seq = 0; (seq & 63) != 0 || NowNs() < stop_ns; ++seq) {
        ++local_attempts;
        if (pacing.burst != 0 && seq % pacing.burst == pacing.burst - 1) {
          usleep(pacing.pause_us);
        }
        if (seq % kOversizedEvery == kOversizedEvery - 1) {
          ++local_oversized;
          if (writer.TryAppend(RecordType::kLabel, big.data(), 16,
                               big.data() + 16, kSlotSize - 16, t)) {
            ++local_committed;
          }
          continue;
        }
        if (AppendStressRecord(writer, t, seq, kMaxFrames)) ++local_committed;
      }
      attempts += local_attempts;
      committed += local_committed;
      oversized += local_oversized;
    });
  }
  for (std::thread& thread : threads) thread.join();
  ProcessEnd end = {};
  ++attempts;
  if (writer.TryAppend(RecordType::kProcessEnd, &end, sizeof(end), nullptr, 0,
                       0)) {
    ++committed;
  }
  writer.MarkProcessEnded();
  WriterTotals totals;
  totals.attempts = attempts;
  totals.committed = committed;
  totals.oversized = oversized;
  const bool written =
      write(report_fd, &totals, sizeof(totals)) == sizeof(totals);
  _exit(written ? 0 : 3);
}

class CheckingVisitor : public RecordVisitor {
 public:
  void OnRecord(const RecordView& record) override {
    if (record.type == RecordType::kProcessEnd) {
      ++process_ends;
      return;
    }
    uint32_t thread;
    uint64_t seq;
    if (!CheckStressRecord(record, &thread, &seq) || thread >= kThreads) {
      ++corrupt;
      return;
    }
    // A thread always writes to the same ring, and its indexes there grow
    // with its seq: per thread, delivered seqs must strictly increase (so
    // nothing is delivered twice or out of order).
    if (delivered_any[thread] && seq <= last_seq[thread]) ++duplicates;
    delivered_any[thread] = true;
    last_seq[thread] = seq;
    ++intact;
  }
  uint64_t intact = 0, corrupt = 0, duplicates = 0, process_ends = 0;
  bool delivered_any[kThreads] = {};
  uint64_t last_seq[kThreads] = {};
};

class RingStressTest : public ::testing::TestWithParam<Pacing> {};

TEST_P(RingStressTest, EveryAttemptIsDeliveredOrCountedExactlyOnce) {
  const Pacing pacing = GetParam();
  const std::string path = TempRingPath("stress");
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    RunWriterProcess(path, pacing, report[1]);
  }
  close(report[1]);
  const uint64_t deadline = NowNs() + kTestDeadlineNs;
  auto kill_child = [&] {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  };

  std::unique_ptr<RingReader> reader;
  while (reader == nullptr) {
    absl::StatusOr<std::unique_ptr<RingReader>> opened = RingReader::Open(path);
    if (opened.ok()) {
      reader = std::move(*opened);
    } else if (opened.status().code() == absl::StatusCode::kNotFound ||
               opened.status().code() ==
                   absl::StatusCode::kFailedPrecondition) {
      if (NowNs() > deadline) {
        kill_child();
        FAIL() << "ring file never became ready: " << opened.status();
      }
      usleep(200);
    } else {
      kill_child();
      FAIL() << opened.status();
    }
  }

  CheckingVisitor visitor;
  PollStats stats;
  PollOptions options;
  options.stall_timeout_ns = 20'000'000;
  options.max_records = 4096;
  int status = 0;
  bool exited = false;
  uint64_t polls = 0;
  while (!reader->Finished()) {
    if (NowNs() > deadline) {
      kill_child();
      FAIL() << "reader did not finish; delivered " << stats.delivered;
    }
    const uint64_t before = stats.delivered + stats.lost;
    const bool polled_knowing_writer_dead = options.writer_dead;
    options.now_ns = 0;
    absl::Status polled = reader->Poll(options, visitor, stats);
    ASSERT_TRUE(polled.ok()) << polled;
    ++polls;
    if (!exited && waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      options.writer_dead = true;
    }
    // A poll made knowing the writer is gone (so it skips uncommitted slots
    // at once) that makes no progress means drained. A poll made before the
    // exit was noticed may have waited on a slot and proves nothing.
    if (polled_knowing_writer_dead && stats.delivered + stats.lost == before) {
      break;
    }
  }
  if (!exited) {
    ASSERT_EQ(waitpid(child, &status, 0), child);
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  WriterTotals totals;
  ASSERT_EQ(read(report[0], &totals, sizeof(totals)),
            static_cast<ssize_t>(sizeof(totals)));
  close(report[0]);

  printf(
      "%s: attempts=%lu committed=%lu delivered=%lu lost=%lu "
      "writer_dropped=%lu "
      "unknown=%lu polls=%lu\n",
      pacing.name, totals.attempts, totals.committed, stats.delivered,
      stats.lost, stats.writer_dropped, stats.unknown_types, polls);
  ::testing::Test::RecordProperty("attempts", std::to_string(totals.attempts));
  ::testing::Test::RecordProperty("delivered", std::to_string(stats.delivered));
  ::testing::Test::RecordProperty("lost", std::to_string(stats.lost));

  EXPECT_TRUE(reader->Finished());
  EXPECT_EQ(visitor.corrupt, 0u);
  EXPECT_EQ(visitor.duplicates, 0u);
  EXPECT_EQ(stats.unknown_types, 0u);
  EXPECT_EQ(stats.delivered, visitor.intact + visitor.process_ends);
  EXPECT_EQ(stats.writer_dropped, totals.oversized);
  EXPECT_EQ(stats.delivered + stats.lost + stats.writer_dropped,
            totals.attempts);
  EXPECT_LE(stats.delivered, totals.committed);
  EXPECT_GT(visitor.intact, 0u);
}

// The same protocol with writers and reader in one process, so that
// ThreadSanitizer (--config=tsan) checks its memory ordering: every payload
// word, the sequence and the counters are accessed atomically.
TEST(RingStressInProcessTest, WritersAndReaderThreads) {
  const std::string path = TempRingPath("inprocess");
  WriterOptions writer_options;
  writer_options.path = path.c_str();
  writer_options.ring_count = 2;
  writer_options.slots_per_ring = 64;
  writer_options.slot_size = kSlotSize;
  RingWriter writer;
  ASSERT_EQ(writer.Create(writer_options), 0);
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();

  constexpr uint32_t kInProcessThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  std::atomic<uint32_t> running{kInProcessThreads};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kInProcessThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t seq = 0; seq < kPerThread; ++seq) {
        AppendStressRecord(writer, t, seq, kMaxFrames);
      }
      running.fetch_sub(1);
    });
  }
  CheckingVisitor visitor;
  PollStats stats;
  PollOptions options;
  options.stall_timeout_ns = 20'000'000;
  const uint64_t deadline = NowNs() + kTestDeadlineNs;
  for (;;) {
    const bool writers_done = running.load() == 0;
    options.writer_dead = writers_done;  // nobody will commit anything more
    options.now_ns = 0;
    const uint64_t before = stats.delivered + stats.lost;
    ASSERT_TRUE((*reader)->Poll(options, visitor, stats).ok());
    if (writers_done && stats.delivered + stats.lost == before) break;
    ASSERT_LT(NowNs(), deadline);
  }
  for (std::thread& thread : threads) thread.join();
  printf("in-process: attempts=%lu delivered=%lu lost=%lu\n",
         kInProcessThreads * kPerThread, stats.delivered, stats.lost);
  EXPECT_EQ(visitor.corrupt, 0u);
  EXPECT_EQ(visitor.duplicates, 0u);
  EXPECT_EQ(stats.delivered + stats.lost, kInProcessThreads * kPerThread);
  EXPECT_GT(stats.delivered, 0u);
}

INSTANTIATE_TEST_SUITE_P(Pacings, RingStressTest,
                         ::testing::Values(kFlatOut, kBursts),
                         [](const ::testing::TestParamInfo<Pacing>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
