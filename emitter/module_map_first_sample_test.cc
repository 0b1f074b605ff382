// The module table of a process whose first sample comes from a signal
// handler (a CPU-timer sample) while another thread holds the loader's
// lock, with a library loaded after start (testing/first_sample_child.cc
// runs it): the ring file holds every object loaded at start, once each,
// and the library the sample ran in. With _dl_find_object the table is made
// there, from the record of the objects loaded at start (module_map.h): a
// dl_iterate_phdr would wait for the lock.
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ringfile/reader.h"
#include "ringfile/test_util.h"

extern char** environ;

namespace ringprof {
namespace emitter {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" +
         (workspace ? workspace : "ringprof") + "/" + path;
}

struct Segment {
  uint64_t start;
  uint64_t size;
  std::string path;
};

// What the child printed (first_sample_child.cc's usage).
struct ChildReport {
  int exit_status = -1;
  bool dl_find_object = false;
  uint64_t frame = 0;
  std::vector<Segment> at_start;
};

// Runs argv (argv[0] looked up in PATH) with its stdout in `out`: its exit
// status, or -1.
int Run(const std::vector<std::string>& args, const std::string& out) {
  std::vector<char*> argv;
  for (const std::string& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  const int error =
      posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status;
  if (error != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    return -1;
  }
  return WEXITSTATUS(status);
}

ChildReport RunChild(const std::string& mode, const std::string& dir) {
  ChildReport report;
  setenv("RINGPROF_DIR", dir.c_str(), 1);
  setenv("RINGPROF_CPU_HZ", "0", 1);
  const std::string out = dir + ".out";
  const std::string child = Runfile("emitter/testing/first_sample_child");
  const std::string payload =
      Runfile("examples/workloads/libdlopen_payload.so");
  report.exit_status = Run({child, mode, payload}, out);
#ifdef __aarch64__
  if (report.exit_status == 127) {
    // Under qemu-user (the _aarch64 variant), which does not follow an exec
    // into another aarch64 program: the child runs under its own qemu.
    report.exit_status =
        Run({"qemu-aarch64", "-cpu", "max", child, mode, payload}, out);
  }
#endif
  FILE* file = fopen(out.c_str(), "r");
  if (file == nullptr) return report;
  char line[4096];
  while (fgets(line, sizeof(line), file) != nullptr) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "dl_find_object") {
      words >> report.dl_find_object;
    } else if (kind == "frame") {
      words >> report.frame;
    } else if (kind == "object") {
      Segment segment;
      words >> segment.start >> segment.size;
      std::getline(words >> std::ws, segment.path);
      report.at_start.push_back(segment);
    }
  }
  fclose(file);
  return report;
}

void ExpectEveryModuleOnce(const std::string& mode) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + mode;
  const ChildReport report = RunChild(mode, dir);
  ASSERT_NE(report.exit_status, 2) << "the signal handler waited for the lock";
  ASSERT_EQ(report.exit_status, 0);
  ASSERT_FALSE(report.at_start.empty());

  auto records =
      ringfile::testing::ReadAllRecords(ringfile::testing::RingFileIn(dir));
  ASSERT_TRUE(records.ok()) << records.status();
  std::map<std::pair<uint64_t, uint64_t>, int> copies;  // by (start, size)
  std::map<std::pair<uint64_t, uint64_t>, std::string> paths;
  bool executable_build_id = false;
  for (const auto& record : *records) {
    const ringfile::RecordView view = record.view();
    if (view.type != ringfile::RecordType::kModuleMap) continue;
    auto map = ringfile::DecodeModuleMap(view);
    ASSERT_TRUE(map.ok());
    const auto key = std::make_pair(map->head.start, map->head.size);
    ++copies[key];
    paths[key] = std::string(map->path);
    if (absl::EndsWith(map->path, "/first_sample_child") &&
        map->build_id.size() > 0) {
      executable_build_id = true;
    }
  }
  EXPECT_TRUE(executable_build_id);
  // Every object loaded at start, once: the file's creation records the
  // table once. The executable is named by its path, the vDSO as glibc's
  // loader names it.
  for (const Segment& segment : report.at_start) {
    const auto key = std::make_pair(segment.start, segment.size);
    EXPECT_EQ(copies[key], 1) << segment.path;
    if (!segment.path.empty()) EXPECT_EQ(paths[key], segment.path);
  }
  // The library the sample ran in, loaded after start, before that sample.
  if (report.dl_find_object) {
    int payload = 0;
    for (const auto& [key, path] : paths) {
      if (!absl::EndsWith(path, "libdlopen_payload.so")) continue;
      ++payload;
      EXPECT_LE(key.first, report.frame);
      EXPECT_GT(key.first + key.second, report.frame);
      EXPECT_EQ(copies[key], 1);
    }
    EXPECT_EQ(payload, 1);
  }
}

TEST(ModuleMapFirstSampleTest, FirstSampleInASignalHandler) {
  ExpectEveryModuleOnce("sample");
}

TEST(ModuleMapFirstSampleTest, FileCreatedByARecordWithoutAStack) {
  ExpectEveryModuleOnce("record");
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
