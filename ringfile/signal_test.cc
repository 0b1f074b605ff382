// TryAppend from a signal handler that interrupts a TryAppend on the same
// thread (the CPU-timer sampler's situation): both records must commit
// intact, because the handler takes its own index and slot.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

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

// Run until this many handler appends interrupted a main-thread append.
constexpr uint64_t kWantedInterruptions = 100;
constexpr uint64_t kDeadlineNs = 20'000'000'000;

uint64_t NowNs() { return ringfile::ClockNs(CLOCK_MONOTONIC); }

RingWriter* g_writer = nullptr;
std::atomic<uint64_t> g_handler_seq{0};
volatile sig_atomic_t g_main_in_append = 0;
std::atomic<uint64_t> g_interrupted_appends{0};

// Async-signal-safe: TryAppend only touches the mapped file.
void OnSignal(int) {
  if (g_main_in_append) g_interrupted_appends.fetch_add(1);
  const uint64_t seq = g_handler_seq.load(std::memory_order_relaxed);
  // The handler's records are "thread 1"; they go to ring 1 % 1 = 0, the
  // main thread's ring.
  AppendStressRecord(*g_writer, 1, seq, 20);
  g_handler_seq.store(seq + 1, std::memory_order_relaxed);
}

class OrderCheckingVisitor : public RecordVisitor {
 public:
  void OnRecord(const RecordView& record) override {
    uint32_t thread;
    uint64_t seq;
    if (!CheckStressRecord(record, &thread, &seq) || thread > 1) {
      ++corrupt;
      return;
    }
    if (seq != next_seq[thread]) ++out_of_order;
    next_seq[thread] = seq + 1;
  }
  uint64_t corrupt = 0, out_of_order = 0;
  uint64_t next_seq[2] = {0, 0};
};

TEST(SignalTest, HandlerAppendsInterruptingAnAppendOnTheSameThread) {
  const std::string path = TempRingPath("signal");
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = 1;
  options.slots_per_ring = 4096;
  options.slot_size = 256;
  RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  g_writer = &writer;

  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction previous;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);

  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  OrderCheckingVisitor visitor;
  PollStats stats;
  PollOptions poll;
  poll.max_records = UINT32_MAX;

  // Another thread signals this one while it appends in a loop; the loop
  // also drains the ring every 64 appends, so nothing is ever lapped.
  const pthread_t target = pthread_self();
  std::atomic<bool> done{false};
  std::thread signaller([&] {
    while (!done.load()) {
      pthread_kill(target, SIGUSR1);
      sched_yield();
    }
  });
  uint64_t main_appends = 0, main_committed = 0;
  const uint64_t deadline = NowNs() + kDeadlineNs;
  while (g_interrupted_appends.load() < kWantedInterruptions &&
         NowNs() < deadline) {
    for (int i = 0; i < 64; ++i) {
      g_main_in_append = 1;
      main_committed += AppendStressRecord(writer, 0, main_appends++, 20);
      g_main_in_append = 0;
    }
    ASSERT_TRUE((*reader)->Poll(poll, visitor, stats).ok());
  }
  done.store(true);
  signaller.join();
  // Let any pending signal run before the handler is removed.
  sigset_t pending;
  do {
    sigpending(&pending);
  } while (sigismember(&pending, SIGUSR1));
  ASSERT_EQ(sigaction(SIGUSR1, &previous, nullptr), 0);
  poll.writer_dead = true;
  ASSERT_TRUE((*reader)->Poll(poll, visitor, stats).ok());

  const uint64_t handled = g_handler_seq.load();
  printf(
      "main appends=%lu handler appends=%lu (%lu interrupted an append) "
      "delivered=%lu lost=%lu\n",
      main_appends, handled, g_interrupted_appends.load(), stats.delivered,
      stats.lost);
  EXPECT_GT(g_interrupted_appends.load(), 0u);
  EXPECT_EQ(main_committed, main_appends);
  EXPECT_EQ(stats.delivered, main_appends + handled);
  EXPECT_EQ(stats.lost, 0u);
  EXPECT_EQ(visitor.corrupt, 0u);
  EXPECT_EQ(visitor.out_of_order, 0u);
  EXPECT_EQ(visitor.next_seq[0], main_appends);
  EXPECT_EQ(visitor.next_seq[1], handled);
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
