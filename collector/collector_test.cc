// The whole pipeline on a directory of ring files: discovery, draining,
// process ends (clean, killed writer), corrupt files, retention.
#include "collector/collector.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/pprof/pprof_validate.h"
#include "gtest/gtest.h"
#include "ringfile/clock.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace collector {
namespace {

namespace rt = ringfile::testing;
using ringfile::RecordType;

class LockedSink : public ProfileSink {
 public:
  void Submit(WindowProfile profile) override {
    std::lock_guard<std::mutex> lock(mu_);
    profiles_.push_back(std::move(profile));
  }
  absl::Status Flush(int64_t) override { return absl::OkStatus(); }
  // Sum of value `index` over every submitted profile named `name` of `pid`.
  int64_t Total(const std::string& name, uint32_t pid, int index) {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t sum = 0;
    for (const auto& w : profiles_) {
      if (KindName(w.kind) != name || w.pid != pid) continue;
      const perftools::profiles::Profile& p = *w.profile;
      EXPECT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
      for (const auto& s : p.sample()) sum += s.value(index);
    }
    return sum;
  }

 private:
  std::mutex mu_;
  std::vector<WindowProfile> profiles_;  // guarded by mu_
};

uint64_t NowNs() { return ringfile::ClockNs(CLOCK_MONOTONIC); }

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

class CollectorTest : public ::testing::Test {
 protected:
  CollectorTest() {
    dir_ = absl::StrCat(
        std::getenv("TEST_TMPDIR"), "/rings-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::mkdir(dir_.c_str(), 0755);
    options_.drainer.ring_dir = dir_;
    options_.drainer.poll_interval = absl::Milliseconds(2);
    options_.drainer.rescan_interval = absl::Milliseconds(50);
    options_.drainer.liveness_interval = absl::Milliseconds(50);
    options_.drainer.open_grace = absl::Milliseconds(200);
  }

  // A ring file for `pid` with `samples` allocation samples of 100 bytes.
  void WriteRing(const std::string& name, uint32_t pid, int samples, bool end) {
    const std::string path = absl::StrCat(dir_, "/", name);
    ringfile::WriterOptions options = rt::TestWriterOptions(path);
    options.pid = pid;
    options.process_start_ticks = 0;
    options.slots_per_ring = 1024;
    ringfile::RingWriter writer;
    ASSERT_EQ(writer.Create(options), 0);
    AppendSamples(writer, samples);
    if (end) {
      ringfile::ProcessEnd record = {};
      record.monotonic_ns = NowNs();
      rt::AppendFixed(writer, RecordType::kProcessEnd, record);
      writer.MarkProcessEnded();
    }
    writer.Close();
  }
  static void AppendSamples(ringfile::RingWriter& writer, int samples) {
    for (int i = 0; i < samples; ++i) {
      ringfile::AllocSample s = {};
      s.monotonic_ns = NowNs();
      s.tid = 1 + i % 3;
      s.weight_bytes = 100;
      s.requested_size = 100;
      const uint64_t frames[] = {0x1000 + 16 * (i % 5), 0x2000};
      rt::AppendAllocSample(writer, s, frames, s.tid);
    }
  }

  // Waits (bounded) until `done`; returns whether it happened.
  template <typename F>
  bool WaitFor(F done, absl::Duration limit = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + limit;
    while (absl::Now() < deadline) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return done();
  }

  std::string dir_;
  CollectorOptions options_;
  LockedSink sink_;
};

TEST_F(CollectorTest, EndedProcessesAreCollectedAndTheirRingsDeleted) {
  WriteRing("a.1.ring", 1001, 300, /*end=*/true);
  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  WriteRing("b.2.ring", 1002, 200, /*end=*/true);  // appears while running
  ASSERT_TRUE(WaitFor([&] { return collector.rings_ended() == 2; }))
      << "opened " << collector.rings_opened() << ", ended "
      << collector.rings_ended();
  collector.Stop();
  EXPECT_EQ(sink_.Total("memory", 1001, 1), 300 * 100);
  EXPECT_EQ(sink_.Total("memory", 1002, 1), 200 * 100);
  EXPECT_FALSE(Exists(dir_ + "/a.1.ring"));
  EXPECT_FALSE(Exists(dir_ + "/b.2.ring"));
  EXPECT_EQ(collector.summary().processes, 2u);
  EXPECT_EQ(collector.summary().totals.alloc_samples, 500u);
}

TEST_F(CollectorTest, KeepRingsKeepsFiles) {
  options_.drainer.keep_rings = true;
  WriteRing("a.1.ring", 1001, 10, /*end=*/true);
  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return collector.rings_ended() == 1; }));
  collector.Stop();
  EXPECT_TRUE(Exists(dir_ + "/a.1.ring"));
  EXPECT_EQ(sink_.Total("memory", 1001, 1), 10 * 100);
}

TEST_F(CollectorTest, CorruptFileIsSkippedAndOthersAreCollected) {
  WriteRing("good.1.ring", 1001, 50, /*end=*/true);
  WriteRing("bad.2.ring", 1002, 50, /*end=*/true);
  // Break the bad file's header: an impossible ring count.
  rt::PatchValue<uint32_t>(dir_ + "/bad.2.ring",
                           offsetof(ringfile::FileHeader, ring_count), 9999);
  // And one that is far too short to be a ring file.
  const std::string tiny = dir_ + "/tiny.3.ring";
  FILE* f = std::fopen(tiny.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("RINGPROF", f);
  std::fclose(f);
  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return collector.rings_ended() == 1; }));
  // Past the open grace period the bad files are given up on, not opened.
  absl::SleepFor(absl::Milliseconds(400));
  collector.Stop();
  EXPECT_EQ(collector.rings_opened(), 1u);
  EXPECT_EQ(sink_.Total("memory", 1001, 1), 50 * 100);
  EXPECT_EQ(sink_.Total("memory", 1002, 1), 0);
  EXPECT_TRUE(Exists(dir_ + "/bad.2.ring"));  // left for inspection
}

