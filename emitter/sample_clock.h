// The clock that timestamps samples (CLOCK_MONOTONIC nanoseconds), read on
// every sampled allocation and in the CPU-timer signal handler.
//
// Contract: SampleClockNowNs is async-signal-safe, lock-free, allocation-free
// and never blocks; any thread, any time. The first read of the process (or
// GetSampleClockInfo) runs SampleClockInit, which only reads clocks and the
// cycle counter: a process that never takes a timestamp spends nothing on
// it.
// Threads that read the clock while another measures it read
// CLOCK_MONOTONIC.
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
// So SampleClockInit measures the clock. When a read costs what a system
// call costs (arch::kSystemCallClockReadNs: 1 us on x86-64, 300 ns on
// AArch64) and the CPU has a cycle counter that user code may read at
// constant rate (the invariant TSC; AArch64's CNTVCT_EL0, which the vDSO
// itself reads) and that is measured to cost at most half a clock read,
// timestamps are extrapolated from the counter: the rate and offset are
// calibrated against CLOCK_MONOTONIC, and re-anchored (one real clock read,
// by whichever thread notices first) every kRecalibrateNs of extrapolated
// time, so the error stays within a few microseconds; the collector's ticks
// are 10 ms. Otherwise (natively on ordinary hosts, x86-64 and AArch64
// alike) it is plain clock_gettime. (Under qemu-user, which has no vDSO for
// AArch64, a clock read is an emulated system call of 770-1030 ns and
// CNTVCT_EL0 125-180 ns: the counter.)
#ifndef RINGPROF_EMITTER_SAMPLE_CLOCK_H_
#define RINGPROF_EMITTER_SAMPLE_CLOCK_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

// Measures the clock once per process (later calls return at once).
void SampleClockInit();
uint64_t SampleClockNowNs();

// Whether a clock read measured at init left user space (a system call:
// arch::kSystemCallClockReadNs).
bool ClockReadIsSlow();

// For tests and diagnostics: whether timestamps come from the cycle counter,
// and the measured cost of one clock_gettime and one counter read at init
// (the latter 0 when not measured).
struct SampleClockInfo {
  bool counter = false;
  uint64_t clock_read_ns = 0;
  uint64_t counter_read_ns = 0;
};
SampleClockInfo GetSampleClockInfo();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SAMPLE_CLOCK_H_
