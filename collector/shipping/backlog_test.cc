#include "collector/shipping/backlog.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

std::string TempDir() {
  std::string t = std::string(getenv("TEST_TMPDIR")) + "/spoolXXXXXX";
  return mkdtemp(&t[0]);
}

SpoolRecord Record(int i, size_t payload = 100) {
  SpoolRecord r;
  auto* l = r.add_labels();
  l->set_name("__name__");
  l->set_value("process_cpu");
  // Incompressible-ish payload so the zstd size tracks `payload`.
  std::string pprof;
  uint32_t x = 2463534242u + i;
  for (size_t k = 0; k < payload; ++k) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    pprof.push_back(static_cast<char>(x));
  }
  r.set_pprof(pprof);
  r.set_id("id-" + std::to_string(i));
  r.set_from_unix_ns(i);
  return r;
}

TEST(DiskSpoolTest, KeepsOrderAcrossReopen) {
  const std::string dir = TempDir() + "/nested/spool";
  {
    auto spool = DiskSpool::Open(dir, 1 << 20);
    ASSERT_TRUE(spool.ok()) << spool.status();
    for (int i = 1; i <= 3; ++i) ASSERT_EQ(*(*spool)->Append(Record(i)), 0u);
    EXPECT_EQ((*spool)->size(), 3u);
    EXPECT_EQ((*spool)->Front()->id(), "id-1");
    (*spool)->PopFront();
  }
  auto spool = DiskSpool::Open(dir, 1 << 20);
  ASSERT_TRUE(spool.ok()) << spool.status();
  ASSERT_EQ((*spool)->size(), 2u);
  EXPECT_GT((*spool)->bytes(), 0u);
  ASSERT_EQ(*(*spool)->Append(Record(4)), 0u);
  std::vector<std::string> ids;
  while (!(*spool)->empty()) {
    ids.push_back((*spool)->Front()->id());
    (*spool)->PopFront();
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"id-2", "id-3", "id-4"}));
  EXPECT_EQ((*spool)->bytes(), 0u);
}

TEST(DiskSpoolTest, DropsOldestAtTheBound) {
  auto spool = DiskSpool::Open(TempDir(), 2500);
  ASSERT_TRUE(spool.ok());
  size_t dropped = 0;
  for (int i = 1; i <= 5; ++i) dropped += *(*spool)->Append(Record(i, 1000));
  // ~1 KB each after zstd: two fit in 2500 bytes.
  EXPECT_EQ((*spool)->size(), 2u);
  EXPECT_EQ(dropped, 3u);
  EXPECT_LE((*spool)->bytes(), 2500u);
  EXPECT_EQ((*spool)->Front()->id(), "id-4");
  // Larger than the whole bound: dropped itself, nothing else evicted.
  EXPECT_EQ(*(*spool)->Append(Record(9, 5000)), 1u);
  EXPECT_EQ((*spool)->size(), 2u);
}

TEST(DiskSpoolTest, IgnoresPartialWritesAndReportsCorruptFiles) {
  const std::string dir = TempDir();
  {
    auto spool = DiskSpool::Open(dir, 1 << 20);
    ASSERT_TRUE(spool.ok());
    ASSERT_TRUE((*spool)->Append(Record(1)).ok());
    ASSERT_TRUE((*spool)->Append(Record(2)).ok());
  }
  // A crash mid-write leaves a temporary file; a disk error a bad file.
  close(open((dir + "/.3.tmp").c_str(), O_CREAT | O_WRONLY, 0600));
  const int fd =
      open((dir + "/00000000000000000001.rpspool").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_EQ(write(fd, "junk", 4), 4);
  close(fd);
  auto spool = DiskSpool::Open(dir, 1 << 20);
  ASSERT_TRUE(spool.ok());
  EXPECT_NE(access((dir + "/.3.tmp").c_str(), F_OK), 0);
  ASSERT_EQ((*spool)->size(), 2u);
  EXPECT_EQ((*spool)->Front().status().code(), absl::StatusCode::kDataLoss);
  (*spool)->PopFront();
  EXPECT_EQ((*spool)->Front()->id(), "id-2");
}

TEST(DiskSpoolTest, OneCollectorPerDirectory) {
  const std::string dir = TempDir();
  auto first = DiskSpool::Open(dir, 1 << 20);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(DiskSpool::Open(dir, 1 << 20).status().code(),
            absl::StatusCode::kFailedPrecondition);
  first->reset();
  EXPECT_TRUE(DiskSpool::Open(dir, 1 << 20).ok());
}

TEST(MemoryBacklogTest, BoundAndOrder) {
  MemoryBacklog backlog(2 * Record(1, 1000).ByteSizeLong() + 10);
  size_t dropped = 0;
  for (int i = 1; i <= 4; ++i) dropped += *backlog.Append(Record(i, 1000));
  EXPECT_EQ(dropped, 2u);
  EXPECT_EQ(backlog.size(), 2u);
  EXPECT_EQ(backlog.Front()->id(), "id-3");
  EXPECT_FALSE(backlog.persistent());
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
