// The clocks ring files are stamped with, in nanoseconds: the one clock
// source of the writer (inside the emitter), the reader and the collector.
//
// Async-signal-safe, allocation-free (clock_gettime is a vDSO call or a
// system call, never a lock).
#ifndef RINGPROF_RINGFILE_CLOCK_H_
#define RINGPROF_RINGFILE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace ringprof {
namespace ringfile {

inline uint64_t ClockNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_CLOCK_H_
