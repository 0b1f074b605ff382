#include "emitter/fd_class.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emitter/large_table.h"

namespace ringprof {
namespace emitter {

RINGPROF_LARGE_TABLE std::atomic<uint8_t> g_fd_class[kFdClassSlots];

FdClass ClassifyFd(int fd) {
  tls_thread_state.fd_recheck = kFdRecheckCalls;
  const int saved_errno = errno;
  // System calls, not libc's fstat (a function only since glibc 2.33) and
  // fcntl (interposable, a cancellation point for some commands).
  struct stat st;
  const long flags = syscall(SYS_fcntl, fd, F_GETFL);
  const long stat_result = flags < 0 ? -1 : syscall(SYS_fstat, fd, &st);
  errno = saved_errno;
  if (stat_result != 0) return kFdUnknown;  // closed: look again next time
  const bool can_wait =
      S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode);
  const FdClass kind = !can_wait                   ? kFdNeverWaits
                       : (flags & O_NONBLOCK) == 0 ? kFdMayBlock
                                                   : kFdNonBlocking;
  g_fd_class[fd].store(kind, std::memory_order_relaxed);
  return kind;
}

}  // namespace emitter
}  // namespace ringprof
