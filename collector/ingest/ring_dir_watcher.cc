#include "collector/ingest/ring_dir_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {

absl::StatusOr<std::unique_ptr<RingDirWatcher>> RingDirWatcher::Create(
    const std::string& dir, absl::Duration rescan_interval) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot list ring directory ", dir));
  }
  ::closedir(d);
  std::unique_ptr<RingDirWatcher> watcher(
      new RingDirWatcher(dir, rescan_interval));
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0 && ::inotify_add_watch(fd, dir.c_str(),
                                     IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE |
                                         IN_ATTRIB | IN_MODIFY) < 0) {
    ::close(fd);
    fd = -1;
  }
  watcher->inotify_fd_ = fd;  // -1: polling only
  watcher->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return watcher;
}

RingDirWatcher::RingDirWatcher(std::string dir, absl::Duration rescan_interval)
    : dir_(std::move(dir)), rescan_interval_(rescan_interval) {}

RingDirWatcher::~RingDirWatcher() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void RingDirWatcher::Wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  // Fails only when the counter is saturated: a wake-up is pending anyway.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

std::vector<std::string> RingDirWatcher::Wait(absl::Duration timeout) {
  bool activity = false;
  pollfd pfds[2];
  nfds_t count = 0;
  if (inotify_fd_ >= 0) pfds[count++] = {inotify_fd_, POLLIN, 0};
  if (wake_fd_ >= 0) pfds[count++] = {wake_fd_, POLLIN, 0};
  // Rounded up: a wait shorter than asked would only spin.
  const int ms = static_cast<int>(std::max<int64_t>(
      0,
      absl::ToInt64Milliseconds(absl::Ceil(timeout, absl::Milliseconds(1)))));
  if (count == 0) {
    if (ms > 0) absl::SleepFor(absl::Milliseconds(ms));
  } else if (::poll(pfds, count, ms) > 0) {
    for (nfds_t i = 0; i < count; ++i) {
      if ((pfds[i].revents & POLLIN) == 0) continue;
      if (pfds[i].fd == inotify_fd_) {
        alignas(inotify_event) char buffer[4096];
        while (::read(inotify_fd_, buffer, sizeof(buffer)) > 0) activity = true;
      } else {
        uint64_t wakes;
        [[maybe_unused]] const ssize_t n =
            ::read(wake_fd_, &wakes, sizeof(wakes));
      }
    }
  }
  const absl::Time now = absl::Now();
  if (!activity && now < next_scan_) return {};
  next_scan_ = now + rescan_interval_;
  return Scan();
}

std::vector<std::string> RingDirWatcher::Scan() {
  std::vector<std::string> found;
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return found;
  while (dirent* entry = ::readdir(d)) {
    const char* name = entry->d_name;
    // Hidden names count: the emitter names files after the service, and a
    // service (or executable) may start with a dot.
    if (!absl::EndsWith(name, ".ring") || std::strlen(name) <= 5) continue;
    if (entry->d_type != DT_REG && entry->d_type != DT_UNKNOWN) continue;
    std::string path = absl::StrCat(dir_, "/", name);
    if (known_.insert(path).second) found.push_back(std::move(path));
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace collector
}  // namespace ringprof
