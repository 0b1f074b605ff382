#include "collector/ingest/ring_dir_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

// Hidden names count: the emitter names files after the service, and a
// service (or executable) may start with a dot.
bool IsRingName(const char* name) {
  return absl::EndsWith(name, ".ring") && std::strlen(name) > 5;
}

}  // namespace

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
  std::vector<std::string> found;
  bool overflow = false;
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
        overflow |= ReadEvents(&found);
      } else {
        uint64_t wakes;
        [[maybe_unused]] const ssize_t n =
            ::read(wake_fd_, &wakes, sizeof(wakes));
      }
    }
  }
  const absl::Time now = absl::Now();
  if (overflow || now >= next_scan_) {
    next_scan_ = now + rescan_interval_;
    Scan(&found);
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> RingDirWatcher::Rescan() {
  std::vector<std::string> found;
  Scan(&found);
  std::sort(found.begin(), found.end());
  return found;
}

bool RingDirWatcher::ReadEvents(std::vector<std::string>* found) {
  bool overflow = false;
  alignas(inotify_event) char buffer[4096];
  ssize_t n;
  while ((n = ::read(inotify_fd_, buffer, sizeof(buffer))) > 0) {
    size_t at = 0;
    while (at + sizeof(inotify_event) <= static_cast<size_t>(n)) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += sizeof(inotify_event) + event->len;
      if ((event->mask & IN_Q_OVERFLOW) != 0) overflow = true;
      if (event->len == 0 || (event->mask & IN_ISDIR) != 0 ||
          at > static_cast<size_t>(n)) {
        continue;
      }
      // The kernel pads the name with NULs.
      const std::string name(event->name, strnlen(event->name, event->len));
      if (!IsRingName(name.c_str())) continue;
      std::string path = absl::StrCat(dir_, "/", name);
      if (known_.contains(path)) continue;
      // As the listing's d_type: only regular files (never open a FIFO).
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      known_.insert(path);
      found->push_back(std::move(path));
    }
  }
  return overflow;
}

void RingDirWatcher::Scan(std::vector<std::string>* found) {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  while (dirent* entry = ::readdir(d)) {
    const char* name = entry->d_name;
    if (!IsRingName(name)) continue;
    if (entry->d_type != DT_REG && entry->d_type != DT_UNKNOWN) continue;
    std::string path = absl::StrCat(dir_, "/", name);
    if (known_.insert(path).second) found->push_back(std::move(path));
  }
  ::closedir(d);
}

}  // namespace collector
}  // namespace ringprof
