// The collector's clocks, in nanoseconds: CLOCK_MONOTONIC (the emitters'
// sample timestamps, deadlines, intervals) and CLOCK_REALTIME (profile
// times, Pyroscope's ingestion window).
//
// Thread-safe, allocation-free.
#ifndef RINGPROF_COLLECTOR_BASE_CLOCK_H_
#define RINGPROF_COLLECTOR_BASE_CLOCK_H_

#include <cstdint>

namespace ringprof {
namespace collector {

int64_t MonotonicNowNs();
int64_t UnixNowNs();

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_CLOCK_H_
