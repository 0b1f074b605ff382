// RingDirWatcher: files named by inotify events are found without a
// listing, only regular ring files, each once.
#include "collector/ingest/ring_dir_watcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

void Touch(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ::close(fd);
}

// Waits (bounded) until the watcher reports something.
std::vector<std::string> WaitForAny(RingDirWatcher& watcher) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  std::vector<std::string> found;
  while (found.empty() && absl::Now() < deadline) {
    found = watcher.Wait(absl::Seconds(1));
  }
  return found;
}

TEST(RingDirWatcherTest, EventsNameNewRegularRingFilesOnce) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/events");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  Touch(dir + "/old.1.2.ring");
  // No rescan during the test: what it finds later comes from events.
  auto watcher = RingDirWatcher::Create(dir, absl::Hours(1));
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  if (!(*watcher)->using_inotify()) GTEST_SKIP() << "no inotify here";
  EXPECT_THAT((*watcher)->Wait(absl::ZeroDuration()),
              ElementsAre(dir + "/old.1.2.ring"));  // the first listing

  // Not ring files, or not regular ones: never reported.
  ASSERT_EQ(::mkfifo((dir + "/fifo.3.4.ring").c_str(), 0600), 0);
  ASSERT_EQ(::mkdir((dir + "/dir.5.6.ring").c_str(), 0755), 0);
  Touch(dir + "/notes.txt");
  Touch(dir + "/.ring");
  // A new ring file (hidden names count), and the old one written again.
  Touch(dir + "/.svc.7.8.ring");
  Touch(dir + "/old.1.2.ring");
  EXPECT_THAT(WaitForAny(**watcher), ElementsAre(dir + "/.svc.7.8.ring"));
  EXPECT_THAT((*watcher)->Wait(absl::ZeroDuration()), IsEmpty());

  // Forgotten (deleted by retention) and made again: reported again.
  ASSERT_EQ(::unlink((dir + "/.svc.7.8.ring").c_str()), 0);
  (*watcher)->Forget(dir + "/.svc.7.8.ring");
  Touch(dir + "/.svc.7.8.ring");
  EXPECT_THAT(WaitForAny(**watcher), ElementsAre(dir + "/.svc.7.8.ring"));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
