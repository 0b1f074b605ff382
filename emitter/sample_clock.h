// The clock that timestamps samples (CLOCK_MONOTONIC nanoseconds), read on
// every sampled allocation and in the CPU-timer signal handler.
//
// Contract: SampleClockNowNs is async-signal-safe, lock-free, allocation-free
// and never blocks; any thread, any time (before SampleClockInit it reads
// CLOCK_MONOTONIC). SampleClockInit runs once, from the library constructor.
//
// Why not always clock_gettime: natively it is a vDSO call (~20 ns), but
// where the vDSO cannot read the clock it falls back to a system call. In
// gVisor that happens during a sandbox's first ~1 s, until the sandbox has
// calibrated its clock (afterwards its vDSO reads it in ~40 ns), and a
// system call there is a round trip through the sandbox's kernel: ~45 us of
// host CPU on the ptrace platform (tools/bench gvisor). The allocation
// sampler reads the clock once per sample, thousands of times per second on
// an allocation-heavy thread. (gVisor does not report an invariant TSC, so
// there the TSC path below is not taken.)
//
// So SampleClockInit measures the clock. When a read costs more than a
// system call should (kSlowClockNs) and the CPU has an invariant TSC that
// user code may read, timestamps are extrapolated from the TSC: the rate
// and offset are calibrated against CLOCK_MONOTONIC, and re-anchored (one
// real clock read, by whichever thread notices first) every
// kRecalibrateNs of extrapolated time, so the error stays within a few
// microseconds; the collector's ticks are 10 ms. Otherwise (natively on
// ordinary hosts) it is plain clock_gettime.
#ifndef RINGPROF_EMITTER_SAMPLE_CLOCK_H_
#define RINGPROF_EMITTER_SAMPLE_CLOCK_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

void SampleClockInit();
uint64_t SampleClockNowNs();

// A clock read slower than this is not a vDSO read: it left user space.
inline constexpr uint64_t kSlowClockReadNs = 1000;

// For tests and diagnostics: whether timestamps come from the TSC, and the
// measured cost of one clock_gettime at init.
struct SampleClockInfo {
  bool tsc = false;
  uint64_t clock_read_ns = 0;
};
SampleClockInfo GetSampleClockInfo();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SAMPLE_CLOCK_H_
