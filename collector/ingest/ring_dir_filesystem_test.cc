#include "collector/ingest/ring_dir_filesystem.h"

#include <linux/magic.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(RingDirFilesystemTest, MemoryFilesystemsNeedNoWarning) {
  for (uint64_t type : std::initializer_list<uint64_t>{
           TMPFS_MAGIC, RAMFS_MAGIC, EXT4_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC}) {
    EXPECT_EQ(RingDirFilesystemWarning("/var/run/ringprof", type), "") << type;
  }
}

TEST(RingDirFilesystemTest, AFileServerIsNamedWithTheFix) {
  // What a gVisor volume without its mount hint reports (the gofer's 9P).
  const std::string warning =
      RingDirFilesystemWarning("/var/run/ringprof", V9FS_MAGIC);
  EXPECT_NE(warning.find("/var/run/ringprof is on a 9P filesystem"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("medium: Memory"), std::string::npos) << warning;
  EXPECT_NE(warning.find("dev.gvisor.spec.mount"), std::string::npos)
      << warning;
  EXPECT_NE(RingDirFilesystemWarning("/r", NFS_SUPER_MAGIC).find("NFS"),
            std::string::npos);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
