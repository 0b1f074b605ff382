// FreeSampled and live-set records: a real session in the test process,
// allocation samples taken directly through the sampled path, frees
// reported for exactly the sampled addresses, and the exit sweep re-sending
// exactly the ones still live.
#include "emitter/free_tracker.h"

#include <stdlib.h>

#include <map>
#include <set>
#include <string>

#include "emitter/alloc_sampler.h"
#include "emitter/live_set.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "gtest/gtest.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace emitter {
namespace {

alignas(16) char g_blocks[200][64];

TEST(FreeTrackerTest, FreesOfSampledAddressesAreRecorded) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/frees";
  setenv("RINGPROF_DIR", dir.c_str(), 1);
  unsetenv("RINGPROF_TRACK_FREES");         // on by default
  setenv("RINGPROF_SAMPLE_BYTES", "1", 1);  // every allocation is sampled
  setenv("RINGPROF_MIN_SAMPLES_PER_SEC", "0", 1);
  setenv("RINGPROF_CPU_HZ", "0", 1);
  StartSession();
  CreatePendingRing();  // normally done by the first sample
  ASSERT_TRUE(Enabled());
  ASSERT_TRUE(FreeTrackingOn());

  std::set<uint64_t> sampled, freed;
  for (int i = 0; i < 100; ++i) {
    SampleAllocation(g_blocks[i], 64);
    sampled.insert(reinterpret_cast<uintptr_t>(g_blocks[i]));
  }
  for (int i = 0; i < 100; i += 2) {
    OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(g_blocks[i]));
    freed.insert(reinterpret_cast<uintptr_t>(g_blocks[i]));
  }
  // Never sampled, and a second free of a freed one: nothing recorded.
  OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(g_blocks[150]));
  OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(g_blocks[0]));
  // Sampled again after its free (address reuse): tracked again.
  SampleAllocation(g_blocks[0], 64);
  OnFreeOfPossiblySampled(reinterpret_cast<uintptr_t>(g_blocks[0]));
  // realloc: a failed one keeps the block live (no FreeSampled), a
  // successful one reports it.
  PendingRealloc failed =
      BeforeRealloc(reinterpret_cast<uintptr_t>(g_blocks[1]));
  EXPECT_FALSE(MaybeLive(reinterpret_cast<uintptr_t>(g_blocks[1])));
  AfterRealloc(failed, /*succeeded=*/false);
  EXPECT_TRUE(MaybeLive(reinterpret_cast<uintptr_t>(g_blocks[1])));
  PendingRealloc moved =
      BeforeRealloc(reinterpret_cast<uintptr_t>(g_blocks[3]));
  AfterRealloc(moved, /*succeeded=*/true);
  freed.insert(reinterpret_cast<uintptr_t>(g_blocks[3]));
  EndSession(0);

  auto records =
      ringfile::testing::ReadAllRecords(ringfile::testing::RingFileIn(dir));
  ASSERT_TRUE(records.ok()) << records.status();
  std::multiset<uint64_t> recorded_frees;
  std::map<uint64_t, std::multiset<uint64_t>> swept;  // by sweep id
  std::map<uint64_t, uint64_t> sweep_entries;
  int samples = 0;
  for (const auto& record : *records) {
    const ringfile::RecordView view = record.view();
    if (view.type == ringfile::RecordType::kAllocSample) {
      ++samples;
      auto sample = ringfile::DecodeAllocSample(view);
      ASSERT_TRUE(sample.ok());
      EXPECT_EQ(sample->head.flags & ringfile::kSampleUntracked, 0);
    } else if (view.type == ringfile::RecordType::kFreeSampled) {
      auto free_record = ringfile::DecodeFreeSampled(view);
      ASSERT_TRUE(free_record.ok());
      recorded_frees.insert(free_record->address);
    } else if (view.type == ringfile::RecordType::kLiveSample) {
      auto live = ringfile::DecodeLiveSample(view);
      ASSERT_TRUE(live.ok());
      EXPECT_EQ(live->head.requested_size, 64u);
      EXPECT_GT(live->frames.size(), 0u);
      swept[live->head.sweep_id].insert(live->head.address);
    } else if (view.type == ringfile::RecordType::kLiveSweepEnd) {
      auto end = ringfile::DecodeLiveSweepEnd(view);
      ASSERT_TRUE(end.ok());
      sweep_entries[end->sweep_id] = end->entries;
    }
  }
  EXPECT_EQ(samples, 101);
  std::multiset<uint64_t> expected(freed.begin(), freed.end());
  expected.insert(reinterpret_cast<uintptr_t>(g_blocks[0]));
  EXPECT_EQ(recorded_frees, expected);
  // The exit sweep (the last one) re-sent exactly the live blocks.
  ASSERT_FALSE(sweep_entries.empty());
  const uint64_t last = sweep_entries.rbegin()->first;
  std::multiset<uint64_t> live;
  for (int i = 1; i < 100; i += 2) {
    if (i != 3) live.insert(reinterpret_cast<uintptr_t>(g_blocks[i]));
  }
  EXPECT_EQ(swept[last], live);
  EXPECT_EQ(sweep_entries[last], live.size());
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
