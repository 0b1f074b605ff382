// Which descriptors the blocking interposers time (block_interpose.cc): a
// call on a descriptor can wait only if it is a pipe, socket or character
// device (a terminal) opened blocking; reads and writes of regular files
// and block devices (page-cache hits above all) and of non-blocking
// descriptors are forwarded without a clock read.
//
// The kind of each descriptor number below kFdClassSlots is cached (one
// byte, process-wide), learned with fstat and fcntl(F_GETFL) the first
// time a call meets the number, and forgotten (ForgetFd) by the
// interposers of the calls that close a number or hand out a new one:
// close, dup2, dup3, fclose, pclose, closedir (closed), and dup, pipe,
// pipe2, socket, socketpair, accept, accept4 (created).
//  - kFdNeverWaits (regular file, directory, block device, epoll, ...): a
//    type cannot change while the number names the same open file, so the
//    answer is kept until one of those calls: a call on such a number is
//    one relaxed load of the table. A number closed where no interposer
//    sees it (a raw system call, close_range, a C library's internal close)
//    and reused without one (open of a FIFO or terminal, fcntl(F_DUPFD))
//    stays kFdNeverWaits until a seen close: its calls are not timed.
//  - kFdMayBlock, kFdNonBlocking (a pipe, socket or character device with
//    and without O_NONBLOCK, which fcntl and ioctl change unseen): re-read
//    on every kFdRecheckCalls-th such call of a thread.
// A number closed and reused by another thread while a call on it is being
// looked up (ClassifyFd) may keep the old kind (a race in the program's
// use of the number). A stale or wrong entry can only leave a wait untimed (a
// lost sample) or time a call that could not wait (a sample of a short wait):
// the call itself is always the real function's, with its result and errno.
// Descriptors from kFdClassSlots up are never timed.
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
  kFdNeverWaits = 1,   // not a pipe, socket or character device: kept
  kFdMayBlock = 2,     // blocking pipe, socket or character device
  kFdNonBlocking = 3,  // the same with O_NONBLOCK
};

// (Default visibility: in the fastbuild split the interposers are another
// library.)
extern std::atomic<uint8_t> g_fd_class[kFdClassSlots];

// Looks the descriptor up (fstat, fcntl) and caches the answer.
FdClass ClassifyFd(int fd);

// The cached kind of `fd`; kFdNeverWaits for a number out of the table.
inline FdClass CachedFdClass(int fd) {
  const unsigned slot = static_cast<unsigned>(fd);
  if (__builtin_expect(slot >= static_cast<unsigned>(kFdClassSlots), 0)) {
    return kFdNeverWaits;
  }
  return static_cast<FdClass>(g_fd_class[slot].load(std::memory_order_relaxed));
}

// Whether a call on `fd`, whose cached kind is `kind`, may wait: learns
// the kind or re-reads it when due.
inline bool FdMayBlock(int fd, FdClass kind) {
  if (kind == kFdNeverWaits) return false;
  if (kind == kFdUnknown || --tls_thread_state.fd_recheck == 0) {
    kind = ClassifyFd(fd);
  }
  return kind == kFdMayBlock;
}

inline bool FdMayBlock(int fd) { return FdMayBlock(fd, CachedFdClass(fd)); }

// The descriptor number now names something else (or nothing).
inline void ForgetFd(int fd) {
  if (static_cast<unsigned>(fd) < static_cast<unsigned>(kFdClassSlots)) {
    g_fd_class[fd].store(kFdUnknown, std::memory_order_relaxed);
  }
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FD_CLASS_H_
