#include "collector/sink/local_sink.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/base/file.h"
#include "collector/pprof/pprof_builder.h"
#include "collector/pprof/pprof_io.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/pprof/profile_kinds.h"
#include "collector/pprof/profile_merger.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kSec = 1'000'000'000;

// A memory profile with one stack main -> `leaf` worth `bytes`; the
// strings are interned in an order that depends on `leaf`, so two such
// profiles have different string tables.
Profile MemoryProfile(const std::string& leaf, int64_t bytes, int64_t from,
                      int64_t inuse_bytes = 0) {
  ProfileSpec spec = SpecOf(ProfileKind::kMemory);
  spec.time_nanos = from;
  spec.duration_nanos = 10 * kSec;
  PprofBuilder b(spec);
  LineSpec leaf_line{leaf, "a.cc", 1};
  LineSpec main_line{"main", "main.cc", 2};
  const auto l = b.InternLocation(0, 0x1000 + leaf.size(),
                                  absl::MakeConstSpan(&leaf_line, 1));
  const auto m =
      b.InternLocation(0, 0x9000, absl::MakeConstSpan(&main_line, 1));
  b.AddSample({l, m}, {1, bytes, inuse_bytes > 0 ? 1 : 0, inuse_bytes});
  return b.Build();
}

// Column 1: alloc_space; 3: inuse_space.
int64_t BytesOf(const Profile& p, const std::string& leaf, int column = 1) {
  int64_t sum = 0;
  for (const auto& s : p.sample()) {
    const auto& loc = p.location(s.location_id(0) - 1);
    const auto& fn = p.function(loc.line(0).function_id() - 1);
    if (p.string_table(fn.name()) == leaf) sum += s.value(column);
  }
  return sum;
}

TEST(ProfileMergerTest, InUseIsEachSeriesLatestSnapshotNotTheSum) {
  ProfileMerger merger;
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 10 * kSec, 100), "a").ok());
  // Out of order: the latest by time wins, not the last added.
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 30 * kSec, 300), "a").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 20 * kSec, 200), "a").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 10 * kSec, 50), "b").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Cold", 10, 10 * kSec, 7), "b").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Cold", 10, 20 * kSec, 0), "c").ok());
  Profile merged = merger.Build();
  ASSERT_TRUE(ValidatePprof(merged).ok()) << ValidatePprof(merged);
  EXPECT_EQ(BytesOf(merged, "Hot", 3), 300);  // a's last; b's last is Cold
  EXPECT_EQ(BytesOf(merged, "Cold", 3), 7);
  EXPECT_EQ(BytesOf(merged, "Hot", 1), 40);  // allocations add up
  EXPECT_EQ(BytesOf(merged, "Cold", 1), 20);
}

TEST(ProfileMergerTest, FinishIsBuildAndEmptiesTheMerger) {
  ProfileMerger merger;
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 10 * kSec, 100), "a").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 10, 30 * kSec, 300), "a").ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Cold", 10, 20 * kSec, 7), "b").ok());
  const std::string built = merger.Build().SerializeAsString();
  EXPECT_EQ(merger.Finish().SerializeAsString(), built);
  EXPECT_TRUE(merger.empty());
}

TEST(ProfileMergerTest, IdenticalStacksAddUpAcrossStringTables) {
  ProfileMerger merger;
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 100, 10 * kSec)).ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Cold", 7, 20 * kSec)).ok());
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 50, 30 * kSec)).ok());
  Profile merged = merger.Build();
  ASSERT_TRUE(ValidatePprof(merged).ok()) << ValidatePprof(merged);
  EXPECT_EQ(merged.sample_size(), 2);
  EXPECT_EQ(BytesOf(merged, "Hot"), 150);
  EXPECT_EQ(BytesOf(merged, "Cold"), 7);
  EXPECT_EQ(merged.time_nanos(), 10 * kSec);
  EXPECT_EQ(merged.duration_nanos(), 30 * kSec);
}

TEST(ProfileMergerTest, RejectsDifferentSampleTypes) {
  ProfileMerger merger;
  ASSERT_TRUE(merger.Add(MemoryProfile("Hot", 100, 0)).ok());
  PprofBuilder cpu(SpecOf(ProfileKind::kCpu, 10'000'000));
  LineSpec line{"f", "", 0};
  cpu.AddSample({cpu.InternLocation(0, 1, absl::MakeConstSpan(&line, 1))}, {1});
  EXPECT_FALSE(merger.Add(cpu.Build()).ok());
}

