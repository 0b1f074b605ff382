// Which descriptors the blocking interposers time (block_interpose.cc): a
// call on a descriptor can wait only if it is a pipe, socket or character
// device (a terminal) opened blocking; reads and writes of regular files
// and block devices (page-cache hits above all) and of non-blocking
// descriptors are forwarded without a clock read.
//
// The kind of each descriptor number below kFdClassSlots is cached (one
// byte), learned with fstat and fcntl(F_GETFL) the first time a thread
// meets the number, forgotten when the interposed close, dup2 or dup3
// replaces it, and re-read every kFdRecheckCalls-th call of a thread
// (a descriptor closed where the interposers do not see it, fclose's or
// close_range's, or made (non-)blocking with fcntl or ioctl, is seen
// again soon). A stale entry only makes a call timed that needs not be, or
// leaves one untimed: the program is never affected. Descriptors from
// kFdClassSlots up are never timed.
//
// Contract: async-signal-safe, lock-free, allocation-free; errno is left
// as it was.
#ifndef RINGPROF_EMITTER_FD_CLASS_H_
#define RINGPROF_EMITTER_FD_CLASS_H_

#include <atomic>
#include <cstdint>

#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {

inline constexpr int kFdClassSlots = 65536;
inline constexpr uint32_t kFdRecheckCalls = 4096;

enum FdClass : uint8_t {
  kFdUnknown = 0,
  kFdMayBlock = 1,    // blocking pipe, socket or character device
  kFdNeverWaits = 2,  // anything else (regular file, O_NONBLOCK, ...)
};

// (Default visibility: in the fastbuild split the interposers are another
// library.)
extern std::atomic<uint8_t> g_fd_class[kFdClassSlots];

// Looks the descriptor up (fstat, fcntl) and caches the answer.
FdClass ClassifyFd(int fd);

// Whether a call on `fd` may wait.
inline bool FdMayBlock(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kFdClassSlots)) {
    return false;
  }
  uint8_t kind = g_fd_class[fd].load(std::memory_order_relaxed);
  if (__builtin_expect(kind == kFdUnknown, 0) ||
      __builtin_expect(--tls_thread_state.fd_recheck == 0, 0)) {
    kind = ClassifyFd(fd);
  }
  return kind == kFdMayBlock;
}

// The descriptor number now names something else (or nothing).
inline void ForgetFd(int fd) {
  if (static_cast<unsigned>(fd) < static_cast<unsigned>(kFdClassSlots)) {
    g_fd_class[fd].store(kFdUnknown, std::memory_order_relaxed);
  }
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FD_CLASS_H_
