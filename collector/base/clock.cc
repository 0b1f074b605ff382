#include "collector/base/clock.h"

#include <time.h>

namespace ringprof {
namespace collector {
namespace {

int64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

int64_t MonotonicNowNs() { return Now(CLOCK_MONOTONIC); }
int64_t UnixNowNs() { return Now(CLOCK_REALTIME); }

}  // namespace collector
}  // namespace ringprof