TEST(LocalSinkTest, WritesWindowsInTheDocumentedLayoutAndASummary) {
  const std::string out = absl::StrCat(std::getenv("TEST_TMPDIR"), "/out");
  auto sink = LocalSink::Create(out);
  ASSERT_TRUE(sink.ok()) << sink.status();
  for (int64_t from : {1'700'000'000 * kSec, 1'700'000'010 * kSec}) {
    WindowProfile w;
    w.kind = ProfileKind::kMemory;
    w.service_name = "my svc/1";
    w.pid = 42;
    w.from_unix_ns = from;
    w.until_unix_ns = from + 10 * kSec;
    w.profile = std::make_shared<const perftools::profiles::Profile>(
        MemoryProfile("Hot", 100, from));
    (*sink)->Submit(std::move(w));
  }
  ASSERT_TRUE((*sink)->Flush(0).ok());
  EXPECT_EQ((*sink)->windows_written(), 2u);
  // Service names are sanitised into one path component.
  auto window = ReadProfileFile(
      out + "/my_svc_1/memory/42.1700000000000-1700000010000.pb.gz");
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(BytesOf(*window, "Hot"), 100);

  auto summary = (*sink)->Finalize(10, /*hottest=*/3);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto merged = ReadProfileFile(out + "/memory.pb.gz");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(BytesOf(*merged, "Hot"), 200);
  // Allocated bytes only: no CPU windows, nothing in use.
  ASSERT_EQ(summary->pages.size(), 1u);
  EXPECT_EQ(summary->pages[0].path, out + "/memory.html");
  EXPECT_STREQ(summary->pages[0].view->sample_type, "alloc_space");
  EXPECT_EQ(summary->pages[0].total, "200B");
  EXPECT_THAT(summary->pages[0].hottest, ElementsAre("100.0%  Hot"));
  auto html = ReadFile(out + "/memory.html");
  ASSERT_TRUE(html.ok());
  EXPECT_THAT(*html, HasSubstr("Hot"));
  auto top = ReadFile(out + "/top.txt");
  ASSERT_TRUE(top.ok());
  EXPECT_THAT(*top, HasSubstr("Hot"));
}

TEST(LocalSinkTest, InUseSummaryIsEachProcessLastSnapshot) {
  const std::string out = absl::StrCat(std::getenv("TEST_TMPDIR"), "/inuse");
  auto sink = LocalSink::Create(out);
  ASSERT_TRUE(sink.ok()) << sink.status();
  int64_t inuse = 1000;
  for (uint32_t pid : {7, 8}) {
    for (int64_t from : {1'700'000'000 * kSec, 1'700'000'010 * kSec}) {
      WindowProfile w;
      w.kind = ProfileKind::kMemory;
      w.service_name = "svc";
      w.pid = pid;
      w.from_unix_ns = from;
      w.until_unix_ns = from + 10 * kSec;
      w.profile = std::make_shared<const perftools::profiles::Profile>(
          MemoryProfile("Leaky", 10, from, inuse));
      inuse += 1000;
      (*sink)->Submit(std::move(w));
    }
  }
  auto summary = (*sink)->Finalize(10);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto merged = ReadProfileFile(out + "/memory.pb.gz");
  ASSERT_TRUE(merged.ok()) << merged.status();
  // pid 7's last snapshot (2000) + pid 8's (4000).
  EXPECT_EQ(BytesOf(*merged, "Leaky", 3), 6000);
  ASSERT_EQ(summary->pages.size(), 2u);
  EXPECT_EQ(summary->pages[1].path, out + "/inuse.html");
  auto html = ReadFile(out + "/inuse.html");
  ASSERT_TRUE(html.ok());
  EXPECT_THAT(*html, HasSubstr("Leaky"));
  EXPECT_THAT(summary->top_table, HasSubstr("Still allocated at the end"));
}

TEST(LocalSinkTest, CreatesEveryMissingLevelOfItsDirectory) {
  const std::string out =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/nested/a/b");
  auto sink = LocalSink::Create(out);
  ASSERT_TRUE(sink.ok()) << sink.status();
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  // An existing directory is fine too.
  EXPECT_TRUE(LocalSink::Create(out).ok());
}

TEST(LocalSinkTest, UnwritableDirectoryIsAClearError) {
  const std::string file = absl::StrCat(std::getenv("TEST_TMPDIR"), "/plain");
  ASSERT_TRUE(WriteFileAtomically(file, "x").ok());
  auto sink = LocalSink::Create(file + "/out");
  ASSERT_FALSE(sink.ok());
  EXPECT_THAT(std::string(sink.status().message()), HasSubstr(file));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