TEST_F(CollectorTest, KilledWriterIsNoticedAndDrained) {
  const std::string path = dir_ + "/victim.ring";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The writer: samples, no end marker; then waits to be SIGKILLed.
    ringfile::WriterOptions options = rt::TestWriterOptions(path);
    options.pid = static_cast<uint32_t>(::getpid());
    options.process_start_ticks = 0;
    options.slots_per_ring = 1024;
    ringfile::RingWriter writer;
    if (writer.Create(options) != 0) _exit(1);
    AppendSamples(writer, 120);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) _exit(1);
    while (true) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);

  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return collector.rings_opened() == 1; }));
  EXPECT_EQ(collector.rings_ended(), 0u);  // alive: followed, not ended
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WaitFor([&] { return collector.rings_ended() == 1; }))
      << "the dead writer was not noticed";
  collector.Stop();
  EXPECT_EQ(sink_.Total("memory", static_cast<uint32_t>(child), 1), 120 * 100);
  EXPECT_FALSE(Exists(path));
}

TEST_F(CollectorTest, StopDrainsLiveProcessesAndKeepsTheirFiles) {
  // A writer that is alive (this process) and never ends.
  const std::string path = dir_ + "/live.ring";
  ringfile::WriterOptions options = rt::TestWriterOptions(path);
  options.pid = static_cast<uint32_t>(::getpid());
  options.process_start_ticks = 0;
  options.slots_per_ring = 1024;
  ringfile::RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return collector.rings_opened() == 1; }));
  AppendSamples(writer, 77);  // after opening: read while following
  collector.Stop();
  writer.Close();
  EXPECT_EQ(sink_.Total("memory", options.pid, 1), 77 * 100);
  EXPECT_TRUE(Exists(path));
}

TEST_F(CollectorTest, FileTruncatedWhileFollowedIsReportedAndSkipped) {
  // A live writer (this process) whose file is cut short under the reader.
  const std::string path = dir_ + "/cut.ring";
  ringfile::WriterOptions options = rt::TestWriterOptions(path);
  options.pid = static_cast<uint32_t>(::getpid());
  options.process_start_ticks = 0;
  options.slots_per_ring = 1024;
  ringfile::RingWriter writer;
  ASSERT_EQ(writer.Create(options), 0);
  AppendSamples(writer, 30);
  WriteRing("other.ring", 1002, 40, /*end=*/false);
  Collector collector(options_, nullptr, &sink_);
  ASSERT_TRUE(collector.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return collector.rings_opened() == 2; }));
  writer.Close();
  ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
  ASSERT_TRUE(WaitFor([&] { return collector.rings_ended() == 1; }))
      << "the truncated file was not given up on";
  collector.Stop();
  // What was read before the cut still counts; the other process is whole.
  EXPECT_EQ(sink_.Total("memory", options.pid, 1), 30 * 100);
  EXPECT_EQ(sink_.Total("memory", 1002, 1), 40 * 100);
  EXPECT_TRUE(Exists(path));  // left for inspection
}

// Without O_TMPFILE (gVisor's tmpfs) the emitter creates the file under its
// name and makes it ready through its mapping, which raises no inotify
// event: the drainer must look again within a poll or two, not 100 ms later,
// or a busy thread's ring is lapped (and the module map with it) first.
TEST_F(CollectorTest, FileMadeReadyThroughItsMappingIsOpenedAtTheNextPoll) {
  const std::string source = dir_ + "-source.ring";
  const std::string path = dir_ + "/late.7.ring";
  {
    ringfile::WriterOptions options = rt::TestWriterOptions(source);
    ringfile::RingWriter writer;
    ASSERT_EQ(writer.Create(options), 0);
    AppendSamples(writer, 3);
    writer.Close();
  }
  std::ifstream in(source, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());

  // Named and sized, still all zero: not ready.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  void* map =
      ::mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);

  DrainerOptions options = options_.drainer;
  options.poll_interval = absl::Milliseconds(20);
  options.rescan_interval = absl::Hours(1);
  options.open_grace = absl::Hours(1);
  BatchQueue queue(1 << 20);
  auto drainer = RingDrainer::Create(options, &queue);
  ASSERT_TRUE(drainer.ok()) << drainer.status();
  (*drainer)->RunOnce(/*wait=*/false);  // finds it, cannot open it yet
  EXPECT_EQ((*drainer)->rings_opened(), 0u);

  std::memcpy(map, bytes.data(), bytes.size());  // no event for this
  // Each pass waits a whole poll interval (nothing else happens in the
  // directory): two are more than enough, well under 100 ms.
  for (int pass = 0; pass < 2 && (*drainer)->rings_opened() == 0; ++pass) {
    (*drainer)->RunOnce(/*wait=*/true);
  }
  EXPECT_EQ((*drainer)->rings_opened(), 1u);
  ::munmap(map, bytes.size());
}

TEST_F(CollectorTest, MissingRingDirectoryIsAStartupError) {
  options_.drainer.ring_dir = dir_ + "/does-not-exist";
  Collector collector(options_, nullptr, &sink_);
  absl::Status status = collector.Start();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("does-not-exist"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
