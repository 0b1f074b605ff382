// FreeSampled records: a real session in the test process, allocation
// samples taken directly through the sampled path, frees reported for
// exactly the sampled addresses.
#include "emitter/free_tracker.h"

#include <dirent.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "emitter/alloc_sampler.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "gtest/gtest.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace emitter {
namespace {

std::string TheRingFile(const std::string& dir) {
  std::string found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      if (absl::EndsWith(entry->d_name, ".ring")) {
        found = dir + "/" + entry->d_name;
      }
    }
    closedir(d);
  }
  return found;
}

alignas(16) char g_blocks[200][64];

TEST(FreeTrackerTest, FreesOfSampledAddressesAreRecorded) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/frees";
  setenv("RINGPROF_DIR", dir.c_str(), 1);
  setenv("RINGPROF_TRACK_FREES", "1", 1);
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
  EndSession(0);

  auto records = ringfile::testing::ReadAllRecords(TheRingFile(dir));
  ASSERT_TRUE(records.ok()) << records.status();
  std::multiset<uint64_t> recorded_frees;
  int samples = 0;
  for (const auto& record : *records) {
    const ringfile::RecordView view = record.view();
    if (view.type == ringfile::RecordType::kAllocSample) {
      ++samples;
    } else if (view.type == ringfile::RecordType::kFreeSampled) {
      auto free_record = ringfile::DecodeFreeSampled(view);
      ASSERT_TRUE(free_record.ok());
      recorded_frees.insert(free_record->address);
    }
  }
  EXPECT_EQ(samples, 101);
  std::multiset<uint64_t> expected(freed.begin(), freed.end());
  expected.insert(reinterpret_cast<uintptr_t>(g_blocks[0]));
  EXPECT_EQ(recorded_frees, expected);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
