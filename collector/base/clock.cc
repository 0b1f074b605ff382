#include "collector/base/clock.h"

#include "ringfile/clock.h"

namespace ringprof {
namespace collector {

int64_t MonotonicNowNs() {
  return static_cast<int64_t>(ringfile::ClockNs(CLOCK_MONOTONIC));
}
int64_t UnixNowNs() {
  return static_cast<int64_t>(ringfile::ClockNs(CLOCK_REALTIME));
}

}  // namespace collector
}  // namespace ringprof
