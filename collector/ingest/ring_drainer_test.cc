// RingDrainer's polling schedule (as often as records arrive, bounded both
// ways), its wake-up, and BatchQueue's buffer reuse.
#include "collector/ingest/ring_drainer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "ringfile/clock.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace collector {
namespace {

namespace rt = ringfile::testing;

TEST(PollDelayTest, AQuarterOfOneRingAtTheRateJustSeen) {
  const absl::Duration min = absl::Milliseconds(5);
  const absl::Duration max = RingDrainer::kMaxPollInterval;
  // 200 records in 20 ms: 10,000/s; a quarter of 1024 slots takes 25.6 ms.
  EXPECT_EQ(PollDelay(200, absl::Milliseconds(20), 1024, min, max),
            absl::Microseconds(25600));
  // Faster than the shortest interval allows: the shortest interval.
  EXPECT_EQ(PollDelay(1000, absl::Milliseconds(10), 1024, min, max), min);
  // Slow or idle rings: at most the longest interval.
  EXPECT_EQ(PollDelay(10, absl::Milliseconds(100), 1024, min, max), max);
  EXPECT_EQ(PollDelay(0, absl::Milliseconds(100), 1024, min, max), max);
  // While records keep coming, the shorter cap: a burst may follow a lull.
  EXPECT_EQ(PollDelay(5, absl::Milliseconds(20), 1024, min,
                      RingDrainer::kMaxActivePollInterval),
            RingDrainer::kMaxActivePollInterval);
  // A shortest interval above the longest wins.
  EXPECT_EQ(PollDelay(0, absl::Milliseconds(100), 1024, absl::Seconds(2), max),
            absl::Seconds(2));
  // Tiny rings still get a one-record budget.
  EXPECT_EQ(PollDelay(1, absl::Milliseconds(50), 2, min, max),
            absl::Milliseconds(50));
}

class RingDrainerTest : public ::testing::Test {
 protected:
  RingDrainerTest() {
    dir_ = absl::StrCat(
        std::getenv("TEST_TMPDIR"), "/rings-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::mkdir(dir_.c_str(), 0755);
    options_.ring_dir = dir_;
    options_.rescan_interval = absl::Seconds(60);
  }

  // A ring file of this (live) process with `samples` allocation samples;
  // the writer stays open.
  void CreateRing(int samples) { CreateRing(samples, &writer_, "test"); }
  void CreateRing(int samples, ringfile::RingWriter* writer,
                  const std::string& service) {
    const std::string path =
        absl::StrCat(dir_, "/", service, ".", ::getpid(), ".0.ring");
    ringfile::WriterOptions options = rt::TestWriterOptions(path);
    options.pid = static_cast<uint32_t>(::getpid());
    options.process_start_ticks = 0;
    options.slots_per_ring = 1024;
    ASSERT_EQ(writer->Create(options), 0);
    for (int i = 0; i < samples; ++i) {
      ringfile::AllocSample s = {};
      s.monotonic_ns = ringfile::ClockNs(CLOCK_MONOTONIC);
      s.tid = 1;
      s.weight_bytes = 100;
      s.requested_size = 100;
      const uint64_t frames[] = {0x1000, 0x2000};
      ASSERT_TRUE(rt::AppendAllocSample(*writer, s, frames, s.tid));
    }
  }

  std::string dir_;
  DrainerOptions options_;
  ringfile::RingWriter writer_;
};

TEST_F(RingDrainerTest, AnIdleRingIsPolledAtMostEveryMaxPollInterval) {
  options_.poll_interval = absl::Milliseconds(1);
  BatchQueue queue(1 << 20);
  auto drainer = RingDrainer::Create(options_, &queue);
  ASSERT_TRUE(drainer.ok()) << drainer.status();
  CreateRing(/*samples=*/0);
  const absl::Duration run = absl::Milliseconds(1500);
  const absl::Time start = absl::Now();
  int rounds = 0;
  while (absl::Now() - start < run) {
    (*drainer)->RunOnce(/*wait=*/true);
    ++rounds;
  }
  // Every 20 ms in its first second without a record (since it was
  // opened), then every 100 ms (plus the first poll and one that may
  // straddle the end), not once per millisecond; the drain thread slept in
  // between.
  const uint64_t most =
      absl::Seconds(1) / RingDrainer::kMaxActivePollInterval +
      (run - absl::Seconds(1)) / RingDrainer::kMaxPollInterval + 2;
  EXPECT_GE((*drainer)->polls(), 1u);
  EXPECT_LE((*drainer)->polls(), most);
  EXPECT_LE(rounds, static_cast<int>(most) + 2);
}

TEST(EarliestPollTest, AtMostTheShortestIntervalAndHalfTheDelayEarly) {
  const absl::Time t = absl::FromUnixSeconds(1000);
  const absl::Duration min = absl::Milliseconds(5);
  EXPECT_EQ(EarliestPoll(t, t + absl::Milliseconds(20), min),
            t + absl::Milliseconds(15));
  EXPECT_EQ(EarliestPoll(t, t + absl::Milliseconds(6), min),
            t + absl::Milliseconds(3));
  EXPECT_EQ(EarliestPoll(t, t, min), t);  // at once stays at once
}

TEST_F(RingDrainerTest, RingsDueCloseTogetherShareAWakeUp) {
  // Each ring is due 100 ms after its poll, and may be polled 50 ms early
  // when the thread is awake anyway.
  options_.poll_interval = absl::Milliseconds(100);
  BatchQueue queue(1 << 20);
  auto drainer = RingDrainer::Create(options_, &queue);
  ASSERT_TRUE(drainer.ok()) << drainer.status();
  CreateRing(/*samples=*/1);
  (*drainer)->RunOnce(/*wait=*/false);  // opens and polls the first
  ringfile::RingWriter second;
  CreateRing(/*samples=*/1, &second, "second");
  (*drainer)->RunOnce(/*wait=*/false);  // opens and polls the second
  ASSERT_EQ((*drainer)->rings_opened(), 2u);
  ASSERT_EQ((*drainer)->polls(), 2u);
  // One wake-up, when the first is due, polls both (unless opening the
  // second took longer than 50 ms).
  const absl::Time start = absl::Now();
  (*drainer)->RunOnce(/*wait=*/true);
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ((*drainer)->polls(), 4u) << "after " << waited;
  EXPECT_LT(waited, absl::Seconds(5));
}

TEST_F(RingDrainerTest, RingsThatExistAtStartAreOpenedAtOnce) {
  // A ring written through its mapping makes no inotify event: the first
  // wait must end at the first listing, not a rescan interval (60 s) later.
  CreateRing(/*samples=*/3);
  BatchQueue queue(1 << 20);
  auto drainer = RingDrainer::Create(options_, &queue);
  ASSERT_TRUE(drainer.ok()) << drainer.status();
  const absl::Time start = absl::Now();
  (*drainer)->RunOnce(/*wait=*/true);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ((*drainer)->rings_opened(), 1u);
}

TEST_F(RingDrainerTest, WakePollsEveryRingAtOnce) {
  // No ring is due again for 10 s after a poll.
  options_.poll_interval = absl::Seconds(10);
  BatchQueue queue(1 << 20);
  auto drainer = RingDrainer::Create(options_, &queue);
  ASSERT_TRUE(drainer.ok()) << drainer.status();
  CreateRing(/*samples=*/3);
  (*drainer)->RunOnce(/*wait=*/false);  // opens and polls it
  ASSERT_EQ((*drainer)->rings_opened(), 1u);
  ASSERT_EQ((*drainer)->polls(), 1u);
  (*drainer)->RunOnce(/*wait=*/false);
  EXPECT_EQ((*drainer)->polls(), 1u);  // not due

  ringfile::AllocSample s = {};
  s.monotonic_ns = ringfile::ClockNs(CLOCK_MONOTONIC);
  s.tid = 1;
  s.weight_bytes = 100;
  s.requested_size = 100;
  const uint64_t frames[] = {0x3000};
  ASSERT_TRUE(rt::AppendAllocSample(writer_, s, frames, s.tid));
  // From another thread, as `run` does when its command exits: the wait
  // ends at once and the ring is polled although it is not due.
  std::thread waker([&] { (*drainer)->Wake(); });
  waker.join();
  const absl::Time start = absl::Now();
  (*drainer)->RunOnce(/*wait=*/true);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ((*drainer)->polls(), 2u);

  std::vector<DrainedBatch> batches;
  queue.PopAll(std::chrono::milliseconds(0), &batches);
  size_t records = 0;
  for (const DrainedBatch& batch : batches) records += batch.records.size();
  EXPECT_EQ(records, 4u);
}

TEST(BatchQueueTest, RecycledBuffersAreReused) {
  BatchQueue queue(1024);
  DrainedBatch batch = queue.Spare();
  batch.process = 7;
  batch.records.resize(100);
  batch.arena.resize(1000);
  const uint64_t* arena = batch.arena.data();
  queue.Recycle(std::move(batch));
  DrainedBatch reused = queue.Spare();
  EXPECT_EQ(reused.process, 0u);
  EXPECT_TRUE(reused.records.empty());
  EXPECT_TRUE(reused.arena.empty());
  EXPECT_GE(reused.arena.capacity(), 1000u);
  EXPECT_EQ(reused.arena.data(), arena);
  // Nothing left: a fresh batch.
  EXPECT_EQ(queue.Spare().arena.capacity(), 0u);
}

TEST(BatchQueueTest, LargeBatchesAreNotKept) {
  BatchQueue queue(1024);
  DrainedBatch batch;
  batch.arena.resize(4 << 20);
  queue.Recycle(std::move(batch));
  EXPECT_EQ(queue.Spare().arena.capacity(), 0u);
}

TEST(BatchQueueTest, CloseEndsAWaitingPopAll) {
  BatchQueue queue(1024);
  std::thread closer([&] { queue.Close(); });
  std::vector<DrainedBatch> batches;
  const absl::Time start = absl::Now();
  queue.PopAll(std::chrono::milliseconds(60'000), &batches);
  closer.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_TRUE(batches.empty());
}

TEST(BatchQueueTest, DeferredPushesAreDeliveredAndNotifyWakesTheConsumer) {
  BatchQueue queue(1024);
  std::vector<DrainedBatch> batches;
  // Not woken, still queued: a later PopAll takes them.
  for (uint32_t process : {1u, 2u}) {
    DrainedBatch batch;
    batch.process = process;
    queue.Push(std::move(batch), /*notify=*/false);
  }
  queue.PopAll(std::chrono::milliseconds(0), &batches);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].process, 2u);
  // A consumer waiting for a minute returns once Notify follows a deferred
  // push.
  std::thread producer([&] {
    DrainedBatch batch;
    batch.process = 3;
    queue.Push(std::move(batch), /*notify=*/false);
    queue.Notify();
  });
  const absl::Time start = absl::Now();
  while (batches.empty() || batches[0].process != 3) {
    queue.PopAll(std::chrono::milliseconds(60'000), &batches);
  }
  producer.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
