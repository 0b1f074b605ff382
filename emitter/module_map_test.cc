// The module map end to end inside one process: a session writing a real
// ring file, a library loaded and unloaded at run time, and the records the
// collector would see. Built twice: module_map_rescan_test defines
// RINGPROF_WITHOUT_DL_FIND_OBJECT and runs as on glibc < 2.35 (rescans).
#include "emitter/module_map.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "emitter/libc_features.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "gtest/gtest.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace emitter {
namespace {

std::string PayloadPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" +
         (workspace ? workspace : "ringprof") +
         "/examples/workloads/libdlopen_payload.so";
}

// ModuleMap records of the executable in the ring file so far.
int ExecutableMapCopies(const std::string& dir) {
  auto records =
      ringfile::testing::ReadAllRecords(ringfile::testing::RingFileIn(dir));
  if (!records.ok()) return -1;
  int copies = 0;
  for (const auto& record : *records) {
    const ringfile::RecordView view = record.view();
    if (view.type != ringfile::RecordType::kModuleMap) continue;
    auto map = ringfile::DecodeModuleMap(view);
    if (map.ok() && std::string(map->path) == ExecutablePath()) ++copies;
  }
  return copies;
}

#ifdef RINGPROF_WITHOUT_DL_FIND_OBJECT
// The start-up table forgets an object loaded before it was made once a
// rescan no longer lists it, so its unmapped .eh_frame_hdr is never read.
TEST(StartupObjectsTest, UnloadedObjectsAreForgotten) {
  void* library = dlopen(PayloadPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  void* function = dlsym(library, "PayloadAllocate");
  ASSERT_NE(function, nullptr);
  UseDlFindObjectForTest(false);  // the table now includes the library
  dl_find_object found;
  ASSERT_EQ(FindObject(function, &found), 0);
  EXPECT_FALSE(ForgetUnloadedStartupObjects());
  EXPECT_EQ(FindObject(function, &found), 0);
  ASSERT_EQ(dlclose(library), 0);
  EXPECT_TRUE(ForgetUnloadedStartupObjects());
  EXPECT_NE(FindObject(function, &found), 0);
  EXPECT_EQ(FindObject(reinterpret_cast<void*>(&dlopen), &found), 0);
}
#endif

TEST(ModuleMapTest, LoadedObjectsAreRecordedAndUnloadsNoticed) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/modules";
  setenv("RINGPROF_DIR", dir.c_str(), 1);
  setenv("RINGPROF_CPU_HZ", "0", 1);
#ifdef RINGPROF_WITHOUT_DL_FIND_OBJECT
  UseDlFindObjectForTest(false);
#endif
  StartSession();
  CreatePendingRing();  // normally done by the first sample
  ASSERT_TRUE(Enabled());

  void* library = dlopen(PayloadPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  void* function = dlsym(library, "PayloadAllocate");
  ASSERT_NE(function, nullptr);
  dl_find_object found;
#ifdef RINGPROF_WITHOUT_DL_FIND_OBJECT
  // Loaded after start: unknown to FindObject, found by a rescan.
  EXPECT_NE(FindObject(function, &found), 0);
#else
  EXPECT_EQ(FindObject(function, &found), 0);
#endif
  // A stack with a frame in the new library: it gets recorded.
  const uint64_t frames[] = {reinterpret_cast<uintptr_t>(function) + 1};
  NoteStackModules(frames, 1);
  ASSERT_EQ(dlclose(library), 0);
  // The next re-emission (normally at most every 5 s) notices the unload.
  const uint64_t reemitted_at = MonotonicNowNs() + 2 * kReemitIntervalNs;
  MaybeReemitModules(reemitted_at);

  // Early copies, for a collector that lost the first one: that was the
  // first re-emission (100 ms after the file's copy), the next interval is
  // 200 ms, then 400 ms.
  const int copies = ExecutableMapCopies(dir);
  EXPECT_GE(copies, 2);
  MaybeReemitModules(reemitted_at + 150'000'000);
  EXPECT_EQ(ExecutableMapCopies(dir), copies);
  MaybeReemitModules(reemitted_at + 250'000'000);
  EXPECT_EQ(ExecutableMapCopies(dir), copies + 1);
  MaybeReemitModules(reemitted_at + 550'000'000);
  EXPECT_EQ(ExecutableMapCopies(dir), copies + 1);
  MaybeReemitModules(reemitted_at + 700'000'000);
  EXPECT_EQ(ExecutableMapCopies(dir), copies + 2);
  EndSession(0);

  auto records =
      ringfile::testing::ReadAllRecords(ringfile::testing::RingFileIn(dir));
  ASSERT_TRUE(records.ok()) << records.status();
  bool executable = false, libc = false;
  std::vector<ringfile::ModuleMap> payload_maps;
  std::vector<ringfile::ModuleUnmap> unmaps;
  for (const auto& record : *records) {
    const ringfile::RecordView view = record.view();
    if (view.type == ringfile::RecordType::kModuleMap) {
      auto map = ringfile::DecodeModuleMap(view);
      ASSERT_TRUE(map.ok());
      const std::string path(map->path);
      if (path == ExecutablePath() && map->build_id.size() > 0)
        executable = true;
      if (absl::StrContains(path, "libc.so")) libc = true;
      if (absl::EndsWith(path, "libdlopen_payload.so")) {
        EXPECT_GT(map->build_id.size(), 0u);
        EXPECT_LE(map->head.start, frames[0]);
        EXPECT_GT(map->head.start + map->head.size, frames[0]);
        payload_maps.push_back(map->head);
      }
    } else if (view.type == ringfile::RecordType::kModuleUnmap) {
      auto unmap = ringfile::DecodeModuleUnmap(view);
      ASSERT_TRUE(unmap.ok());
      unmaps.push_back(*unmap);
    }
  }
  EXPECT_TRUE(executable);
  EXPECT_TRUE(libc);
  ASSERT_EQ(payload_maps.size(), 1u);
  bool payload_unmapped = false;
  for (const auto& unmap : unmaps) {
    if (unmap.start == payload_maps[0].start &&
        unmap.size == payload_maps[0].size) {
      payload_unmapped = true;
    }
  }
  EXPECT_TRUE(payload_unmapped) << unmaps.size() << " unmap records";
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
