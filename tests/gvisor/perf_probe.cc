// perf_probe: reports whether perf_event_open works here, the way a
// perf-based profiler would first try it (a software CPU-clock counter on
// the calling thread, the least privileged request there is).
//
// Prints exactly one line on stdout and exits:
//   0  "perf_event_open: available"
//   1  "perf_event_open: unavailable errno=<n> <NAME> (<strerror>)"
// The gVisor end-to-end test runs it inside the sandbox and expects ENODEV,
// which is what gVisor returns for every perf_event_open call.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

const char* ErrnoName(int err) {
  switch (err) {
    case ENODEV:
      return "ENODEV";
    case ENOSYS:
      return "ENOSYS";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EINVAL:
      return "EINVAL";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    default:
      return "E?";
  }
}

}  // namespace

int main() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // allowed even at perf_event_paranoid=2
  attr.exclude_hv = 1;

  const long fd = syscall(SYS_perf_event_open, &attr, /*pid=*/0, /*cpu=*/-1,
                          /*group_fd=*/-1, /*flags=*/0);
  if (fd < 0) {
    const int err = errno;
    std::printf("perf_event_open: unavailable errno=%d %s (%s)\n", err,
                ErrnoName(err), std::strerror(err));
    return 1;
  }
  close(static_cast<int>(fd));
  std::printf("perf_event_open: available\n");
  return 0;
}
